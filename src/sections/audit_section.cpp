// The axis-audit section ("axis_audit"): correct and planted wrong-axis kernels probed and their
// normalization groups inferred; one shard unit, no cases counted.
#include "audit/audit_report.hpp"
#include "nightly/merge_rules.hpp"
#include "report/terminal_summary.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "axis_audit";

class AuditRun final : public SectionRun {
 public:
  explicit AuditRun(uint64_t seed) : seed_(seed) {}
  int64_t shard_units() const override { return 1; }
  void set_shard(const ShardSpec& shard) override { here_ = shard.owns(0); }
  int64_t planned_cases() const override { return 0; }
  void run(const std::string&) override {
    if (here_) audits_ = audit::standard_audits(seed_);
  }
  int64_t cases_done() const override { return 0; }
  bool passed() const override { return !here_ || (audits_ && audit::audits_passed(*audits_)); }
  bool complete() const override { return !here_ || audits_.has_value(); }
  void write(json& report, const std::string&) const override {
    if (!audits_) return;
    json records = json::array();
    for (const audit::AuditRecord& r : *audits_) records.push_back(audit::audit_record_json(r));
    report[std::string(kKey)] = {{"passed", audit::audits_passed(*audits_)}, {"records", records}};
  }
  void print_summary() const override {
    if (audits_) print_audit_summary(*audits_);
  }

 private:
  uint64_t seed_;
  bool here_ = true;
  std::optional<std::vector<audit::AuditRecord>> audits_;
};

class AuditSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }
  bool diffed() const override { return false; }  // as_expected per probe, no ULP metrics

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    if (!builtin_only(in, kKey) || !selected_whole_or_named(in, kKey)) return nullptr;
    return std::make_unique<AuditRun>(in.options.seed.value_or(in.common.seed));
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
