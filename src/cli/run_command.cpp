#include <unistd.h>

#include <algorithm>
#include <memory>
#include <queue>
#include <numeric>
#include <cmath>
#include <chrono>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <thread>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/op_kernels.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "external/plugin.hpp"
#include "external/serve.hpp"
#include "report/report.hpp"
#include "sections/section.hpp"
#include "suite/suites.hpp"
#include "report/ci_output.hpp"
#include "core/suggest.hpp"
#include "kernels/block_registry.hpp"
#include "kernels/jvp_registry.hpp"
#include "kernels/registry.hpp"
#include "nightly/diff.hpp"
#include "nightly/diff_outputs.hpp"
#include "nightly/unit_costs.hpp"
#include "report/schema_check.hpp"
#include "suite/unit_timing.hpp"

namespace normcheck::cli {
namespace {

using sections::PlanError;

void apply_shape_options(const RunOptions& o, RunConfig& cfg) {
  if (o.n && (*o.n < 1 || *o.n > (1 << 20)))
    throw PlanError(fmt::format("--n must be in [1, 1048576] (empty tensors are rejected), got {}", *o.n));
  if (o.rows && (*o.rows < 1 || *o.rows > (1 << 20)))
    throw PlanError(fmt::format("--rows must be in [1, 1048576] (empty tensors are rejected), got {}", *o.rows));
  if (o.max_elements && (*o.max_elements < 1 || *o.max_elements > kMaxCaseElements))
    throw PlanError(fmt::format("--max-elements must be in [1, {}], got {}", kMaxCaseElements, *o.max_elements));
  if (o.rows && o.n && !case_elements(*o.rows, *o.n))
    throw PlanError(fmt::format("--rows {} x --n {} exceeds {} elements per case", *o.rows, *o.n, kMaxCaseElements));
  if (o.eps && !(*o.eps > 0 && std::isfinite(*o.eps)))
    throw PlanError(fmt::format("--eps must be finite and > 0, got {}", *o.eps));
  if (o.rows) cfg.shape.rows = *o.rows;
  if (o.n) cfg.shape.n = *o.n;
  if (o.max_elements) cfg.shape.max_elements = *o.max_elements;
  if (o.eps) cfg.eps_override = *o.eps;
}

/// The sections a run plans (registry order), the external kernels they share, and the report's
/// `config` (the per-op section's, or the common one with no per-op ops).
struct RunPlan {
  std::vector<std::unique_ptr<sections::SectionRun>> sections;
  RunConfig header;
  ExternalSpecs external;
  int64_t units = 0;  ///< shard units of every section together
};

/// Parses "i/N" (0 <= i < N <= 100000).
ShardSpec parse_shard(const std::string& text) {
  ShardSpec s;
  if (text.empty()) return s;
  const auto slash = text.find('/');
  const auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 6 || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw PlanError(fmt::format("--shard takes i/N with 0 <= i < N <= 100000, got '{}'", text));
    return std::stoi(t);
  };
  if (slash == std::string::npos) number("");
  s.index = number(text.substr(0, slash));
  s.count = number(text.substr(slash + 1));
  if (s.count < 1 || s.count > kMaxShards || s.index >= s.count)
    throw PlanError(fmt::format("--shard takes i/N with 0 <= i < N <= 100000, got '{}'", text));
  return s;
}

/// The shard of every global unit: longest estimated cost first, each to the least loaded shard
/// (ties: the lower shard), so that shards take about equal time (LPT scheduling; docs/nightly.md).
std::vector<int> balanced_owners(const std::vector<double>& costs, int shards) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  using Load = std::pair<double, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> load;
  for (int i = 0; i < shards; ++i) load.push({0.0, i});
  std::vector<int> owner(costs.size(), 0);
  for (size_t u : order) {
    auto [total, shard] = load.top();
    load.pop();
    owner[u] = shard;
    load.push({total + costs[u], shard});
  }
  return owner;
}

