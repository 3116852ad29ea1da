#include "report/contraction_report.hpp"

#include <algorithm>

#include "report/shard_items.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"
#include "report/record_header.hpp"
#include "report/report.hpp"

namespace normcheck {
namespace {

nlohmann::json record_json(const ContractionSuiteConfig& cfg, const ContractionRecord& r, size_t index, const std::string& report_path) {
  nlohmann::json worst = nullptr;
  // A record whose every case is a kernel failure has a case but no element (index -1): no worst case,
  // as the per-op records, rather than element.col = -1 against the schema (issue 48, M1).
  if (r.worst.case_index >= 0 && r.worst.element.index >= 0)
    worst = {{"case_index", r.worst.case_index},
             {"generator", r.generator},
             {"case_seed", std::to_string(r.worst.case_seed)},
             {"d", r.worst.d},
             {"n", r.worst.n},
             {"m", r.worst.m},
             {"rows", r.worst.rows},
             {"element", worst_element_json(r.worst.element, r.output == "f" ? r.worst.m : r.worst.d)},
             {"replay", replay_command_line(report_path, "contraction-record", static_cast<int64_t>(index))}};
  RecordHeader h{"qr_contraction", r.storage, r.accum, r.output, r.bound_id, r.expectation,
                 record_verdict(r.kernel_failures, verdict_name(r.cases, r.acc, r.failed(), false)), r.cases, r.failed_cases,
                 r.uncertified_cases, std::nullopt};
  if (cfg.external && r.form == "contracted")  // built-in records stay as they were
    h.external = ExternalRecordIdentity{cfg.external->name, cfg.external->report_only ? Expectation::report_only : Expectation::must_pass,
                                        r.kernel_failures, r.first_kernel_failure, std::nullopt};
  nlohmann::json j = record_header_json(h);
  j.update({{"form", r.form},
                      {"property", "accuracy/" + r.generator},
                      {"rejected_cases", r.rejected_cases},
                      {"coefficient_error", {{"max_abs_dD_over_max_abs_D", r.max_coefficient_rel_D},
                                             {"max_abs_dG_over_max_abs_TtT", r.max_coefficient_rel_G}}},
                      {"oracle",
                       {{"precision_bits", r.oracle_precision_bits},
                        {"certified_max_err_ulps", r.oracle_max_err_ulps},
                        {"required_max_err_ulps", kRequiredUlpFraction}}},
                      {"worst_case", worst}});
  j.update(accumulator_json(r.acc));
  if (cfg.shard.sharded()) j["acc_bytes"] = nightly::accumulator_bytes(r.acc);  // merge folds the per-dtype rows from it
  return j;
}

nlohmann::json comparison_json(const std::vector<ContractionComparisonRow>& rows) {
  nlohmann::json comparison = nlohmann::json::array();
  for (const ContractionComparisonRow& row : rows) {
    nlohmann::json j = {{"dtype", std::string(dtype_info(row.dtype).name)}, {"form", row.form}, {"output", row.output}};
    j.update(accumulator_json(row.acc));
    comparison.push_back(j);
  }
  return comparison;
}

}  // namespace

std::vector<ContractionComparisonRow> contraction_comparison(const ContractionSuiteResult& r) {
  std::vector<ContractionComparisonRow> rows;
  for (const ContractionRecord& rec : r.records) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const ContractionComparisonRow& row) {
      return row.dtype == rec.storage && row.form == rec.form && row.output == rec.output;
    });
    if (it == rows.end()) it = rows.insert(rows.end(), {rec.storage, rec.form, rec.output, {}});
    it->acc.merge(rec.acc);
  }
  return rows;
}

nlohmann::json contraction_suite_json(const ContractionSuiteConfig& cfg, const ContractionSuiteResult& r,
                                      const std::string& report_path) {
  nlohmann::json records = nlohmann::json::array();
  for (size_t i = 0; i < r.records.size(); ++i) records.push_back(record_json(cfg, r.records[i], i, report_path));
  nlohmann::json comparison = comparison_json(contraction_comparison(r));
  return suite_section_json({cfg.dtypes, cfg.generators, cfg.cases_per_generator, cfg.seed, contraction_suite_passed(r, cfg.external && cfg.external->report_only),
                             r.cases_planned, r.cases_done},
                            std::move(records), std::move(comparison));
}

nlohmann::json contraction_comparison_from_records(const nlohmann::json& records) {
  ContractionSuiteResult r;
  for (const nlohmann::json& rec : records) {
    const nightly::ShardRecordAccumulator a = nightly::shard_record_accumulator(rec, "qr_contraction");
    ContractionRecord c;
    c.storage = a.storage;
    c.acc = a.acc;
    c.form = rec.at("form").get<std::string>();
    c.output = rec.at("output").get<std::string>();
    r.records.push_back(std::move(c));
  }
  return comparison_json(contraction_comparison(r));
}

}  // namespace normcheck
