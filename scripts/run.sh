#!/usr/bin/env bash
# Sets up, builds and runs the default verification suite; writes reports/latest.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec ./build/normcheck run --suite default --out reports/latest.json "$@"
