// normcheck bench-external: the per-call cost of the ways an external kernel is called, measured
// side by side in one run (docs/plugins.md, "Calls per second"): the issue-7 baseline (a forked
// child per plugin call, a new process per exec call) against the persistent paths (plugin
// workers, serve mode), and what the invariance checks (docs/invariance.md) cost on that case through
// the persistent path: their calls and seconds against one call.
#include <cmath>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "external/child_process.hpp"
#include "external/exec.hpp"
#include "external/plugin.hpp"
#include "external/serve.hpp"
#include "generators/generators.hpp"
#include "suite/invariance.hpp"

namespace normcheck::cli {
namespace {

struct Timing {
  std::string path;
  int64_t calls = 0, failed = 0;
  double seconds = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(calls) / seconds : 0; }
};

/// Calls `kernel` on the case `calls` times (after one untimed warm-up call).
Timing time_calls(const std::string& path, const KernelEntry& kernel, const LayerNormCase& c, int64_t calls) {
  Timing t;
  t.path = path;
  kernel.run(c);
  const double start = external::monotonic_s();
  for (int64_t k = 0; k < calls; ++k) {
    const KernelOutputs out = kernel.run(c);
    if (!out.failure.empty() || out.skipped) ++t.failed;
  }
  t.seconds = external::monotonic_s() - start;
  t.calls = calls;
  return t;
}

const KernelEntry& entry_for(const std::vector<KernelEntry>& kernels, Op op, DType dt, const std::string& what) {
  for (const KernelEntry& k : kernels)
    if (k.op == op && k.storage == dt) return k;
  throw std::invalid_argument(fmt::format("{} does not support {} in {}", what, op_name(op), dtype_info(dt).name));
}

void print_pair(const Timing& base, const Timing& fast) {
  for (const Timing* t : {&base, &fast})
    std::printf("%-34s %8lld %9.3f %12.1f %10.1f %7lld\n", t->path.c_str(), static_cast<long long>(t->calls), t->seconds,
                t->per_second(), t->calls ? 1e6 * t->seconds / static_cast<double>(t->calls) : 0.0,
                static_cast<long long>(t->failed));
  std::printf("%-34s %s\n", "  ratio (calls/s)", fmt::format("{:.1f}x", fast.per_second() / base.per_second()).c_str());
}

/// The invariance checks of `run` on the bench's case through `kernel`, timed once against the mean
/// call of `one` (the same kernel's timed calls): their calls per case and their cost in calls.
/// Returns 1 when a call failed (the ratio is then not a cost).
int64_t print_invariance_cost(const KernelEntry& kernel, const LayerNormCase& c, const Timing& one) {
  const double start = external::monotonic_s();
  const InvarianceResult r = check_invariance(kernel, c);
  const double seconds = external::monotonic_s() - start;
  const double per_call = one.calls ? one.seconds / static_cast<double>(one.calls) : 0.0;
  std::printf("%-34s %8lld %9.3f %12s %10.1f %7s\n", ("  invariance checks, " + one.path.substr(0, one.path.find(',')) + " (case)").c_str(),
              static_cast<long long>(r.calls), seconds, "", 1e6 * seconds / static_cast<double>(std::max<int64_t>(r.calls, 1)),
              r.failure.empty() && !r.declined ? "0" : "1");
  std::printf("%-34s %s\n", "  cost against one call",
              fmt::format("{:.1f}x the time, {:.1f}x the rows ({} calls: the case's, {} repeats, {} other batch sizes{}, padded "
                          "with {} zero rows; verdict {})",
                          per_call > 0 ? seconds / per_call : 0.0, static_cast<double>(r.rows_called) / static_cast<double>(c.rows), r.calls,
                          InvarianceLimits{}.repeats, static_cast<int64_t>(r.batch_sizes.size()) - 1,
                          c.rows > 1 ? ", rotated" : "", r.padding_rows, r.verdict())
                  .c_str());
  return r.failure.empty() && !r.declined ? 0 : 1;
}

}  // namespace

int bench_external_command(const BenchOptions& o) {
  Op op;
  DType dt;
  try {
    op = parse_names<Op>({o.op}, parse_op, "op").at(0);
    dt = parse_names<DType>({o.dtype}, parse_dtype, "dtype", dtype_names()).at(0);
    if (o.plugin.empty() && o.exec.empty()) throw std::invalid_argument("give --kernel LIB and/or --exec CMD with --serve CMD");
    if (o.exec.empty() != o.serve.empty()) throw std::invalid_argument("--exec and --serve are measured together: give both");
    if (!(o.timeout > 0) || !std::isfinite(o.timeout)) throw std::invalid_argument("--kernel-timeout must be a finite number > 0");
    if (o.rows * o.n > (int64_t{1} << 24)) throw std::invalid_argument("--rows x --n must be at most 2^24 elements");
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  const LayerNormCase c = gen::make_layernorm_case("normal", dt, 2026, gen::ShapeRequest{o.rows, o.n, o.rows * o.n});
  std::printf("external call cost, %s %s, rows %lld, n %lld, one thread, one warm-up call each\n",
              std::string(op_name(op)).c_str(), std::string(dtype_info(dt).name).c_str(), static_cast<long long>(o.rows),
              static_cast<long long>(o.n));
  std::printf("%-34s %8s %9s %12s %10s %7s\n", "path", "calls", "seconds", "calls/s", "us/call", "failed");
  int64_t failed = 0;
  if (!o.plugin.empty()) {
    const external::PluginInfo info = external::inspect_plugin(o.plugin, o.timeout);
    const auto forked = external::plugin_kernels(info, external::PluginIsolation::fork_per_call);
    const auto workers = external::plugin_kernels(info, external::PluginIsolation::worker);
    const Timing base = time_calls("plugin, fork + dlopen per call", entry_for(forked, op, dt, o.plugin), c, o.baseline_calls);
    const Timing fast = time_calls("plugin, persistent worker", entry_for(workers, op, dt, o.plugin), c, o.calls);
    print_pair(base, fast);
    failed += base.failed + fast.failed + print_invariance_cost(entry_for(workers, op, dt, o.plugin), c, fast);
  }
  if (!o.exec.empty()) {
    const auto per_call = external::exec_kernels({o.exec, "bench", o.timeout}, {op}, {dt});
    const auto served = external::serve_kernels(std::make_shared<external::ServePool>(external::ExecSpec{o.serve, "bench", o.timeout}), {op}, {dt});
    const Timing base = time_calls("exec, a process per call", per_call.at(0), c, o.baseline_calls);
    const Timing fast = time_calls("serve, one process per worker", served.at(0), c, o.calls);
    print_pair(base, fast);
    failed += base.failed + fast.failed + print_invariance_cost(served.at(0), c, fast);
  }
  if (failed) std::fprintf(stderr, "normcheck: %lld calls failed or were skipped: the timings are not comparable\n", static_cast<long long>(failed));
  return failed ? kExitCheckFailed : kExitOk;
}

}  // namespace normcheck::cli
