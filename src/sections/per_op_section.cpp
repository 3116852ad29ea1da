// The per-op section: LayerNorm and RMSNorm forward and backward kernels (built-in, plugins, exec,
// serve) judged record by record; its records are the report's top-level `records`.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/op_kernels.hpp"
#include "external/exec.hpp"
#include "external/plugin.hpp"
#include "external/serve.hpp"
#include "sections/merge_rules.hpp"
#include "report/shard_items.hpp"
#include "generators/generators.hpp"
#include "core/suggest.hpp"
#include "report/schema_check.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "report/report.hpp"
#include "report/terminal_summary.hpp"
#include "sections/replay_external.hpp"
#include "sections/replay_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

std::vector<std::string_view> op_names() { return op_name_views(); }

class PerOpRun final : public SectionRun {
 public:
  explicit PerOpRun(RunConfig cfg) : cfg_(std::move(cfg)) {}
  /// One per case and op family of the run (FamilyUnits): the default suite's LayerNorm and RMSNorm kernels.
  int64_t shard_units() const override { return family_units(cfg_).per_case() * static_cast<int64_t>(per_op_items(cfg_).size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  /// A family unit of a case costs about 0.5 ms, 0.3 us per element for its oracle and 0.3 us per
  /// element and kernel of the family for running, bounding and judging (fitted on the default
  /// suite, docs/nightly.md); a family without a kernel of the case's dtype costs nothing.
  std::vector<double> unit_costs() const override {
    const auto kernels = selected_kernels(cfg_);
    std::map<std::pair<DType, int>, int> per_family;
    for (const KernelEntry* k : kernels) ++per_family[{k->storage, op_family_index(k->op)}];
    std::vector<double> costs;
    const FamilyUnits units = family_units(cfg_);
    for (const WorkItem& w : per_op_items(cfg_)) {
      const auto [rows, n] = suite_case_shape(cfg_, w);
      const OpFamilies live = live_families(kernels, w.dtype, units.first());
      for (int f : units.families) {
        const int count = per_family[{w.dtype, f}];
        costs.push_back(live[f] ? 5e-4 + static_cast<double>(rows * n) * (3e-7 + 3e-7 * count) : 0.0);
      }
    }
    return costs;
  }
  void run(const std::string& journal) override {
    cfg_.journal_path = journal;
    result_ = run_suite(cfg_);
    ran_ = true;
  }
  int64_t cases_done() const override { return result_.cases_done; }
  bool passed() const override { return ran_ && run_passed(result_); }
  bool complete() const override { return ran_ && !result_.interrupted; }
  int64_t judged_external_elements() const override {
    int64_t n = 0;
    for (const Record& rec : result_.records)
      if (is_external_kernel_name(rec.key.kernel)) n += rec.acc.count() + rec.kernel_failures;
    return n;
  }
  void write(json& report, const std::string& report_path) const override {
    if (ran_) write_per_op_section(report, cfg_, result_, report_path);
  }
  void print_summary() const override {
    if (ran_) normcheck::print_summary(result_);
  }
  const RunConfig* run_config() const override { return &cfg_; }

 private:
  RunConfig cfg_;
  RunResult result_;
  bool ran_ = false;
};

}  // namespace

/// The external kernels' per-op entries: plugins, the exec command, the serve pool.
void add_external_kernels(const RunOptions& o, const ExternalKernels& ext, RunConfig& cfg) {
  cfg.builtin = false;
  for (const external::PluginInfo& p : ext.plugins)
    for (KernelEntry& k : external::plugin_kernels(p)) cfg.extra_kernels.push_back(std::move(k));
  if (!o.exec.empty())
    for (KernelEntry& k : external::exec_kernels({o.exec, o.exec_name, o.kernel_timeout}, cfg.ops, cfg.dtypes))
      cfg.extra_kernels.push_back(std::move(k));
  if (ext.serve)
    for (KernelEntry& k : external::serve_kernels(ext.serve, cfg.ops, cfg.dtypes)) cfg.extra_kernels.push_back(std::move(k));
  if (!o.contract.empty())  // --contract overrides a plugin's declaration (docs/bounds.md section 2.7.5)
    for (KernelEntry& k : cfg.extra_kernels) k.contract = o.contract;
  cfg.external_report_only = o.report_only;
  cfg.external = ext.specs;
}

namespace {

/// A record as planned, from its header in a shard report (identity, bounds, expectation).
Record planned_record(const json& j) {
  Record r;
  const auto op = parse_op(j.at("op").get<std::string>());
  const auto storage = parse_dtype(j.at("storage").get<std::string>()), accum = parse_dtype(j.at("accum").get<std::string>());
  if (!op || !storage || !accum) throw std::invalid_argument("a shard's record has an unknown op or dtype");
  r.key = {*op, j.at("kernel").get<std::string>(), j.at("variant").get<std::string>(), *storage, *accum,
           j.at("property").get<std::string>(), j.at("output").get<std::string>()};
  r.bound_id = j.at("bound_id").get<std::string>();
  r.own_bound_id = j.at("own_bound_id").get<std::string>();
  r.expectation = j.value("expectation", std::string("must_pass")) == "report_only" ? Expectation::report_only : Expectation::must_pass;
  r.known_weak = j.at("known_weak").get<bool>();
  if (j.contains("contract") && j.at("contract").contains("looser_bound_id"))
    r.looser_bound_id = j.at("contract").at("looser_bound_id").get<std::string>();
  return r;
}

/// The op families with records of each dtype: those a case of the dtype runs (live_families).
std::map<DType, OpFamilies> planned_families(const std::vector<Record>& records, const RunConfig& cfg) {
  std::map<DType, OpFamilies> present;
  for (DType dt : cfg.dtypes) present[dt] = {};
  for (const Record& rec : records) present[rec.key.storage][op_family_index(rec.key.op)] = true;
  const int first = family_units(cfg).first();
  for (auto& [dt, families] : present) families = live_families(families, first);
  return present;
}

/// The shards' cases, in case order, each case's parts (its families, from one or two shards)
/// joined into one. Throws std::invalid_argument when they are not parts of one run.
std::vector<std::pair<int64_t, CaseResult>> joined_shard_items(const std::vector<nightly::ShardReport>& shards, size_t cases) {
  std::vector<std::pair<int64_t, CaseResult>> items, joined;
  for (const nightly::ShardReport& s : shards)
    for (auto& item : nightly::shard_items_from_json(s.report.at("shard_items"))) items.push_back(std::move(item));
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [index, item] : items) {
    if (index < 0 || index >= static_cast<int64_t>(cases))
      throw std::invalid_argument(fmt::format("the shards' per-op cases do not form one run (case {} is out of range)", index));
    if (!joined.empty() && joined.back().first == index)
      join_case_pieces(index, joined.back().second, std::move(item));
    else
      joined.emplace_back(index, std::move(item));
  }
  return joined;
}

/// The per-op records of shards that carry their cases (`shard_items`): every case, its parts
/// joined, folded in case order into the planned records with the run's own fold, then written by
/// the run's own writer, so the merged section is the unsharded run's bit for bit. A case is done
/// when every family it runs is there (a shard may have been interrupted).
RunResult fold_shard_items(const std::vector<nightly::ShardReport>& shards, const RunConfig& cfg) {
  RunResult r;
  for (const json& rec : shards.front().report.at("records")) r.records.push_back(planned_record(rec));
  const std::vector<WorkItem> work = per_op_items(cfg);
  const std::map<DType, OpFamilies> live = planned_families(r.records, cfg);
  r.cases_planned = static_cast<int64_t>(work.size());
  for (const auto& [index, item] : joined_shard_items(shards, work.size())) {
    for (const CasePartial& p : item.partials)
      if (p.record >= r.records.size()) throw std::invalid_argument("a shard's case names a record the shards do not have");
    const WorkItem& w = work[static_cast<size_t>(index)];
    merge_item(w, index, cfg, item, r.records);
    if (item.families == live.at(w.dtype)) ++r.cases_done;
    for (const auto& [family, o] : item.oracle) r.max_oracle_precision_bits = std::max(r.max_oracle_precision_bits, o.bits);
  }
  r.interrupted = r.cases_done < r.cases_planned;
  r.flag_checks = flag_checks_of(cfg, r.records);
  return r;
}

class PerOpSection final : public Section {
 public:
  std::string_view key() const override { return "records"; }
  std::vector<std::string_view> ops() const override { return op_names(); }
  bool knows_variant(const std::string& v) const override { return is_kernel_variant(v); }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    RunConfig cfg = in.common;
    std::vector<std::string> mine;
    const std::vector<std::string_view> all = op_names();
    std::copy_if(o.ops.begin(), o.ops.end(), std::back_inserter(mine),
                 [&](const std::string& op) { return std::find(all.begin(), all.end(), op) != all.end(); });
    if (!mine.empty()) {
      cfg.ops.clear();
      for (const std::string& op : mine) cfg.ops.push_back(*parse_op(op));
    }
    cfg.variants.clear();
    std::copy_if(o.variants.begin(), o.variants.end(), std::back_inserter(cfg.variants), [](const std::string& v) { return is_kernel_variant(v); });
    if (!o.generators.empty()) {
      for (const std::string& g : o.generators)
        if (!gen::is_row_generator(g))
          throw PlanError(fmt::format("unknown generator '{}'{} (see normcheck list)", g, did_you_mean(g, gen::row_generator_names())));
      cfg.generators = o.generators;
    }
    if (o.cases) cfg.cases_per_generator = *o.cases;
    if (in.external) add_external_kernels(o, *in.external, cfg);
    const bool variants_name_ops = in.external || o.variants.empty() || !cfg.variants.empty();
    if ((o.ops.empty() || !mine.empty()) && variants_name_ops && !selected_kernels(cfg).empty())
      return std::make_unique<PerOpRun>(std::move(cfg));
    if (in.external && !mine.empty())
      throw PlanError(fmt::format("the external kernels implement none of --ops {} in the selected dtypes", fmt::join(mine, ",")));
    return nullptr;
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    std::vector<const json*> top;
    for (const nightly::ShardReport& s : shards) {
      if (!s.report.contains("records") || !s.report["records"].is_array()) throw std::invalid_argument("'" + s.path + "' has no records array");
      top.push_back(&s.report);
    }
    if (std::all_of(shards.begin(), shards.end(), [](const nightly::ShardReport& s) { return s.report.contains("shard_items"); })) {
      const RunConfig cfg = config_from_report(shards.front().report);
      const RunResult r = fold_shard_items(shards, cfg);
      json section;
      write_per_op_section(section, cfg, r, out_path);
      m["records"] = std::move(section["records"]);
      m["flag_checks"] = std::move(section["flag_checks"]);
      m["records_passed"] = section["records_passed"];
      m.erase("shard_items");
      json& run = m["run"];
      run["cases_planned"] = r.cases_planned;
      run["cases_done"] = r.cases_done;
      if (run.contains("oracle")) run["oracle"]["max_precision_bits_used"] = r.max_oracle_precision_bits;
      return records_passed(r) && run_passed(r);
    }
    m["records"] = nightly::pick_records(nightly::section_parts(shards, "records"), shards, out_path);
    const std::vector<FlagCheck> flags = nightly::recompute_flags(m["records"], nightly::dtypes_of(m["config"]));
    m["flag_checks"] = flag_checks_json(flags);
    m["records_passed"] = nightly::all_true(top, "records_passed");
    json& run = m["run"];
    int64_t planned = 0, done = 0;
    for (const nightly::ShardReport& s : shards) {
      const json& sr = s.report.at("run");
      planned = add_report_counts(planned, report_count(sr, "cases_planned"));
      done = add_report_counts(done, report_count(sr, "cases_done"));
      if (run.contains("oracle") && sr.contains("oracle")) {
        json& bits = run["oracle"]["max_precision_bits_used"];
        bits = std::max(bits.is_number() ? bits.get<int>() : 0, sr.at("oracle").value("max_precision_bits_used", 0));
      }
    }
    run["cases_planned"] = planned;
    run["cases_done"] = done;
    return m["records_passed"].get<bool>() && all_flags_met(flags) && planned == done;
  }

