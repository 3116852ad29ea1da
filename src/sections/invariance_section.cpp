// The batch-invariance and determinism section ("batch_invariance", issue 44; docs/invariance.md): every
// per-op kernel of the run (the built-ins and the planted batch-variant ones, or the external kernels)
// called on one case per dtype alone, repeated, in batches of other sizes, rotated and padded; no
// oracle. One shard unit. `--invariance report_only` reports without failing, `off` leaves it out.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "ops/op_kernels.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "report/report.hpp"
#include "report/schema_check.hpp"
#include "sections/merge_rules.hpp"
#include "sections/replay_external.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/invariance.hpp"
#include "suite/unit_timing.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "batch_invariance";
constexpr std::string_view kReplayOption = "invariance-record";
constexpr const char* kGenerator = "normal";
constexpr int64_t kRows = 48, kCols = 255;  ///< below 256 rows (batches cross it); a width not a multiple of 4
const InvarianceLimits kLimits{2, 1 << 17};

/// What a planted kernel must be caught as ("" for every other kernel: it must pass).
std::string expected_verdict(const KernelEntry& k) {
  if (k.kernel != "planted") return "";
  return k.variant == "ln_atomic_dgamma" ? "nondeterministic" : "batch_variant";
}

LayerNormCase invariance_case(DType dt, uint64_t seed) {
  return gen::make_layernorm_case(kGenerator, dt, seed, {kRows, kCols});
}

struct Checked {
  KernelEntry kernel;
  LayerNormCase c;
  InvarianceResult result;
};

json difference_json(const InvarianceDifference& d) {
  return {{"check", d.check}, {"output", d.output}, {"row", d.row < 0 ? json(nullptr) : json(d.row)}, {"col", d.col},
          {"config_a", d.config_a}, {"config_b", d.config_b}, {"a", hexfloat(d.a)}, {"b", hexfloat(d.b)}};
}

std::string expectation_of(const KernelEntry& k, bool report_only) {
  if (report_only) return "report_only";
  return expected_verdict(k).empty() ? "must_pass" : "must_be_caught";
}

/// Passed: a planted kernel caught with its verdict, any other kernel passing (or declining the case).
bool meets_expectation(const Checked& c) {
  const std::string v = c.result.verdict();
  const std::string want = expected_verdict(c.kernel);
  return want.empty() ? (v == "pass" || v == "declined") : v == want;
}

/// The record's verdict: the checks' own for a kernel that must pass; "flagged" for a planted kernel
/// caught with its expected verdict and "fail" for one that was not (the per-op records' words).
std::string record_verdict(const Checked& c) {
  if (expected_verdict(c.kernel).empty()) return c.result.verdict();
  return meets_expectation(c) ? "flagged" : "fail";
}

json record_json(const Checked& c, bool report_only, const std::string& replay) {
  const InvarianceResult& r = c.result;
  json not_applicable = json::object();
  for (const std::string& o : r.reduced_outputs) not_applicable[o] = "reduced over the rows: it depends on the whole batch, so determinism only";
  json rec = {{"op", op_name(c.kernel.op)}, {"kernel", c.kernel.kernel}, {"variant", c.kernel.variant},
              {"storage", dtype_info(c.kernel.storage).name}, {"accum", dtype_info(c.kernel.accum).name},
              {"expectation", expectation_of(c.kernel, report_only)}, {"verdict", record_verdict(c)}, {"found", r.verdict()},
              {"passed", meets_expectation(c)},
              {"case", {{"generator", c.c.generator}, {"seed", c.c.seed}, {"rows", c.c.rows}, {"n", c.c.n}, {"eps", hexfloat(c.c.eps)}}},
              {"calls", r.calls}, {"batch_sizes", r.batch_sizes}, {"padding_rows", r.padding_rows},
              {"checks", {{"determinism", r.per_row_outputs}, {"batch_invariance", r.per_row_outputs}, {"not_applicable", not_applicable}}},
              {"replay", replay}};
  for (const std::string& o : r.reduced_outputs) rec["checks"]["determinism"].push_back(o);
  if (!expected_verdict(c.kernel).empty()) rec["expected_verdict"] = expected_verdict(c.kernel);
  if (r.nondeterministic) rec["difference"] = difference_json(*r.nondeterministic);
  else if (r.batch_variant) rec["difference"] = difference_json(*r.batch_variant);
  if (!r.failure.empty()) rec["failure"] = printable(r.failure);
  return rec;
}

