#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite through CTest, then the sanitizer subset and a
# short run of every fuzz target. Each stage prints its wall time ("test.sh: <stage> took N s"),
# so a CI log shows where its budget (40 minutes on 2 cores) goes.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s" >&2
}
stage setup bash scripts/setup.sh
stage build bash scripts/build.sh
stage ctest bash -c 'cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900'
stage sanitize bash scripts/sanitize.sh   # ASan + UBSan on the bad-input, parser and verdict tests (docs/fuzzing.md)
stage fuzz bash scripts/fuzz.sh 15        # every libFuzzer target for 15 s from its seeds (CI stays under 40 min on 2 cores)
