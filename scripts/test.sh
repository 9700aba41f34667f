#!/usr/bin/env bash
# The test suite: set up, build, run every test (GPU tests skip cleanly where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
