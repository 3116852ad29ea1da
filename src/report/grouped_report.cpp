#include "report/grouped_report.hpp"

#include "report/record_header.hpp"
#include "report/report.hpp"
#include "suite/failure_json.hpp"

namespace normcheck {
namespace {

nlohmann::json kind_names() {
  nlohmann::json names = nlohmann::json::array();
  for (audit::NormKind k : grouped_suite_kinds()) names.push_back(std::string(audit::kind_name(k)));
  return names;
}

nlohmann::json layout_names() {
  nlohmann::json names = nlohmann::json::array();
  for (audit::Layout l : grouped_suite_layouts()) names.push_back(std::string(audit::layout_name(l)));
  return names;
}

}  // namespace

nlohmann::json grouped_suite_json(const GroupedSuiteConfig& cfg, const GroupedSuiteResult& r, const std::string& report_path) {
  nlohmann::json records = nlohmann::json::array(), dtypes = nlohmann::json::array();
  for (const GroupedRecord& rec : r.records) {
    const std::string replay = replay_command_line(report_path, "grouped-record", static_cast<int64_t>(records.size()));
    const DType accum = dtype_info(rec.storage).default_accum;
    const std::string pair = std::string(dtype_info(rec.storage).name) + "/" + std::string(dtype_info(accum).name) + "]";
    RecordHeader h{"grouped_norm", rec.storage, accum, rec.output,
                   (rec.kind == audit::NormKind::rms_norm ? "GROUPED-RMS-SEQ[" : "GROUPED-TWOPASS-SEQ[") + pair, std::nullopt,
                   record_verdict(rec.kernel_failures, verdict_name(rec.cases, rec.acc, rec.failed(), false)), rec.cases,
                   rec.failed_cases, rec.uncertified_cases, std::nullopt};
    if (cfg.external)  // built-in records stay as they were
      h.external = ExternalRecordIdentity{cfg.external->name, cfg.external->report_only ? Expectation::report_only : Expectation::must_pass,
                                          rec.kernel_failures, rec.first_kernel_failure, std::nullopt};
    nlohmann::json j = record_header_json(h);
    j.update({
        {"kind", std::string(audit::kind_name(rec.kind))},
        {"oracle_precision_bits", rec.oracle_precision_bits},
        {"worst_case",
         {{"case_seed", std::to_string(rec.worst_seed)},
          {"layout", std::string(audit::layout_name(rec.worst_tensor.layout))},
          {"shape", rec.worst_tensor.shape},
          {"element", worst_element_json(rec.worst, 0)},
          {"regenerate", "gen::make_grouped_case(kind, layout, dtype, case_seed)"},
          {"replay", replay}}}});
    j.update(accumulator_json(rec.acc));
    records.push_back(j);
  }
  for (DType d : cfg.dtypes) dtypes.push_back(std::string(dtype_info(d).name));
  return {{"config", {{"dtypes", dtypes}, {"cases_per_layout", cfg.cases_per_layout}, {"seed", std::to_string(cfg.seed)},
                      {"kinds", kind_names()}, {"layouts", layout_names()}}},
          {"passed", grouped_suite_passed(r, cfg.external && cfg.external->report_only)},
          {"cases_planned", r.cases_planned},
          {"cases_done", r.cases_done},
          {"records", records}};
}

}  // namespace normcheck
