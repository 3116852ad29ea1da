#!/usr/bin/env bash
# Configures and builds normcheck in ./build (Release, all cores). When the Python module was built,
# points Debian's python3 at build/python with a .pth file in its site directory (so that
# `/usr/bin/python3 -c "import normcheck"` works from anywhere; docs/python.md), or prints the
# PYTHONPATH line to use when that directory is not writable.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
if compgen -G "build/python/normcheck/_normcheck*.so" >/dev/null; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2>/dev/null && echo "$PWD/build/python" > "$site/normcheck-build.pth" 2>/dev/null; then
    echo "build: python3 imports normcheck from $PWD/build/python ($site/normcheck-build.pth)"
  else
    echo "build: for the Python module: export PYTHONPATH=$PWD/build/python"
  fi
fi