/// One shard unit per dtype: the kernels of the i-th dtype present (kernels sorted by dtype, stable).
class InvarianceRun final : public SectionRun {
 public:
  InvarianceRun(std::vector<KernelEntry> kernels, uint64_t seed, int threads, bool report_only)
      : kernels_(std::move(kernels)), seed_(seed), threads_(std::max(1, threads)), report_only_(report_only) {
    std::stable_sort(kernels_.begin(), kernels_.end(), [](const KernelEntry& x, const KernelEntry& y) { return x.storage < y.storage; });
    for (const KernelEntry& k : kernels_)
      if (dtypes_.empty() || dtypes_.back() != k.storage) dtypes_.push_back(k.storage);
    owned_.assign(dtypes_.size(), true);
  }
  int64_t shard_units() const override { return static_cast<int64_t>(dtypes_.size()); }
  void set_shard(const ShardSpec& shard) override {
    for (size_t u = 0; u < dtypes_.size(); ++u) owned_[u] = shard.owns(static_cast<int64_t>(u));
    first_unit_ = shard.first_unit;
  }
  int64_t planned_cases() const override { return 0; }
  /// About 12 ms of CPU per built-in kernel on this project's machine (1.3 s for the 106 of `--ops batch_invariance`).
  std::vector<double> unit_costs() const override {
    std::vector<double> cost(dtypes_.size(), 0.0);
    for (const KernelEntry& k : kernels_) cost[unit_of(k.storage)] += 0.012;
    return cost;
  }
  void run(const std::string&) override {
    std::vector<size_t> mine;
    for (size_t i = 0; i < kernels_.size(); ++i)
      if (owned_[unit_of(kernels_[i].storage)]) mine.push_back(i);
    std::vector<Checked> out(mine.size());
    std::atomic<size_t> next{0};
    const auto work = [&] {
      for (size_t m = next++; m < mine.size(); m = next++) {
        const KernelEntry& k = kernels_[mine[m]];
        const UnitTimer timer(first_unit_ + static_cast<int64_t>(unit_of(k.storage)));  // each thread's CPU time adds to its unit
        LayerNormCase c = invariance_case(k.storage, case_seed(seed_, k.storage, 0, 0));
        InvarianceResult r = check_invariance(k, c, kLimits);
        out[m] = Checked{k, std::move(c), std::move(r)};
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads_; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    checked_ = std::move(out);
  }
  int64_t cases_done() const override { return 0; }
  bool passed() const override {
    if (!checked_) return !owns_any();
    if (report_only_) return true;
    for (const Checked& c : *checked_)
      if (!meets_expectation(c)) return false;
    return true;
  }
  bool complete() const override { return !owns_any() || checked_.has_value(); }
  void write(json& report, const std::string& report_path) const override {
    if (!checked_ || !owns_any()) return;
    json records = json::array();
    for (const Checked& c : *checked_)
      records.push_back(record_json(c, report_only_, replay_command_line(report_path, kReplayOption.data(), static_cast<int64_t>(records.size()))));
    report[std::string(kKey)] = {{"passed", passed()}, {"records", records}};
  }
  void print_summary() const override {
    if (!checked_) return;
    int64_t pass = 0, caught = 0, planted = 0, calls = 0;
    for (const Checked& c : *checked_) {
      calls += c.result.calls;
      if (!expected_verdict(c.kernel).empty()) {
        ++planted;
        caught += meets_expectation(c);
      } else if (meets_expectation(c)) {
        ++pass;
      }
    }
    const int64_t judged = static_cast<int64_t>(checked_->size()) - planted;
    std::printf("batch invariance and determinism: %lld of %lld kernels invariant and deterministic%s, %lld kernel calls (%.1f per kernel)\n",
                static_cast<long long>(pass), static_cast<long long>(judged),
                planted ? fmt::format(", planted variants caught {} of {}", caught, planted).c_str() : "", static_cast<long long>(calls),
                checked_->empty() ? 0.0 : static_cast<double>(calls) / static_cast<double>(checked_->size()));
    for (const Checked& c : *checked_) {
      if (meets_expectation(c) || !expected_verdict(c.kernel).empty()) continue;
      const InvarianceResult& r = c.result;
      const auto& d = r.nondeterministic ? r.nondeterministic : r.batch_variant;
      std::printf("  %s %s %s %s: %s%s\n", c.kernel.kernel.c_str(), c.kernel.variant.c_str(), std::string(op_name(c.kernel.op)).c_str(),
                  dtype_info(c.kernel.storage).name.data(), r.verdict().c_str(),
                  d ? fmt::format(": {} element {} of row {}: {} gives {}, {} gives {}", d->output, d->col, d->row, d->config_a, hexfloat(d->a),
                                  d->config_b, hexfloat(d->b)).c_str()
                    : (r.failure.empty() ? "" : (": " + printable(r.failure)).c_str()));
    }
  }

 private:
  size_t unit_of(DType dt) const { return static_cast<size_t>(std::find(dtypes_.begin(), dtypes_.end(), dt) - dtypes_.begin()); }
  bool owns_any() const { return std::find(owned_.begin(), owned_.end(), true) != owned_.end(); }
  std::vector<KernelEntry> kernels_;
  uint64_t seed_;
  int threads_;
  bool report_only_;
  std::vector<DType> dtypes_;  ///< the shard units: each dtype present, in order
  std::vector<bool> owned_;
  int64_t first_unit_ = 0;
  std::optional<std::vector<Checked>> checked_;
};

bool wanted_dtype(const RunConfig& cfg, DType dt) {
  return cfg.dtypes.empty() || std::find(cfg.dtypes.begin(), cfg.dtypes.end(), dt) != cfg.dtypes.end();
}

class InvarianceSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }
  bool diffed() const override { return false; }  // verdicts without ULP metrics

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    if (o.invariance == "off") {
      if (in.names_any({kKey})) throw PlanError("--ops batch_invariance with --invariance off: choose one");
      return nullptr;
    }
    const uint64_t seed = o.seed.value_or(in.common.seed);
    const bool report_only = o.invariance == "report_only" || (in.external && o.report_only);
    std::vector<KernelEntry> kernels;
    if (in.external) {  // on by default for external kernels, whatever per-op ops --ops names
      RunConfig cfg = in.common;
      if (!(o.ops.empty() || in.names_any({kKey}) || in.names_any(op_name_views()))) return nullptr;
      add_external_kernels(o, *in.external, cfg);
      for (const KernelEntry& k : cfg.extra_kernels)
        if (wanted_dtype(cfg, k.storage) && (!in.names_any(op_name_views()) || in.names_any({op_name(k.op)}))) kernels.push_back(k);
      if (kernels.empty()) {
        if (in.names_any({kKey})) throw PlanError("--ops batch_invariance: no external per-op kernel (LayerNorm or RMSNorm) in the selected dtypes");
        return nullptr;
      }
    } else {
      if (!selected_whole_or_named(in, kKey)) return nullptr;
      for (const auto* table : {&builtin_kernels(), &planted_invariance_kernels()})
        for (const KernelEntry& k : *table)
          if (wanted_dtype(in.common, k.storage) && (op_spec(k.op).in_suites || in.names_any({op_name(k.op)}))) kernels.push_back(k);
    }
    return std::make_unique<InvarianceRun>(std::move(kernels), seed, in.common.threads, report_only);
  }

  /// The shards' records, one dtype unit each, joined in dtype order (the unsharded run's, kernels
  /// stable within a dtype); replay commands renamed to the merged report.
  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    json records = json::array();
    bool any = false, passed = true;
    for (const json* part : nightly::section_parts(shards, std::string(kKey))) {
      if (part == nullptr || part->is_null()) continue;
      if (!part->is_object() || !part->contains("records") || !part->at("records").is_array() || !part->contains("passed") ||
          !part->at("passed").is_boolean())
        throw std::invalid_argument("a shard's batch_invariance section has no records array or passed flag");
      any = true;
      passed = passed && part->at("passed").get<bool>();
      for (const json& r : part->at("records")) {
        if (!r.is_object() || !r.contains("storage") || !r.at("storage").is_string() || !parse_dtype(r.at("storage").get<std::string>()))
          throw std::invalid_argument("a shard's batch_invariance record names no known storage dtype");
        records.push_back(r);
      }
    }
    if (!any) {
      m[std::string(kKey)] = nullptr;
      return true;
    }
    std::stable_sort(records.begin(), records.end(), [](const json& x, const json& y) {
      return *parse_dtype(x.at("storage").get<std::string>()) < *parse_dtype(y.at("storage").get<std::string>());
    });
    for (size_t i = 0; i < records.size(); ++i) records[i]["replay"] = replay_command_line(out_path, kReplayOption.data(), static_cast<int64_t>(i));
    m[std::string(kKey)] = {{"passed", passed}, {"records", records}};
    return passed;
  }

  json suite_row(std::string_view) const override {
    return {{"section", kKey}, {"ops", kKey}, {"kernels", "built-in + planted (or the external per-op kernels)"}, {"dtypes", 4},
            {"generators", kGenerator}, {"cases_per_generator", 1}, {"cases", 0},
            {"shapes", fmt::format("{}x{}; batches of 1-1024 rows, rotated, padded", kRows, kCols)}};
  }

  std::string_view replay_option() const override { return kReplayOption; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json rec;
    std::optional<KernelEntry> kernel;
    LayerNormCase c;
    try {
      if (!o.dump.empty()) throw std::invalid_argument("--dump writes per-op records (--record) only");
      const json report = read_report_file(o.report);
      const json* recs = records(report);
      if (!recs || !recs->is_array() || index < 0 || index >= static_cast<int64_t>(recs->size()))
        throw std::invalid_argument(fmt::format("the report has no batch_invariance record {}", index));
      rec = recs->at(static_cast<size_t>(index));
      kernel = replay_invariance_kernel(report, rec, o);
      const json& cj = rec.at("case");
      c = gen::make_layernorm_case(cj.at("generator").get<std::string>(), kernel->storage, cj.at("seed").get<uint64_t>(),
                                   {cj.at("rows").get<int64_t>(), cj.at("n").get<int64_t>()});
      if (c.rows != cj.at("rows").get<int64_t>() || c.n != cj.at("n").get<int64_t>()) throw std::invalid_argument("the record's case cannot be regenerated");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    const InvarianceResult r = check_invariance(*kernel, c, kLimits);
    const Checked now{*kernel, c, r};
    const json again = record_json(now, false, "");
    std::printf("batch_invariance record %lld: %s %s %s %s, case %s seed %llu %lldx%lld; %lld calls\n", static_cast<long long>(index),
                kernel->kernel.c_str(), kernel->variant.c_str(), std::string(op_name(kernel->op)).c_str(), dtype_info(kernel->storage).name.data(),
                c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.rows), static_cast<long long>(c.n),
                static_cast<long long>(r.calls));
    std::printf("recorded: %s, replayed: %s\n", rec.at("found").get<std::string>().c_str(), r.verdict().c_str());
    if (again.contains("difference")) {
      const json& d = again["difference"];
      std::printf("first difference: %s of %s, row %s col %lld: %s gives %s, %s gives %s\n", d["check"].get<std::string>().c_str(),
                  d["output"].get<std::string>().c_str(), d["row"].dump().c_str(), static_cast<long long>(d["col"].get<int64_t>()),
                  d["config_a"].get<std::string>().c_str(), d["a"].get<std::string>().c_str(), d["config_b"].get<std::string>().c_str(),
                  d["b"].get<std::string>().c_str());
    }
    const bool same = rec.at("found") == again["found"] && rec.value("difference", json()) == again.value("difference", json());
    std::printf(same ? "reproduced\n" : "NOT reproduced: the kernel's behaviour differs from the recorded one (nondeterminism across runs)\n");
    return same ? kExitOk : kExitCheckFailed;
  }

 private:
  /// The record's kernel: a planted invariance kernel, a built-in, or an external one (replay_kernel).
  static KernelEntry replay_invariance_kernel(const json& report, const json& rec, const ReplayOptions& o) {
    if (rec.at("kernel").get<std::string>() == "planted") {
      for (const KernelEntry& k : planted_invariance_kernels())
        if (k.variant == rec.at("variant").get<std::string>() && op_name(k.op) == rec.at("op").get<std::string>() &&
            dtype_info(k.storage).name == rec.at("storage").get<std::string>())
          return k;
      throw std::invalid_argument("record names a planted kernel this build does not have");
    }
    return replay_kernel(report, rec, o);
  }
};

}  // namespace

const Section& invariance_section() {
  static const InvarianceSection s;
  return s;
}

bool run_invariance_of(std::vector<KernelEntry> kernels, uint64_t seed, bool report_only, json& report, const std::string& report_path) {
  InvarianceRun run(std::move(kernels), seed, 1, report_only);
  run.run(report_path);
  run.write(report, report_path);
  return run.passed();
}

}  // namespace normcheck::sections