/// Numbers the shard units of every section one after the other, balances them over the shards by
/// estimated cost (or by the seconds the --balance-from report measured), and gives each section its slice.
void assign_shards(RunPlan& plan, ShardSpec s, const std::string& balance_from) {
  plan.units = 0;
  for (const auto& section : plan.sections) plan.units += section->shard_units();
  if (!balance_from.empty() && !s.sharded()) throw PlanError("--balance-from balances shards: it needs --shard i/N with N > 1");
  if (s.sharded()) {
    std::vector<double> costs;
    for (const auto& section : plan.sections) {
      const std::vector<double> c = section->unit_costs();
      costs.insert(costs.end(), c.begin(), c.end());
    }
    if (!balance_from.empty()) {
      try {
        costs = nightly::measured_or_estimated(costs, nightly::unit_seconds_from_report(balance_from, plan.units));
      } catch (const std::invalid_argument& e) {
        throw PlanError(e.what());
      }
      s.measured_balance = true;
    }
    s.owner = std::make_shared<const std::vector<int>>(balanced_owners(costs, s.count));
    s.owner_digest = nightly::owner_digest(*s.owner);
  }
  int64_t unit = 0;
  for (const auto& section : plan.sections) {
    s.first_unit = unit;
    section->set_shard(s);
    unit += section->shard_units();
  }
  plan.header.shard = s;
}

/// Every op name --ops accepts, for suggestions.
std::vector<std::string> all_op_names() {
  std::vector<std::string> out;
  for (const sections::Section* s : sections::registry())
    for (std::string_view op : s->ops()) out.emplace_back(op);
  return out;
}

/// Every kernel variant --kernels accepts (per-op, block, JVP), for suggestions.
std::vector<std::string> all_variant_names() {
  std::vector<std::string> out;
  for (const KernelEntry& k : builtin_kernels()) out.push_back(k.variant);
  for (const BlockKernelEntry& k : builtin_block_kernels()) out.push_back(k.variant);
  for (const JvpKernelInfo& k : jvp_kernels()) out.push_back(k.name);
  return out;
}

/// The suite's configuration with the options every section shares: dtypes, seed, threads, shape.
RunConfig common_config(const RunOptions& o, RunConfig cfg) {
  for (const std::string& op : o.ops)
    if (sections::section_by_op(op) == nullptr)
      throw PlanError(fmt::format("unknown op '{}'{} (see normcheck list)", op, did_you_mean(op, all_op_names())));
  try {
    if (!o.dtypes.empty()) cfg.dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
  } catch (const std::invalid_argument& e) {
    throw PlanError(e.what());
  }
  if (o.seed) cfg.seed = *o.seed;
  cfg.threads = o.threads;
  apply_shape_options(o, cfg);
  return cfg;
}

void check_variants(const std::vector<std::string>& variants) {
  for (const std::string& v : variants) {
    const auto& all = sections::registry();
    if (std::none_of(all.begin(), all.end(), [&](const sections::Section* s) { return s->knows_variant(v); }))
      throw PlanError(fmt::format("unknown kernel variant '{}'{} (see normcheck list)", v, did_you_mean(v, all_variant_names())));
  }
}

