#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "report/report.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

/// Thrown for bad usage; main prints the one line and exits 2.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

void check_variants(const std::vector<std::string>& variants) {
  for (const auto& v : variants)
    if (!is_kernel_variant(v)) throw UsageError(fmt::format("unknown kernel variant '{}' (see normcheck list)", v));
}

void apply_shape_options(const RunOptions& o, RunConfig& cfg) {
  if (o.n && (*o.n < 1 || *o.n > (1 << 20)))
    throw UsageError(fmt::format("--n must be in [1, 1048576] (empty tensors are rejected), got {}", *o.n));
  if (o.rows && (*o.rows < 1 || *o.rows > (1 << 20)))
    throw UsageError(fmt::format("--rows must be in [1, 1048576] (empty tensors are rejected), got {}", *o.rows));
  if (o.max_elements && *o.max_elements < 1)
    throw UsageError(fmt::format("--max-elements must be >= 1, got {}", *o.max_elements));
  if (o.eps && !(*o.eps > 0 && std::isfinite(*o.eps)))
    throw UsageError(fmt::format("--eps must be finite and > 0, got {}", *o.eps));
  if (o.rows) cfg.shape.rows = *o.rows;
  if (o.n) cfg.shape.n = *o.n;
  if (o.max_elements) cfg.shape.max_elements = *o.max_elements;
  if (o.eps) cfg.eps_override = *o.eps;
}

RunConfig build_config(const RunOptions& o) {
  auto base = suite_config(o.suite);
  if (!base) throw UsageError(fmt::format("unknown suite '{}' (see normcheck list)", o.suite));
  RunConfig cfg = *base;
  try {
    if (!o.ops.empty()) cfg.ops = parse_names<Op>(o.ops, parse_op, "op");
    if (!o.dtypes.empty()) cfg.dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  check_variants(o.variants);
  cfg.variants = o.variants;
  if (!o.generators.empty()) {
    for (const auto& g : o.generators)
      if (!gen::is_row_generator(g)) throw UsageError(fmt::format("unknown generator '{}' (see normcheck list)", g));
    cfg.generators = o.generators;
  }
  if (o.seed) cfg.seed = *o.seed;
  if (o.cases) cfg.cases_per_generator = *o.cases;
  cfg.threads = o.threads;
  apply_shape_options(o, cfg);
  if (selected_kernels(cfg).empty()) throw UsageError("the selection contains no kernel");
  return cfg;
}

extern "C" void on_stop_signal(int) { stop_requested() = true; }

void install_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

/// Progress on stderr when it is a terminal; quiet otherwise (CI logs).
std::function<void(int64_t, int64_t)> progress_printer() {
  if (!isatty(STDERR_FILENO)) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start](int64_t done, int64_t planned) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = done > 0 ? s * static_cast<double>(planned - done) / static_cast<double>(done) : 0;
    std::fprintf(stderr, "\r%lld/%lld cases, %.0f s elapsed, ~%.0f s left   ", static_cast<long long>(done),
                 static_cast<long long>(planned), s, eta);
    if (done == planned) std::fprintf(stderr, "\n");
  };
}

void ensure_parent_dir(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

}  // namespace

int run_command(const RunOptions& o, const std::string& command_line) {
  install_signal_handlers();  // first, so that an early SIGTERM still ends in a report
  RunConfig cfg;
  try {
    cfg = build_config(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", e.what());
    return kExitBadInput;
  }
  ensure_parent_dir(o.out);
  cfg.journal_path = o.out + ".failures.jsonl";
  std::filesystem::remove(cfg.journal_path);
  RunMetadata meta{utc_now(), "", command_line};
  const RunResult result = run_suite(cfg, progress_printer());
  meta.end_time = utc_now();
  write_json_atomically(o.out, make_report(cfg, result, meta, o.out));
  if (!o.quiet) print_summary(result);
  const bool passed = run_passed(result);
  std::printf("report: %s (%s, %lld/%lld cases)%s\n", o.out.c_str(), passed ? "PASSED" : "FAILED",
              static_cast<long long>(result.cases_done), static_cast<long long>(result.cases_planned),
              result.interrupted ? " INCOMPLETE: interrupted" : "");
  if (!std::filesystem::exists(cfg.journal_path) || passed) std::filesystem::remove(cfg.journal_path);
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
