#!/usr/bin/env bash
# Configures and builds tunejit into build/ (Release with debug info). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc "$@" >/dev/null
cmake --build build -j"$(nproc)"
