#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite through CTest, then the sanitizer subset and a
# short run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
bash scripts/sanitize.sh   # ASan + UBSan on the bad-input, parser and verdict tests (docs/fuzzing.md)
bash scripts/fuzz.sh 15    # every libFuzzer target for 15 s from its seeds (CI stays under 40 min on 2 cores)