/// The external kernels of --kernel, --exec and --serve: plugins inspected in a worker process, one
/// serve pool for every section (one long-running process per thread, whatever ops it serves).
sections::ExternalKernels external_kernels(const RunOptions& o) {
  if (!o.variants.empty()) throw PlanError("--kernels selects built-in kernels; with --kernel, --exec or --serve only those run");
  for (const char ch : o.exec_name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') throw PlanError("--exec-name takes letters, digits and '_'");
  if (!(o.serve_startup_timeout > 0) || !std::isfinite(o.serve_startup_timeout))
    throw PlanError(fmt::format("--serve-startup-timeout must be a finite number > 0, got {}", o.serve_startup_timeout));
  if (!(o.kernel_timeout > 0) || !std::isfinite(o.kernel_timeout))
    throw PlanError(fmt::format("--kernel-timeout must be a finite number > 0, got {}", o.kernel_timeout));
  sections::ExternalKernels ext;
  for (const std::string& path : o.plugins) {
    try {
      ext.plugins.push_back(external::inspect_plugin(path, o.kernel_timeout, o.serve_startup_timeout));
    } catch (const std::runtime_error& e) {
      throw PlanError(e.what());
    }
  }
  if (!o.serve.empty())
    ext.serve = std::make_shared<external::ServePool>(external::ExecSpec{o.serve, o.exec_name, o.kernel_timeout, o.serve_startup_timeout});
  // as dlopen found them: a path with a '/' made absolute (replay from another folder), a bare name as
  // given (dlopen searches the library path for it again)
  for (const std::string& path : o.plugins)
    ext.specs.plugins.push_back(path.find('/') == std::string::npos ? path : std::filesystem::absolute(path).string());
  ext.specs.exec = o.exec;
  ext.specs.serve = o.serve;
  ext.specs.name = o.exec_name;
  ext.specs.timeout_s = o.kernel_timeout;
  ext.specs.serve_startup_s = o.serve_startup_timeout;
  ext.specs.block_form = o.block_form;
  ext.specs.contract = o.contract;
  return ext;
}

/// Every section the options select. With --kernel, --exec or --serve only the external kernels run,
/// in the sections and dtypes they support.
RunPlan build_plan(const RunOptions& o) {
  auto suite = suite_config(o.suite);
  if (!suite) {
    std::vector<std::string> names;
    for (const SuiteDef& s : suites()) names.emplace_back(s.name);
    throw PlanError(fmt::format("unknown suite '{}'{} (see normcheck suites)", o.suite, did_you_mean(o.suite, names)));
  }
  const RunConfig common = common_config(o, *suite);
  const bool external = !o.plugins.empty() || !o.exec.empty() || !o.serve.empty();
  if (!external) check_variants(o.variants);
  if (!external && !o.contract.empty())
    throw PlanError("--contract chooses how external kernels (--kernel, --exec, --serve) are judged; the built-in kernels have their own bounds");
  std::optional<sections::ExternalKernels> ext;
  if (external) ext = external_kernels(o);
  const sections::PlanInputs in{o, common, ext ? &*ext : nullptr};
  RunPlan plan;
  for (const sections::Section* s : sections::registry())
    if (std::unique_ptr<sections::SectionRun> run = s->plan(in)) plan.sections.push_back(std::move(run));
  if (plan.sections.empty())
    throw PlanError(external ? "the external kernels support none of the selected ops and dtypes" : "the selection contains no kernel");
  plan.header = common;
  plan.header.ops.clear();
  for (const auto& s : plan.sections)
    if (const RunConfig* cfg = s->run_config()) plan.header = *cfg;
  plan.external = ext ? ext->specs : ExternalSpecs{};
  plan.header.external = plan.external;
  assign_shards(plan, parse_shard(o.shard), o.balance_from);
  return plan;
}

extern "C" void on_stop_signal(int) { stop_requested() = true; }

void install_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

/// Prints the progress line on stderr twice a second while a run goes on, when stderr is a
/// terminal; otherwise (a CI log) one full line every `every_s` seconds (none when 0 or quiet), so
/// that a long run is not silent for minutes.
class ProgressLine {
 public:
  ProgressLine(int64_t planned, double every_s, bool quiet) : planned_(planned), terminal_(isatty(STDERR_FILENO) != 0), every_s_(every_s) {
    if (terminal_ || (every_s > 0 && !quiet)) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressLine() {
    finished_ = true;
    if (thread_.joinable()) {
      thread_.join();
      if (terminal_) {
        print();
        std::fprintf(stderr, "\n");
      }
    }
  }

 private:
  void loop() {
    double since = 0;
    while (!finished_) {
      if (terminal_) print();
      for (int i = 0; i < 5 && !finished_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      since += 0.5;
      if (!terminal_ && since >= every_s_ && !finished_) {
        print();
        since = 0;
      }
    }
  }
  void print() const {
    const int64_t done = progress_counters().done, failing = progress_counters().failing;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = done > 0 ? s * static_cast<double>(planned_ - done) / static_cast<double>(done) : 0;
    std::fprintf(stderr, "%s%lld/%lld cases, %lld failing a must-pass kernel, %.0f s elapsed, ~%.0f s left%s%s",
                 terminal_ ? "\r" : "progress: ", static_cast<long long>(done), static_cast<long long>(planned_),
                 static_cast<long long>(failing), s, eta, stop_requested() ? " (stopping: finishing the cases in flight)" : "",
                 terminal_ ? "   " : "\n");
    if (!terminal_) std::fflush(stderr);
  }
  int64_t planned_;
  bool terminal_;
  double every_s_;
  std::atomic<bool> finished_{false};
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

}  // namespace

/// The options with the suite's own op selection where --ops was not given (a suite of one family).
RunOptions with_suite_defaults(const RunOptions& given) {
  RunOptions o = given;
  if (o.out.empty()) o.out = kDefaultReport;
  if (const SuiteDef* s = find_suite(o.suite); s && o.ops.empty()) o.ops.assign(s->ops.begin(), s->ops.end());
  return o;
}

int run_command(const RunOptions& given, const std::string& command_line) {
  install_signal_handlers();  // first, so that an early SIGTERM still ends in a report
  const RunOptions o = with_suite_defaults(given);
  RunPlan plan;
  try {
    plan = build_plan(o);
  } catch (const PlanError& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  std::optional<nlohmann::json> base;  // --diff: read before the suite, compared after it
  try {
    check_writable(o.out);  // before the suite, not after it
    if (!o.junit.empty()) check_writable(o.junit);
    if (o.allow_removed && o.diff.empty()) throw std::invalid_argument("--allow-removed needs --diff BASE");
    if (!o.diff.empty()) base = read_report_file(o.diff);
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  if (given.out.empty()) announce_default_output(o.out);
  const std::string journal = o.out + ".failures.jsonl";
  std::filesystem::remove(journal);
  RunMetadata meta{utc_now(), "", command_line};
  int64_t planned = 0;
  for (const auto& s : plan.sections) planned += s->planned_cases();
  std::optional<ProgressLine> progress_line(std::in_place, planned, o.progress_every, o.quiet);
  for (const auto& s : plan.sections)
    if (!stop_requested()) s->run(journal);
  progress_line.reset();
  meta.end_time = utc_now();
  nlohmann::json report = report_header(plan.header, meta);
  for (const sections::Section* s : sections::registry())
    if (s->key() != "records") report[std::string(s->key())] = nullptr;
  bool passed = true, complete = true;
  int64_t judged_external = 0;
  for (const auto& s : plan.sections) {
    s->write(report, o.out);
    passed = passed && s->passed();
    complete = complete && s->complete();
    judged_external += s->judged_external_elements();
  }
  // An external kernel that declined every call (unsupported) verified nothing: that is not a pass.
  const bool declined_everything = plan.external.any() && judged_external == 0;
  passed = passed && !declined_everything;
  report["run"]["passed"] = passed;
  report["run"]["complete"] = complete;
  report["run"]["unit_seconds"] = nightly::unit_seconds_json(measured_unit_seconds(plan.units));
  write_json_atomically(o.out, report);
  std::optional<nightly::DiffResult> diff;
  if (base) {
    nightly::DiffThresholds t;
    t.allow_removed = o.allow_removed;
    try {
      diff = nightly::diff_reports(*base, report, t, /*force=*/false);
    } catch (const std::exception& e) {
      print_error(std::string("--diff '") + o.diff + "': " + e.what() + " (the report is written: " + o.out + ")");
      return kExitBadInput;
    }
  }
  if (!o.junit.empty())
    write_file_atomically(o.junit, junit_xml(report, diff ? std::vector<JunitSuite>{nightly::diff_junit_suite(*diff, o.diff)}
                                                          : std::vector<JunitSuite>{}));
  if (!o.quiet) {
    for (const auto& s : plan.sections) s->print_summary();
    std::fputs(failing_records_text(report, o.verbose ? SIZE_MAX : kExplainedFailures).c_str(), stdout);
  }
  if (declined_everything)
    std::printf("the external kernels declined every call (unsupported) or none was judged: nothing was verified\n");
  std::fputs(run_result_text(report, o.out).c_str(), stdout);
  if (!std::filesystem::exists(journal) || passed) std::filesystem::remove(journal);
  if (diff) std::printf("against %s: %s\n", o.diff.c_str(), diff->verdict_line().c_str());
  if (o.summary_json)
    std::printf("%s\n", (diff ? nightly::summary_line_with_diff(report, o.out, *diff) : summary_line(report, o.out)).dump().c_str());
  return passed && (!diff || diff->passed()) ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
