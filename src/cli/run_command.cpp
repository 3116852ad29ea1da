#include <unistd.h>

#include <algorithm>
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

#include "audit/audit_report.hpp"
#include "external/exec.hpp"
#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve.hpp"
#include "external/serve_block.hpp"
#include "external/serve_grouped.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "properties/block_generators.hpp"
#include "properties/contraction_generators.hpp"
#include "report/block_report.hpp"
#include "report/contraction_report.hpp"
#include "report/report.hpp"
#include "suite/grouped_suite.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

/// Thrown for bad usage; main prints the one line and exits 2.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

constexpr const char* kBlockOp = "linear_rmsnorm";
constexpr const char* kContractionOp = "qr_contraction";
constexpr const char* kAuditOp = "axis_audit";
constexpr const char* kGroupedOp = "grouped_norm";
constexpr const char* kBudgetOp = "port_hamiltonian";

bool is_block_variant(const std::string& v) {
  const auto& t = builtin_block_kernels();
  return std::any_of(t.begin(), t.end(), [&](const BlockKernelEntry& k) { return k.variant == v; });
}

void check_variants(const std::vector<std::string>& variants) {
  for (const auto& v : variants)
    if (!is_kernel_variant(v) && !is_block_variant(v))
      throw UsageError(fmt::format("unknown kernel variant '{}' (see normcheck list)", v));
}

template <class Pred>
std::vector<std::string> only(const std::vector<std::string>& v, Pred keep) {
  std::vector<std::string> out;
  std::copy_if(v.begin(), v.end(), std::back_inserter(out), keep);
  return out;
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

/// The selected parts of a run: the per-op kernel suite, the Linear o RMSNorm block suite, the
/// QR-contraction suite, the axis audits and the grouped-normalization suite.
struct RunPlan {
  std::optional<RunConfig> ops;
  std::optional<BlockSuiteConfig> block;
  std::optional<ContractionSuiteConfig> contraction;
  bool axis_audit = false;
  std::optional<GroupedSuiteConfig> grouped;
  ShardSpec audit_shard;  ///< the axis audits are one unit
  std::optional<BudgetSuiteConfig> budget;  ///< the port-Hamiltonian stream (issue 9)
  ExternalSpecs external;                   ///< the external kernels of any section (reported for replay)
};

/// Parses "i/N" (0 <= i < N <= 100000).
ShardSpec parse_shard(const std::string& text) {
  ShardSpec s;
  if (text.empty()) return s;
  const auto slash = text.find('/');
  const auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 6 || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw UsageError(fmt::format("--shard takes i/N with 0 <= i < N <= 100000, got '{}'", text));
    return std::stoi(t);
  };
  if (slash == std::string::npos) number("");
  s.index = number(text.substr(0, slash));
  s.count = number(text.substr(slash + 1));
  if (s.count < 1 || s.count > 100000 || s.index >= s.count)
    throw UsageError(fmt::format("--shard takes i/N with 0 <= i < N <= 100000, got '{}'", text));
  return s;
}

/// Numbers the units of every section one after the other (per-op: dtype x generator; block,
/// contraction, grouped, port-Hamiltonian: dtype; the axis audits: one) and gives each section its slice.
void assign_shards(RunPlan& plan, ShardSpec s) {
  int64_t unit = 0;
  const auto next = [&](int64_t units) {
    ShardSpec t = s;
    t.first_unit = unit;
    unit += units;
    return t;
  };
  if (plan.ops) plan.ops->shard = next(static_cast<int64_t>(plan.ops->dtypes.size() * plan.ops->generators.size()));
  if (plan.block) plan.block->shard = next(static_cast<int64_t>(plan.block->dtypes.size()));
  if (plan.contraction) plan.contraction->shard = next(static_cast<int64_t>(plan.contraction->dtypes.size()));
  if (plan.grouped) plan.grouped->shard = next(static_cast<int64_t>(plan.grouped->dtypes.size()));
  if (plan.budget) plan.budget->shard = next(static_cast<int64_t>(plan.budget->dtypes.size()));
  plan.audit_shard = next(1);
}


