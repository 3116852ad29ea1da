// The grouped-normalization section ("grouped_norm"): batch, group, instance, channel-layer norm,
// layer norm and RMSNorm over trailing axes on NCHW, NHWC and sequence layouts, the built-in kernel
// or one external kernel (ABI v2 plugin or serve).
#include <cstdio>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/grouped_report.hpp"
#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve_grouped.hpp"
#include "sections/merge_rules.hpp"
#include "generators/grouped_generators.hpp"
#include "report/schema_check.hpp"
#include "report/report.hpp"
#include "sections/replay_external.hpp"
#include "sections/replay_support.hpp"
#include "suite/grouped_judge.hpp"
#include "report/terminal_summary.hpp"
#include "sections/external_grouped.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"
#include "io/json_input.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "grouped_norm";

class GroupedRun final : public SectionRun {
 public:
  explicit GroupedRun(GroupedSuiteConfig cfg) : cfg_(std::move(cfg)) {}
  int64_t shard_units() const override { return static_cast<int64_t>(cfg_.dtypes.size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  double seconds_per_case() const override { return 1.6e-4; }  // measured on the default suite (docs/nightly.md)
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string&) override { result_ = run_grouped_suite(cfg_); }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && grouped_suite_passed(*result_, cfg_.external && cfg_.external->report_only); }
  bool complete() const override { return result_ && !result_->interrupted; }
  int64_t judged_external_elements() const override {
    int64_t n = 0;
    if (result_ && cfg_.external)
      for (const GroupedRecord& rec : result_->records) n += rec.acc.count() + rec.kernel_failures;
    return n;
  }
  void write(json& report, const std::string& report_path) const override {
    if (result_) report[std::string(kKey)] = grouped_suite_json(cfg_, *result_, report_path);
  }
  void print_summary() const override {
    if (result_) print_grouped_summary(*result_);
  }

 private:
  GroupedSuiteConfig cfg_;
  std::optional<GroupedSuiteResult> result_;
};

/// The record's worst case, regenerated from kind, layout, dtype and seed, checked against the recorded shape.
GroupedNormCase grouped_case_of(const json& rec) {
  const json& wc = rec.at("worst_case");
  const auto kind = audit::parse_kind(rec.at("kind").get<std::string>());
  const auto layout = audit::parse_layout(wc.at("layout").get<std::string>());
  const auto dt = parse_dtype(rec.at("storage").get<std::string>());
  if (!kind || !layout || !dt) throw std::invalid_argument("grouped record names an unknown kind, layout or dtype");
  GroupedNormCase c = gen::make_grouped_case(*kind, *layout, *dt, parse_decimal_u64(wc.at("case_seed").get<std::string>(), "case_seed"));
  if (c.tensor.shape != wc.at("shape").get<std::vector<int64_t>>())
    throw std::invalid_argument("regenerated case does not match the recorded shape (edited report or other build)");
  return c;
}

class GroupedSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    GroupedSuiteConfig cfg = *suite_grouped_config(o.suite);
    cfg.dtypes = in.common.dtypes;
    if (o.seed) cfg.seed = *o.seed;
    if (o.grouped_cases) cfg.cases_per_layout = *o.grouped_cases;
    cfg.threads = o.threads;
    if (in.external) {
      cfg.external = external_grouped_kernel(in, kKey);
      if (!cfg.external) return nullptr;
      return std::make_unique<GroupedRun>(std::move(cfg));
    }
    return selected_whole_or_named(in, kKey) ? std::make_unique<GroupedRun>(std::move(cfg)) : nullptr;
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    const std::vector<const json*> parts = nightly::section_parts(shards, std::string(kKey));
    nightly::require_every_shard(parts, shards, std::string(kKey));
    m[std::string(kKey)] = nightly::merge_dtype_ordered(parts, shards, out_path);
    return m[std::string(kKey)].value("passed", false);
  }

  json suite_row(std::string_view suite) const override {
    const GroupedSuiteConfig g = *suite_grouped_config(suite);
    std::vector<std::string> kinds;
    for (audit::NormKind k : grouped_suite_kinds()) kinds.emplace_back(audit::kind_name(k));
    const auto layouts = static_cast<int64_t>(grouped_suite_layouts().size());
    return {{"section", kKey}, {"ops", fmt::format("{}", fmt::join(kinds, ", "))}, {"kernels", kinds.size()}, {"dtypes", g.dtypes.size()},
            {"generators", layouts}, {"cases_per_generator", static_cast<int64_t>(kinds.size()) * g.cases_per_layout},
            {"cases", planned_cases(g)},
            {"shapes", "NCHW, NHWC, sequence"}};
  }

  std::string_view replay_option() const override { return "grouped-record"; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json rec;
    GroupedNormCase c;
    std::function<GroupedOutputs(const GroupedNormCase&)> kernel = [](const GroupedNormCase& gc) { return run_grouped_kernel(gc); };
    try {
      if (!o.dump.empty()) throw std::invalid_argument("--dump writes per-op records (--record) only; a grouped case is regenerated from its seed");
      const json report = read_report_file(o.report);
      rec = record_with_worst_case(records(report), index, "grouped record");
      c = grouped_case_of(rec);
      if (rec.contains("kernel")) kernel = replay_grouped_kernel(report, rec, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    const GroupedJudgement j = judge_grouped(c, kernel(c));
    const std::string output = rec.at("output").get<std::string>();
    for (const OutputJudgement& out : j.outputs) {
      if (out.output != output) continue;
      std::printf("grouped record %lld: %s %s %s, output %s; case: layout %s, shape %s, seed %llu; oracle %d bits\n",
                  static_cast<long long>(index), rec.at("kind").get<std::string>().c_str(), rec.value("kernel", std::string("builtin")).c_str(),
                  dtype_info(c.dtype).name.data(), output.c_str(), audit::layout_name(c.tensor.layout).data(),
                  fmt::format("{}", fmt::join(c.tensor.shape, "x")).c_str(), static_cast<unsigned long long>(c.seed),
                  j.reference.precision_bits);
      if (!out.kernel_failure.empty()) {
        std::printf("kernel failure: %s\n", out.kernel_failure.c_str());
        return kExitCheckFailed;
      }
      return report_replay(out, rec.at("worst_case").at("element"));
    }
    std::fprintf(stderr, "normcheck: error: grouped record output '%s' is not an output of its kernel\n", output.c_str());
    return kExitBadInput;
  }
};

}  // namespace

const Section& grouped_section() {
  static const GroupedSection s;
  return s;
}

}  // namespace normcheck::sections
