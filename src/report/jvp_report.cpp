#include "report/jvp_report.hpp"

#include "report/record_header.hpp"
#include "report/report.hpp"
#include "suite/failure_json.hpp"

namespace normcheck {

nlohmann::json jvp_suite_json(const JvpSuiteConfig& cfg, const JvpSuiteResult& r, const std::string& report_path) {
  nlohmann::json records = nlohmann::json::array();
  for (const JvpRecord& rec : r.records) {
    const std::string pair = std::string(dtype_info(rec.storage).name) + "/" + std::string(dtype_info(rec.accum).name) + "]";
    RecordHeader h{cfg.op, rec.storage, rec.accum, "du", std::string(jvp_op_info(cfg.op).bound_name) + "[" + pair,
                   rec.known_weak ? Expectation::report_only : Expectation::must_pass,
                   record_verdict(rec.kernel_failures, verdict_name(rec.cases, rec.acc, rec.failed(), rec.known_weak)), rec.cases,
                   rec.failed_cases, rec.uncertified_cases, std::nullopt};
    if (cfg.external)
      h.external = ExternalRecordIdentity{rec.kernel, cfg.external->report_only ? Expectation::report_only : Expectation::must_pass,
                                          rec.kernel_failures, rec.first_kernel_failure, std::nullopt};
    nlohmann::json j = record_header_json(h);
    nlohmann::json worst = nullptr;
    if (rec.worst.case_index >= 0)
      worst = {{"case_index", rec.worst.case_index},
               {"generator", rec.generator},
               {"case_seed", std::to_string(rec.worst.case_seed)},
               {"rows", rec.worst.rows},
               {"n", rec.worst.n},
               {"max_elements", cfg.max_elements},
               {"element", worst_element_json(rec.worst.element, rec.worst.n)},
               {"regenerate", "gen::make_jvp_case(generator, dtype, case_seed, max_elements)"},
               {"replay", replay_command_line(report_path, jvp_op_info(cfg.op).replay_option.data(), static_cast<int64_t>(records.size()))}};
    j.update({{"kernel", rec.kernel},
              {"known_weak", rec.known_weak},
              {"property", "accuracy/" + rec.generator},
              {"oracle",
               {{"precision_bits", rec.oracle_precision_bits},
                {"certified_max_err_ulps", rec.oracle_max_err_ulps},
                {"required_max_err_ulps", kRequiredUlpFraction},
                {"cases_by_precision_bits", oracle_levels_json(rec.oracle_levels)}}},
              {"worst_case", worst}});
    j.update(accumulator_json(rec.acc));
    records.push_back(j);
  }
  nlohmann::json s = suite_section_json({cfg.dtypes, cfg.generators, cfg.cases_per_generator, cfg.seed,
                                         jvp_suite_passed(r, cfg.external && cfg.external->report_only), r.cases_planned, r.cases_done},
                                        std::move(records), nlohmann::json::array());
  s["config"]["max_elements"] = cfg.max_elements;
  return s;
}

}  // namespace normcheck
