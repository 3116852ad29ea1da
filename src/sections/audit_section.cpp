// The axis-audit section ("axis_audit"): correct and planted wrong-axis kernels probed and their
// normalization groups inferred; with an external grouped-norm kernel (ABI v2 plugin or serve),
// that kernel probed on every standard case whose kind it implements. One shard unit, no cases.
#include "audit/audit_report.hpp"
#include "sections/external_grouped.hpp"
#include "sections/merge_rules.hpp"
#include "report/terminal_summary.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/unit_timing.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "axis_audit";

/// The external kernel probed on every standard case and dtype it accepts (a declined call skips
/// the case; a failed call is recorded with its message).
std::vector<audit::AuditRecord> external_audits(const GroupedExternalKernel& k, uint64_t seed) {
  std::vector<audit::AuditRecord> out;
  for (DType dt : audit::standard_audit_dtypes())
    for (const auto& [t, n] : audit::standard_audit_cases()) {
      try {
        audit::AuditRecord r = audit::run_audit_with(t, n, grouped_audit_kernel(k, t, n, dt), k.name, dt, seed);
        if (const auto affine = grouped_affine_audit_kernel(k, t, n, dt)) audit::add_affine_audit(r, *affine, seed);
        out.push_back(std::move(r));
      } catch (const KernelDeclined&) {
      } catch (const std::exception& e) {
        audit::AuditRecord r = audit::run_audit_with(t, n, audit::AuditKernel(), k.name, dt, seed);
        r.failure = e.what();
        out.push_back(std::move(r));
      }
    }
  return out;
}

class AuditRun final : public SectionRun {
 public:
  AuditRun(uint64_t seed, std::optional<GroupedExternalKernel> external) : seed_(seed), external_(std::move(external)) {}
  int64_t shard_units() const override { return 1; }
  void set_shard(const ShardSpec& shard) override {
    here_ = shard.owns(0);
    unit_ = shard.first_unit;
  }
  int64_t planned_cases() const override { return 0; }
  std::vector<double> unit_costs() const override { return std::vector<double>(static_cast<size_t>(shard_units()), 0.02); }
  void run(const std::string&) override {
    if (!here_) return;
    const UnitTimer timer(unit_);
    audits_ = external_ ? external_audits(*external_, seed_) : audit::standard_audits(seed_);
  }
  int64_t cases_done() const override { return 0; }
  bool passed() const override { return !here_ || (audits_ && (report_only() || audit::audits_passed(*audits_))); }
  int64_t judged_external_elements() const override {
    int64_t probes = 0;
    if (audits_ && external_)
      for (const audit::AuditRecord& r : *audits_) probes += r.inferred ? r.inferred->probes : !r.failure.empty();
    return probes;
  }
  bool complete() const override { return !here_ || audits_.has_value(); }
  void write(json& report, const std::string&) const override {
    if (!audits_) return;
    json records = json::array();
    for (const audit::AuditRecord& r : *audits_) records.push_back(audit::audit_record_json(r));
    report[std::string(kKey)] = {{"passed", passed()}, {"records", records}};
    if (external_)
      report[std::string(kKey)].update({{"kernel", external_->name}, {"expectation", report_only() ? "report_only" : "must_pass"}});
  }
  void print_summary() const override {
    if (audits_) print_audit_summary(*audits_);
  }

 private:
  bool report_only() const { return external_ && external_->report_only; }
  uint64_t seed_;
  std::optional<GroupedExternalKernel> external_;
  bool here_ = true;
  int64_t unit_ = 0;  // the audit's one shard unit
  std::optional<std::vector<audit::AuditRecord>> audits_;
};

class AuditSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }
  bool diffed() const override { return false; }  // as_expected per probe, no ULP metrics

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    const uint64_t seed = in.options.seed.value_or(in.common.seed);
    if (in.external) {
      std::optional<GroupedExternalKernel> k = external_grouped_kernel(in, kKey);
      return k ? std::make_unique<AuditRun>(seed, std::move(k)) : nullptr;
    }
    if (!selected_whole_or_named(in, kKey)) return nullptr;
    return std::make_unique<AuditRun>(seed, std::nullopt);
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string&, json& m) const override {
    m[std::string(kKey)] = nightly::pick_whole(nightly::section_parts(shards, std::string(kKey)), std::string(kKey));
    return m[std::string(kKey)].is_null() || m[std::string(kKey)].value("passed", false);
  }

  json suite_row(std::string_view) const override {
    return {{"section", kKey}, {"ops", kKey}, {"kernels", "correct+planted"}, {"dtypes", 2}, {"generators", "tables"},
            {"cases_per_generator", 1}, {"cases", 0}, {"shapes", "(2,3), (2,3,4,4), NHWC, sequence"}};
  }
};

}  // namespace

const Section& audit_section() {
  static const AuditSection s;
  return s;
}

}  // namespace normcheck::sections
