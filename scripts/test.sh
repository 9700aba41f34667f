#!/usr/bin/env bash
# The test suite: set up, build, run every test (GPU tests skip cleanly where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The SASS check of the tensor-core kernels needs nvdisasm (best effort: it skips without one).
nvdisasm=$(scripts/fetch_nvdisasm.sh)
if [ -n "$nvdisasm" ]; then export TUNEJIT_NVDISASM=$nvdisasm; fi
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