RunConfig build_ops_config(const RunOptions& o, RunConfig cfg, const std::vector<std::string>& ops) {
  try {
    if (!ops.empty()) cfg.ops = parse_names<Op>(ops, parse_op, "op");
    if (!o.dtypes.empty()) cfg.dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  cfg.variants = only(o.variants, [](const std::string& v) { return is_kernel_variant(v); });
  if (!o.generators.empty()) {
    for (const auto& g : o.generators)
      if (!gen::is_row_generator(g)) throw UsageError(fmt::format("unknown generator '{}' (see normcheck list)", g));
    cfg.generators = o.generators;
  }
  if (o.seed) cfg.seed = *o.seed;
  if (o.cases) cfg.cases_per_generator = *o.cases;
  cfg.threads = o.threads;
  apply_shape_options(o, cfg);
  return cfg;
}

BlockSuiteConfig build_block_config(const RunOptions& o, BlockSuiteConfig cfg, const RunConfig& ops_cfg) {
  cfg.dtypes = ops_cfg.dtypes;
  cfg.variants = only(o.variants, is_block_variant);
  if (!o.block_generators.empty()) {
    for (const auto& g : o.block_generators)
      if (!gen::is_block_generator(g))
        throw UsageError(fmt::format("unknown block generator '{}' (see normcheck list)", g));
    cfg.generators = o.block_generators;
  }
  if (o.seed) cfg.seed = *o.seed;
  if (o.block_cases) cfg.cases_per_generator = *o.block_cases;
  cfg.threads = o.threads;
  return cfg;
}

ContractionSuiteConfig build_contraction_config(const RunOptions& o, ContractionSuiteConfig cfg, const RunConfig& ops_cfg) {
  cfg.dtypes = ops_cfg.dtypes;
  if (!o.contraction_generators.empty()) {
    for (const auto& g : o.contraction_generators)
      if (!gen::is_contraction_generator(g))
        throw UsageError(fmt::format("unknown contraction generator '{}' (see normcheck list)", g));
    cfg.generators = o.contraction_generators;
  }
  if (o.seed) cfg.seed = *o.seed;
  if (o.contraction_cases) cfg.cases_per_generator = *o.contraction_cases;
  cfg.threads = o.threads;
  return cfg;
}

RunConfig build_ops_config(const RunOptions& o, RunConfig cfg, const std::vector<std::string>& ops);

/// The plugins named with --kernel, each inspected in a worker process.
std::vector<external::PluginInfo> inspect_plugins(const RunOptions& o) {
  if (!(o.kernel_timeout > 0) || !std::isfinite(o.kernel_timeout))
    throw UsageError(fmt::format("--kernel-timeout must be a finite number > 0, got {}", o.kernel_timeout));
  std::vector<external::PluginInfo> out;
  for (const std::string& path : o.plugins) {
    try {
      out.push_back(external::inspect_plugin(path, o.kernel_timeout, o.serve_startup_timeout));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  return out;
}

bool names_op(const RunOptions& o, const char* op) { return std::find(o.ops.begin(), o.ops.end(), op) != o.ops.end(); }

/// The external grouped-norm kernel: an ABI v2 plugin's or the serve command's (one at a time).
std::optional<GroupedExternalKernel> external_grouped(const RunOptions& o, const std::vector<external::PluginInfo>& plugins,
                                                      const std::shared_ptr<external::ServePool>& serve) {
  if (!(o.ops.empty() || names_op(o, kGroupedOp))) return std::nullopt;
  std::vector<GroupedExternalKernel> found;
  for (const external::PluginInfo& p : plugins)
    if (!p.grouped_dtypes.empty()) found.push_back({"plugin:" + p.name, external::plugin_grouped_kernel(p), o.report_only});
  if (serve) found.push_back({"serve:" + o.exec_name, external::serve_grouped_kernel(serve), o.report_only});
  if (found.size() > 1) throw UsageError("more than one external grouped-norm kernel (plugins, --serve): judge one at a time");
  if (names_op(o, kGroupedOp) && found.empty())
    throw UsageError("--ops grouped_norm: no external kernel implements it (an ABI v2 plugin with NC_GROUPED_NORM, or --serve)");
  if (found.empty()) return std::nullopt;
  return found.front();
}

/// The external block kernels: ABI v2 plugins' (their declared form) and, with --ops linear_rmsnorm,
/// the serve command's (--block-form).
std::vector<BlockKernelEntry> external_blocks(const RunOptions& o, const std::vector<external::PluginInfo>& plugins,
                                              const std::shared_ptr<external::ServePool>& serve, const std::vector<DType>& dtypes) {
  const bool named = names_op(o, kBlockOp);
  if (!o.block_form.empty() && (!named || o.serve.empty())) throw UsageError("--block-form is for --serve with --ops linear_rmsnorm");
  std::vector<BlockKernelEntry> out;
  if (!o.ops.empty() && !named) return out;
  for (const external::PluginInfo& p : plugins)
    for (BlockKernelEntry& k : external::plugin_block_kernels(p))
      if (std::find(dtypes.begin(), dtypes.end(), k.storage) != dtypes.end()) out.push_back(std::move(k));
  if (named && serve) {
    if (o.block_form != "composed" && o.block_form != "deferred")
      throw UsageError("--ops linear_rmsnorm with --serve needs --block-form composed or --block-form deferred: the form your "
                       "kernel computes chooses its bound (docs/bounds.md section 11)");
    for (BlockKernelEntry& k : external::serve_block_kernels(serve, o.block_form, dtypes)) out.push_back(std::move(k));
  }
  if (named && out.empty())
    throw UsageError("--ops linear_rmsnorm: no external kernel implements it (an ABI v2 plugin with NC_LINEAR_RMSNORM, or --serve)");
  return out;
}

/// With --kernel, --exec or --serve only the external kernels run (on the ops and dtypes they
/// support): the per-op suite, and the grouped and block suites for ABI v2 plugins and serve mode.
RunPlan plugin_plan(const RunOptions& o, const RunConfig& base) {
  if (!o.variants.empty()) throw UsageError("--kernels selects built-in kernels; with --kernel, --exec or --serve only those run");
  for (const char ch : o.exec_name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') throw UsageError("--exec-name takes letters, digits and '_'");
  for (const std::string& op : o.ops)
    if (op == kContractionOp || op == kAuditOp || op == kBudgetOp)
      throw UsageError(fmt::format("--ops {} judges built-in kernels only (not in the plugin ABI or serve protocol yet)", op));
  if (!(o.serve_startup_timeout > 0) || !std::isfinite(o.serve_startup_timeout))
    throw UsageError(fmt::format("--serve-startup-timeout must be a finite number > 0, got {}", o.serve_startup_timeout));
  const std::vector<std::string> per_op = only(o.ops, [](const std::string& op) { return op != kGroupedOp && op != kBlockOp; });
  RunPlan plan;
  RunConfig cfg = build_ops_config(o, base, per_op);
  cfg.builtin = false;
  const std::vector<external::PluginInfo> plugins = inspect_plugins(o);
  for (const external::PluginInfo& p : plugins)
    for (KernelEntry& k : external::plugin_kernels(p)) cfg.extra_kernels.push_back(std::move(k));
  if (!o.exec.empty())
    for (KernelEntry& k : external::exec_kernels({o.exec, o.exec_name, o.kernel_timeout}, cfg.ops, cfg.dtypes))
      cfg.extra_kernels.push_back(std::move(k));
  // one pool for every section: one long-running process per thread, whatever ops it serves
  const std::shared_ptr<external::ServePool> serve =
      o.serve.empty() ? nullptr
                      : std::make_shared<external::ServePool>(external::ExecSpec{o.serve, o.exec_name, o.kernel_timeout, o.serve_startup_timeout});
  if (serve)
    for (KernelEntry& k : external::serve_kernels(serve, cfg.ops, cfg.dtypes)) cfg.extra_kernels.push_back(std::move(k));
  cfg.external_report_only = o.report_only;
  // as dlopen found them: a path with a '/' made absolute (replay from another folder), a bare name as
  // given (dlopen searches the library path for it again)
  for (const std::string& path : o.plugins)
    cfg.external.plugins.push_back(path.find('/') == std::string::npos ? path : std::filesystem::absolute(path).string());
  cfg.external.exec = o.exec;
  cfg.external.serve = o.serve;
  cfg.external.name = o.exec_name;
  cfg.external.timeout_s = o.kernel_timeout;
  cfg.external.serve_startup_s = o.serve_startup_timeout;
  cfg.external.block_form = o.block_form;
  plan.external = cfg.external;
  if ((o.ops.empty() || !per_op.empty()) && !selected_kernels(cfg).empty()) plan.ops = cfg;
  if (!per_op.empty() && !plan.ops)
    throw UsageError(fmt::format("the external kernels implement none of --ops {} in the selected dtypes", fmt::join(per_op, ",")));
  if (std::optional<GroupedExternalKernel> g = external_grouped(o, plugins, serve)) {
    GroupedSuiteConfig gc = *suite_grouped_config(o.suite);
    gc.dtypes = cfg.dtypes;
    if (o.seed) gc.seed = *o.seed;
    if (o.grouped_cases) gc.cases_per_layout = *o.grouped_cases;
    gc.threads = o.threads;
    gc.external = std::move(*g);
    plan.grouped = gc;
  }
  if (std::vector<BlockKernelEntry> blocks = external_blocks(o, plugins, serve, cfg.dtypes); !blocks.empty()) {
    BlockSuiteConfig b = build_block_config(o, *suite_block_config(o.suite), cfg);
    b.builtin = false;
    b.extra_kernels = std::move(blocks);
    b.external_report_only = o.report_only;
    plan.block = b;
  }
  if (!plan.ops && !plan.grouped && !plan.block) throw UsageError("the external kernels support none of the selected ops and dtypes");
  assign_shards(plan, parse_shard(o.shard));
  return plan;
}

RunPlan build_plan(const RunOptions& o) {
  auto base = suite_config(o.suite);
  if (!base) throw UsageError(fmt::format("unknown suite '{}' (see normcheck list)", o.suite));
  if (!o.plugins.empty() || !o.exec.empty() || !o.serve.empty()) return plugin_plan(o, *base);
  check_variants(o.variants);
  const std::vector<std::string> ops =
      only(o.ops, [](const std::string& op) { return op != kBlockOp && op != kContractionOp && op != kAuditOp && op != kGroupedOp && op != kBudgetOp; });
  const bool block_op_named = std::find(o.ops.begin(), o.ops.end(), kBlockOp) != o.ops.end();
  const bool contraction_named = std::find(o.ops.begin(), o.ops.end(), kContractionOp) != o.ops.end();
  RunPlan plan;
  const RunConfig cfg = build_ops_config(o, *base, ops);
  const bool variants_name_ops = o.variants.empty() || !cfg.variants.empty();
  if ((o.ops.empty() || !ops.empty()) && variants_name_ops && !selected_kernels(cfg).empty()) plan.ops = cfg;
  const BlockSuiteConfig block = build_block_config(o, *suite_block_config(o.suite), cfg);
  const bool variants_name_block = o.variants.empty() || !block.variants.empty();
  if ((o.ops.empty() || block_op_named) && variants_name_block && block.cases_per_generator > 0) plan.block = block;
  const ContractionSuiteConfig contraction = build_contraction_config(o, *suite_contraction_config(o.suite), cfg);
  if ((o.ops.empty() || contraction_named) && o.variants.empty() && contraction.cases_per_generator > 0)
    plan.contraction = contraction;
  plan.axis_audit = (o.ops.empty() && o.variants.empty()) || std::find(o.ops.begin(), o.ops.end(), kAuditOp) != o.ops.end();
  if ((o.ops.empty() && o.variants.empty()) || std::find(o.ops.begin(), o.ops.end(), kGroupedOp) != o.ops.end()) {
    GroupedSuiteConfig g = *suite_grouped_config(o.suite);
    g.dtypes = cfg.dtypes;
    if (o.seed) g.seed = *o.seed;
    if (o.grouped_cases) g.cases_per_layout = *o.grouped_cases;
    g.threads = o.threads;
    plan.grouped = g;
  }
  if ((o.ops.empty() && o.variants.empty()) || std::find(o.ops.begin(), o.ops.end(), kBudgetOp) != o.ops.end()) {
    BudgetSuiteConfig b = *suite_budget_config(o.suite);
    b.dtypes = cfg.dtypes;
    if (o.seed) b.seed = *o.seed;
    b.threads = o.threads;
    plan.budget = b;
  }
  if (!plan.ops && !plan.block && !plan.contraction && !plan.axis_audit && !plan.grouped && !plan.budget)
    throw UsageError("the selection contains no kernel");
  assign_shards(plan, parse_shard(o.shard));
  return plan;
}

/// Output elements judged for external kernels in the per-op, block and grouped sections.
int64_t judged_external_elements(const RunResult& r, const std::optional<BlockSuiteResult>& block,
                                 const std::optional<GroupedSuiteResult>& grouped) {
  int64_t n = 0;
  for (const Record& rec : r.records)
    if (is_external_kernel_name(rec.key.kernel)) n += rec.acc.count() + rec.kernel_failures;
  if (block)
    for (const BlockRecord& rec : block->records)
      if (rec.kernel != "builtin") n += rec.acc.count() + rec.kernel_failures;
  if (grouped)
    for (const GroupedRecord& rec : grouped->records) n += rec.acc.count() + rec.kernel_failures;
  return n;
}

extern "C" void on_stop_signal(int) { stop_requested() = true; }

void install_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

/// Prints the progress line on stderr twice a second while a run goes on, when stderr is a
/// terminal; nothing otherwise (CI logs stay quiet).
class ProgressLine {
 public:
  explicit ProgressLine(int64_t planned) : planned_(planned) {
    if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressLine() {
    finished_ = true;
    if (thread_.joinable()) {
      thread_.join();
      print();
      std::fprintf(stderr, "\n");
    }
  }

 private:
  void loop() {
    while (!finished_) {
      print();
      for (int i = 0; i < 5 && !finished_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  void print() const {
    const int64_t done = progress_counters().done, failing = progress_counters().failing;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = done > 0 ? s * static_cast<double>(planned_ - done) / static_cast<double>(done) : 0;
    std::fprintf(stderr, "\r%lld/%lld cases, %lld with failing outputs, %.0f s elapsed, ~%.0f s left%s   ",
                 static_cast<long long>(done), static_cast<long long>(planned_), static_cast<long long>(failing), s, eta,
                 stop_requested() ? " (stopping: finishing the cases in flight)" : "");
  }
  int64_t planned_;
  std::atomic<bool> finished_{false};
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

/// Cases the plan runs on this shard, over every section.
int64_t planned_cases(const RunPlan& plan) {
  const auto planned = [](const auto& cfg) { return cfg ? planned_cases(*cfg) : int64_t{0}; };
  return planned(plan.ops) + planned(plan.block) + planned(plan.contraction) + planned(plan.grouped) + planned(plan.budget);
}

void ensure_parent_dir(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

}  // namespace

int run_command(const RunOptions& o, const std::string& command_line) {
  install_signal_handlers();  // first, so that an early SIGTERM still ends in a report
  RunPlan plan;
  try {
    plan = build_plan(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", e.what());
    return kExitBadInput;
  }
  ensure_parent_dir(o.out);
  const std::string journal = o.out + ".failures.jsonl";
  std::filesystem::remove(journal);
  RunConfig cfg = plan.ops ? *plan.ops : *suite_config(o.suite);
  if (!plan.ops) cfg.ops.clear();
  if (!plan.ops) cfg.shard = plan.audit_shard;  // the report's shard field
  cfg.external = plan.external;
  cfg.journal_path = journal;
  RunMetadata meta{utc_now(), "", command_line};
  const int64_t planned = planned_cases(plan);
  std::optional<ProgressLine> progress_line(std::in_place, planned);
  const RunResult result = plan.ops ? run_suite(cfg) : RunResult{};
  std::optional<BlockSuiteResult> block;
  if (plan.block && !stop_requested()) {
    plan.block->journal_path = journal;
    block = run_block_suite(*plan.block);
  }
  std::optional<ContractionSuiteResult> contraction;
  if (plan.contraction && !stop_requested()) {
    plan.contraction->journal_path = journal;
    contraction = run_contraction_suite(*plan.contraction);
  }
  std::optional<GroupedSuiteResult> grouped;
  if (plan.grouped && !stop_requested()) grouped = run_grouped_suite(*plan.grouped);
  std::optional<BudgetSuiteResult> budget;
  if (plan.budget && !stop_requested()) budget = run_budget_suite(*plan.budget);
  std::optional<std::vector<audit::AuditRecord>> audits;
  const bool audit_here = plan.axis_audit && plan.audit_shard.owns(0);
  if (audit_here && !stop_requested()) audits = audit::standard_audits(o.seed.value_or(cfg.seed));
  progress_line.reset();
  meta.end_time = utc_now();
  nlohmann::json report = make_report(cfg, result, meta, o.out);
  report["rms_block"] = block ? block_suite_json(*plan.block, *block, o.out) : nlohmann::json();
  report["qr_contraction"] = contraction ? contraction_suite_json(*plan.contraction, *contraction, o.out) : nlohmann::json();
  const bool block_ok = !plan.block || (block && block_suite_passed(*block));
  const bool contraction_ok = !plan.contraction || (contraction && contraction_suite_passed(*contraction));
  const bool audit_ok = !audit_here || (audits && audit::audits_passed(*audits));
  if (audits) {
    nlohmann::json records = nlohmann::json::array();
    for (const audit::AuditRecord& r : *audits) records.push_back(audit::audit_record_json(r));
    report["axis_audit"] = {{"passed", audit::audits_passed(*audits)}, {"records", records}};
  } else {
    report["axis_audit"] = nullptr;
  }
  report["grouped_norm"] = grouped ? grouped_suite_json(*plan.grouped, *grouped) : nlohmann::json();
  const bool grouped_ok = !plan.grouped || (grouped && grouped_suite_passed(*grouped, plan.grouped->external && plan.grouped->external->report_only));
  report["port_hamiltonian"] = budget ? budget_suite_json(*plan.budget, *budget) : nlohmann::json();
  const bool budget_ok = !plan.budget || (budget && budget_suite_passed(*budget));
  // An external kernel that declined every call (unsupported) verified nothing: that is not a pass.
  const bool declined_everything = plan.external.any() && judged_external_elements(result, block, grouped) == 0;
  const bool passed = run_passed(result) && block_ok && contraction_ok && audit_ok && grouped_ok && budget_ok && !declined_everything;
  report["run"]["passed"] = passed;
  report["run"]["complete"] = !result.interrupted && (!plan.block || (block && !block->interrupted)) &&
                              (!plan.contraction || (contraction && !contraction->interrupted)) &&
                              (!audit_here || audits.has_value()) &&
                              (!plan.grouped || (grouped && !grouped->interrupted)) &&
                              (!plan.budget || (budget && !budget->interrupted));
  write_json_atomically(o.out, report);
  if (!o.quiet && plan.ops) print_summary(result);
  if (!o.quiet && block) print_block_summary(*block);
  if (!o.quiet && contraction) print_contraction_summary(*contraction);
  if (!o.quiet && grouped) print_grouped_summary(*grouped);
  if (!o.quiet && audits) print_audit_summary(*audits);
  if (declined_everything)
    std::printf("the external kernels declined every call (unsupported) or none was judged: nothing was verified\n");
  const int64_t done = result.cases_done + (block ? block->cases_done : 0) + (contraction ? contraction->cases_done : 0) +
                       (grouped ? grouped->cases_done : 0) + (budget ? budget->cases_done : 0);
  std::printf("report: %s (%s, %lld/%lld cases)%s\n", o.out.c_str(), passed ? "PASSED" : "FAILED",
              static_cast<long long>(done), static_cast<long long>(planned), done < planned ? " INCOMPLETE: interrupted" : "");
  if (!std::filesystem::exists(journal) || passed) std::filesystem::remove(journal);
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
