// The QR-contraction section ("qr_contraction"): the contracted block (R, D, c) judged against its
// bound (the built-in kernel, or one external kernel: ABI v2 plugin or serve), the original
// affine -> LayerNorm -> affine block measured beside it.
#include <cstdio>

#include <fmt/format.h>

#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve_contraction.hpp"
#include "sections/merge_rules.hpp"
#include "generators/contraction_generators.hpp"
#include "report/schema_check.hpp"
#include "report/contraction_report.hpp"
#include "report/report.hpp"
#include "report/terminal_summary.hpp"
#include "sections/replay_external.hpp"
#include "sections/replay_support.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/contraction_judge.hpp"
#include "suite/suites.hpp"
#include "io/json_input.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "qr_contraction";

class ContractionRun final : public SectionRun {
 public:
  explicit ContractionRun(ContractionSuiteConfig cfg) : cfg_(std::move(cfg)) {}
  /// A unit is a (dtype, seed category): merge folds the per-dtype comparison rows again (acc_bytes).
  int64_t shard_units() const override { return static_cast<int64_t>(cfg_.dtypes.size() * cfg_.generators.size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  double seconds_per_case() const override { return 3.5e-3; }  // measured on the default suite (docs/nightly.md)
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string& journal) override {
    cfg_.journal_path = journal;
    result_ = run_contraction_suite(cfg_);
  }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && contraction_suite_passed(*result_, cfg_.external && cfg_.external->report_only); }
  int64_t judged_external_elements() const override {
    int64_t n = 0;
    if (result_ && cfg_.external)
      for (const ContractionRecord& rec : result_->records)
        if (rec.form == "contracted") n += rec.acc.count() + rec.kernel_failures;
    return n;
  }
  bool complete() const override { return result_ && !result_->interrupted; }
  void write(json& report, const std::string& report_path) const override {
    if (result_) report[std::string(kKey)] = contraction_suite_json(cfg_, *result_, report_path);
  }
  void print_summary() const override {
    if (result_) print_contraction_summary(*result_);
  }

 private:
  ContractionSuiteConfig cfg_;
  std::optional<ContractionSuiteResult> result_;
};

/// The external contracted-block kernel: an ABI v2 plugin's (NC_CONTRACTED_BLOCK) or the serve
/// command's (op contracted_block), one at a time; nullopt when --ops leaves the section out.
std::optional<ContractionExternalKernel> external_contraction(const PlanInputs& in) {
  return one_external_kernel<ContractionExternalKernel>(
      in, kKey, "NC_CONTRACTED_BLOCK", [](const external::PluginInfo& p) { return !p.contraction_dtypes.empty(); },
      external::plugin_contraction_kernel, external::serve_contraction_kernel);
}

/// The record's case, regenerated from its seed and checked against the recorded shapes.
ContractionCase contraction_case_of(const json& rec) {
  const json& wc = rec.at("worst_case");
  const auto dt = parse_dtype(rec.at("storage").get<std::string>());
  if (!dt) throw std::invalid_argument("unknown dtype in contraction record");
  ContractionCase c = gen::make_contraction_case(wc.at("generator").get<std::string>(), *dt, parse_decimal_u64(wc.at("case_seed").get<std::string>(), "case_seed"));
  if (c.block.d != wc.at("d").get<int64_t>() || c.block.n != wc.at("n").get<int64_t>() || c.block.m != wc.at("m").get<int64_t>() ||
      c.rows != wc.at("rows").get<int64_t>())
    throw std::invalid_argument("regenerated case does not match the recorded shapes (edited report or other build)");
  return c;
}

class ContractionSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const RunOptions& o = in.options;
    ContractionSuiteConfig cfg = *suite_contraction_config(o.suite);
    cfg.dtypes = in.common.dtypes;
    if (!o.contraction_generators.empty()) {
      for (const std::string& g : o.contraction_generators)
        if (!gen::is_contraction_generator(g)) throw PlanError(fmt::format("unknown contraction generator '{}' (see normcheck list)", g));
      cfg.generators = o.contraction_generators;
    }
    if (o.seed) cfg.seed = *o.seed;
    if (o.contraction_cases) cfg.cases_per_generator = *o.contraction_cases;
    cfg.threads = o.threads;
    if (in.external) {
      cfg.external = external_contraction(in);
      return cfg.external && cfg.cases_per_generator > 0 ? std::make_unique<ContractionRun>(std::move(cfg)) : nullptr;
    }
    if ((o.ops.empty() || in.names_any(ops())) && o.variants.empty() && cfg.cases_per_generator > 0)
      return std::make_unique<ContractionRun>(std::move(cfg));
    return nullptr;
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    const std::vector<const json*> parts = nightly::section_parts(shards, std::string(kKey));
    nightly::require_every_shard(parts, shards, std::string(kKey));
    m[std::string(kKey)] = nightly::merge_suite_section(parts, shards, out_path, false, contraction_comparison_from_records);
    return m[std::string(kKey)].value("passed", false);
  }

  json suite_row(std::string_view suite) const override {
    const ContractionSuiteConfig qr = *suite_contraction_config(suite);
    return {{"section", kKey}, {"ops", kKey}, {"kernels", 2}, {"dtypes", qr.dtypes.size()}, {"generators", qr.generators.size()},
            {"cases_per_generator", qr.cases_per_generator},
            {"cases", static_cast<int64_t>(qr.dtypes.size() * qr.generators.size()) * qr.cases_per_generator},
            {"shapes", "the seed's categories"}};
  }

  std::string_view replay_option() const override { return "contraction-record"; }

  int replay(const ReplayOptions& o, int64_t index) const override {
    json rec;
    ContractionCase c;
    std::optional<ContractedKernel> kernel;
    try {
      if (!o.dump.empty()) throw std::invalid_argument("--dump writes per-op records (--record) only; a contraction case is in the report's worst_case");
      const json report = read_report_file(o.report);
      rec = record_with_worst_case(records(report), index, "contraction record");
      c = contraction_case_of(rec);
      if (rec.contains("kernel")) kernel = replay_contraction_kernel(report, rec, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.report, e).c_str());
      return kExitBadInput;
    }
    const ContractionJudgement j = judge_contraction(c, kernel ? &*kernel : nullptr);
    if (j.skipped) {
      std::fprintf(stderr, "normcheck: error: the kernel declined the replayed case\n");
      return kExitCheckFailed;
    }
    const bool contracted = rec.at("form") == "contracted", is_f = rec.at("output") == "f";
    const OutputJudgement& out = contracted ? (is_f ? j.f : j.dx) : (is_f ? j.original_f : j.original_dx);
    std::printf("contraction record %lld: %s %s %s, output %s; case: generator %s, seed %llu, d %lld, n %lld, m %lld, rows %lld\n",
                static_cast<long long>(index), rec.at("form").get<std::string>().c_str(), dtype_info(c.dtype).name.data(),
                rec.at("property").get<std::string>().c_str(), out.output.c_str(), c.generator.c_str(),
                static_cast<unsigned long long>(c.seed), static_cast<long long>(c.block.d), static_cast<long long>(c.block.n),
                static_cast<long long>(c.block.m), static_cast<long long>(c.rows));
    std::printf("kernel %s; oracle %d bits, certified error %.3g ulp\n", rec.value("kernel", std::string("builtin")).c_str(),
                j.reference.precision_bits, j.reference.max_err_ulps);
    if (!out.kernel_failure.empty()) {
      std::printf("kernel failure: %s\n", out.kernel_failure.c_str());
      return kExitCheckFailed;
    }
    // Per case: the element with the largest err/bound (contracted) or ULP error (original).
    return report_replay(out, rec.at("worst_case").at("element"));
  }
};

}  // namespace

const Section& contraction_section() {
  static const ContractionSection s;
  return s;
}

}  // namespace normcheck::sections
