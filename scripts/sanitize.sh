#!/usr/bin/env bash
# Builds normcheck with AddressSanitizer and UndefinedBehaviorSanitizer in ./build-asan and runs the
# test programs that fit CI: bad input and hostile files (test_hardening, test_sections, through the
# sanitized normcheck binary), the parsers (safetensors, corpus, ONNX), dtypes and rounding, the
# verdict logic, the lean MPFI type's pooled intervals (test_lean_interval), and the hostile-kernel and
# crafted-shard tests of issue 48 (serve sessions, plugins, merge: PROGRAM:FILTER runs only the tests
# the gtest filter names). The suites' long runs stay with the regular build. Any sanitizer report fails.
#   usage: scripts/sanitize.sh [TEST_PROGRAM[:GTEST_FILTER]...]
set -euo pipefail
cd "$(dirname "$0")/.."
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(test_hardening test_sections test_dtype test_safetensors test_rounding test_corpus test_onnx test_verdicts
  test_lean_interval "test_serve:Hostile.*:Serve.ProtocolViolations*" "test_plugins:HostilePlugins.*:Plugins.ACrash*:Plugins.AHang*"
  "test_nightly:Shards.MergeRefuses*")
# -O1 with line tables only: the sanitized build must fit CI on two cores (a full -O2 -g build took 14 min)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DNORMCHECK_SANITIZE=address,undefined >/dev/null
targets=()
for p in "${programs[@]}"; do targets+=("${p%%:*}"); done
# the test plugins the hostile-kernel tests load
plugins=(nc_plugin_good nc_plugin_crash nc_plugin_hang nc_plugin_grow_block nc_plugin_stderr_flood nc_plugin_escape)
cmake --build build-asan -j "$(nproc)" --target normcheck "${targets[@]}" "${plugins[@]}" >/dev/null
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for entry in "${programs[@]}"; do
  p="${entry%%:*}" filter="*"
  [ "$entry" = "$p" ] || filter="${entry#*:}"
  start=$(date +%s)
  # The crash plugin segfaults on purpose in its worker and the test checks that normcheck reports
  # "crashed with signal 11": ASan's SEGV handler would turn that into "exited with status 1", so
  # test_plugins runs with it off (memory errors are still caught by the instrumentation itself).
  segv=""
  [ "$p" != test_plugins ] || segv=":handle_segv=0"
  if (cd build-asan && ASAN_OPTIONS="$ASAN_OPTIONS$segv" UBSAN_OPTIONS="$UBSAN_OPTIONS$segv" "./$p" --gtest_brief=1 --gtest_filter="$filter" > "$p.log" 2>&1); then
    echo "sanitize: $p passed under ASan+UBSan ($(( $(date +%s) - start )) s)"
  else
    echo "sanitize: $p FAILED under ASan+UBSan (build-asan/$p.log):"
    grep -E "ERROR: AddressSanitizer|runtime error|FAILED|Failure" "build-asan/$p.log" | head -10
    status=1
  fi
done
exit $status
