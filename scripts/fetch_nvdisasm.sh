#!/usr/bin/env bash
# Prints the path of an nvdisasm for ops_wgmma_sass_test, which checks that the wgmma kernels'
# SASS runs HGMMA / IGMMA and TMA loads. CUDA's disassembler is not in Debian's toolkit, so:
# $TUNEJIT_NVDISASM, else one on PATH, else PyPI's nvidia-cuda-nvdisasm wheel, downloaded once
# into build/tools/ (a test tool, not a build input). Prints nothing when none can be had
# (offline, no pip): the SASS tests then skip.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TUNEJIT_NVDISASM:-}" ]; then echo "$TUNEJIT_NVDISASM"; exit 0; fi
if command -v nvdisasm > /dev/null 2>&1; then command -v nvdisasm; exit 0; fi
dir=build/tools/nvdisasm
find_tool() { find "$dir" -name nvdisasm -type f 2> /dev/null | head -1; }
tool=$(find_tool)
if [ -z "$tool" ]; then
  mkdir -p "$dir"
  # The version the SASS check was written against (it reads NVRTC 13's sm_90a cubins).
  if timeout 180 python3 -m pip download --no-deps -q --dest "$dir" \
    nvidia-cuda-nvdisasm==13.5.37 > /dev/null 2>&1; then
    for wheel in "$dir"/*.whl; do python3 -m zipfile -e "$wheel" "$dir/unpacked" > /dev/null 2>&1; done
  fi
  tool=$(find_tool)
fi
if [ -n "$tool" ]; then
  chmod +x "$tool"
  echo "$(pwd)/$tool"
fi
exit 0
