#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; fuzz/CMakeLists.txt) in ./build-fuzz and runs
# each for SECONDS (default 20) on a copy of its committed seed corpus (fuzz/corpus/<target>) with
# its dictionary (fuzz/dicts). Exit 1 when a target crashes, leaks or trips a sanitizer: the
# reproducer is kept under build-fuzz/findings/<target>/. Prints executions and coverage per target.
#   usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
case "$seconds" in ''|*[!0-9]*) echo "scripts/fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors npy report_json corpus onnx serve_reply cli module_graph serve_session shard_merge history)
# fuzz_shard_merge and fuzz_history link the regular build's libraries (fuzz/CMakeLists.txt): built
# here when absent (a no-op after scripts/build.sh or scripts/test.sh)
[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target normcheck_lib normcheck_oracles >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DNORMCHECK_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNORMCHECK_HOST_BUILD="$PWD/build" >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
status=0
for t in "${targets[@]}"; do
  bin="build-fuzz/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "scripts/fuzz.sh: no target '$t'" >&2; exit 2; }
  work="build-fuzz/corpus/$t" findings="build-fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  cp -n fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  dict=()
  [ -f "fuzz/dicts/$t.dict" ] && dict=(-dict="fuzz/dicts/$t.dict")
  log="build-fuzz/fuzz_$t.log"
  if "$bin" "$work" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
    echo "fuzz_$t: ${runs} executions in ${seconds} s, coverage ${cov} edges, no finding"
  else
    echo "fuzz_$t: FINDING (see $log and $findings/)"
    grep -E "ERROR|runtime error|SUMMARY" "$log" | head -5
    status=1
  fi
done
exit $status
