#!/usr/bin/env bash
# Sets up, builds and runs the default verification suite; writes reports/latest.json.
# Threads: NORMCHECK_THREADS (default: all cores; results do not depend on it). Extra arguments
# go to `normcheck run` (e.g. --dtypes f16,bf16).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec ./build/normcheck run --suite default --threads "${NORMCHECK_THREADS:-$(nproc)}" --out reports/latest.json "$@"