  json suite_row(std::string_view suite) const override {
    const RunConfig ops = *suite_config(suite);
    return {{"section", "records"}, {"ops", op_names_joined()},
            {"kernels", selected_kernels(ops).size()}, {"dtypes", ops.dtypes.size()}, {"generators", ops.generators.size()},
            {"cases_per_generator", ops.cases_per_generator}, {"cases", normcheck::planned_cases(ops)},  // the corpus: its own count
            {"shapes", ops.shape.rows > 0 && ops.shape.n > 0 ? fmt::format("{} x {}", ops.shape.rows, ops.shape.n)
                                                               : fmt::format("generator shapes, rows*n <= {}", ops.shape.max_elements)}};
  }

  std::string_view replay_option() const override { return "record"; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json report, rec;
    LayerNormCase c;
    std::optional<KernelEntry> kernel;
    oracle::CertifiedLayerNorm ref;
    try {
      report = read_report_file(o.report);
      rec = record_with_worst_case(records(report), index, "record");
      const auto op = parse_op(rec.at("op").get<std::string>());
      const auto storage = parse_dtype(rec.at("storage").get<std::string>());
      if (!op || !storage) throw std::invalid_argument("record names an unknown op or dtype");
      c = per_op_worst_case(report, rec.at("worst_case"), *storage);
      ref = certified_reference(*op, c, is_backward(*op));
      if (!o.dump.empty()) {
        dump_case(o.dump, *op, c, ref, rec, rec.at("worst_case").value("replay", std::string()));
        std::printf("case written to %s (manifest.json, inputs, expected_<output>.npy, exact.json)\n", o.dump.c_str());
      }
      kernel = replay_kernel(report, rec, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    return replay_judged(*kernel, c, ref, rec, index);
  }

 private:
  static int replay_judged(const KernelEntry& k, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const json& rec,
                           int64_t index) {
    const std::string output = rec.at("output").get<std::string>();
    const KernelOutputs first = k.run(c);
    const LayerNormCase moved = c;  // the second call in fresh buffers
    const KernelOutputs second = k.run(moved);
    const auto judged = judge_outputs(k, c, ref, first);
    if (judged.empty() || judged.front().declined) {
      std::printf("the kernel declined the call (unsupported): nothing to replay\n");
      return kExitCheckFailed;
    }
    for (const OutputJudgement& j : judged) {
      if (j.output != output) continue;
      if (!j.kernel_failure.empty()) {
        std::printf("record %lld: %s %s %s, output %s\nkernel failure: %s\n", static_cast<long long>(index),
                    rec.at("op").get<std::string>().c_str(), k.kernel.c_str(), dtype_info(k.storage).name.data(), output.c_str(),
                    j.kernel_failure.c_str());
        return kExitCheckFailed;
      }
      const json& elem = rec.at("worst_case").at("element");
      std::printf("record %lld: %s %s %s(acc %s) %s, output %s\n", static_cast<long long>(index), rec.at("op").get<std::string>().c_str(),
                  k.variant.c_str(), dtype_info(k.storage).name.data(), dtype_info(k.accum).name.data(),
                  rec.at("property").get<std::string>().c_str(), output.c_str());
      std::printf("case: generator %s, seed %llu, rows %lld, n %lld, eps %s; oracle %d bits, certified error %.3g ulp\n",
                  c.generator.c_str(), static_cast<unsigned long long>(c.seed), static_cast<long long>(c.rows),
                  static_cast<long long>(c.n), hexfloat(c.eps).c_str(), ref.precision_bits, ref.max_err_ulps);
      const int recorded = report_replay(j, elem);
      const int repeated = report_repeat(k.op, first, second, c.n);
      return recorded != kExitOk ? recorded : repeated;
    }
    std::fprintf(stderr, "normcheck: error: record output '%s' not produced by its kernel\n", output.c_str());
    return kExitBadInput;
  }
};

}  // namespace

const Section& per_op_section() {
  static const PerOpSection s;
  return s;
}

}  // namespace normcheck::sections
