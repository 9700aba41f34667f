#!/usr/bin/env bash
# Installs what building tunejit needs on a fresh Debian 12 machine that has the CUDA 13 toolkit in
# /usr/local/cuda (as the project's machines do). Idempotent: skips apt when everything is present.
set -euo pipefail
packages=(cmake ninja-build g++ libabsl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libssl-dev
          libxgboost-dev libonnx-dev libprotobuf-dev clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: the CUDA toolkit (nvcc, NVRTC) was not found in /usr/local/cuda; install CUDA 12+ first" >&2
  exit 1
fi
