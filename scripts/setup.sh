#!/usr/bin/env bash
# Installs normcheck's build and test dependencies from Debian's repositories.
# Idempotent: installs only what is missing; a second run changes nothing.
set -euo pipefail
packages=(
  g++ cmake make pkg-config
  clang libclang-rt-14-dev
  libboost-dev libmpfr-dev libmpfi-dev libgmp-dev
  libeigen3-dev librapidcheck-dev nlohmann-json3-dev
  libcli11-dev libfmt-dev libgtest-dev libsqlite3-dev
  libonnx-testdata python3-jsonschema python3-numpy python3-torch
  python3-dev pybind11-dev python3-pytest python3-hypothesis
  chromium groff-base man-db bash-completion parallel slurm-wlm munge
  libdnnl-dev ocl-icd-opencl-dev libtorch-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
