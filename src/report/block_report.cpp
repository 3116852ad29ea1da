#include "report/block_report.hpp"

#include "report/record_header.hpp"

#include <cmath>

#include "bounds/bounds.hpp"
#include "generators/block_generators.hpp"
#include "report/shard_items.hpp"
#include "io/case_json.hpp"
#include "suite/failure_json.hpp"
#include "report/report.hpp"
#include "io/json_input.hpp"

namespace normcheck {
namespace {

nlohmann::json block_worst_json(const BlockRecord& r, size_t index, const std::string& report_path) {
  if (r.worst.case_index < 0) return nullptr;
  nlohmann::json j = block_case_to_json(gen::make_rms_block_case(r.generator, r.storage, r.worst.case_seed));
  j["case_index"] = r.worst.case_index;
  const int64_t row_length = r.output == "y" ? r.worst.m : r.output == "dx" || r.output == "dw" ? r.worst.n : 0;
  j["element"] = worst_element_json(r.worst.element, row_length);
  if (r.output == "dx") j["element"]["cancellation_factor"] = json_number(r.worst.cancellation);
  j["replay"] = replay_command_line(report_path, "block-record", static_cast<int64_t>(index));
  return j;
}

nlohmann::json block_record_json(const BlockRecord& r, size_t index, const std::string& report_path, bool sharded) {
  RecordHeader h{"linear_rmsnorm", r.storage, r.accum, r.output, r.bound_id, r.expectation,
                 record_verdict(r.kernel_failures, verdict_name(r.cases, r.acc, r.failed(), r.known_weak)), r.cases, r.failed_cases,
                 r.uncertified_cases, std::nullopt};
  if (r.kernel != "builtin")  // built-in records stay as they were
    h.external = ExternalRecordIdentity{r.kernel, std::nullopt, r.kernel_failures, r.first_kernel_failure, std::nullopt};
  nlohmann::json j = record_header_json(h);
  j.update({{"variant", r.variant},
                      {"property", "accuracy/" + r.generator},
                      {"known_weak", r.known_weak},
                      {"regimes",
                       {{"worst_case", regime_names(r.acc.worst_regime())},
                        {"cancellation_elements", r.acc.regime_count(0)},
                        {"overflow_elements", r.acc.regime_count(1)},
                        {"underflow_elements", r.acc.regime_count(2)}}},
                      {"oracle",
                       {{"precision_bits", r.oracle_precision_bits},
                        {"certified_max_err_ulps", r.oracle_max_err_ulps},
                        {"required_max_err_ulps", kRequiredUlpFraction},
                        {"cases_by_precision_bits", oracle_levels_json(r.oracle_levels)}}},
                      {"worst_case", block_worst_json(r, index, report_path)}});
  j.update(accumulator_json(r.acc));
  j["points"] = case_points_json(r.points);
  if (sharded) {  // what merge folds the per-dtype comparison rows from, exactly
    j["acc_bytes"] = nightly::accumulator_bytes(r.acc);
    j["worst_cancellation"] = hexfloat(r.worst.cancellation);
  }
  return j;
}

nlohmann::json comparison_json(const std::vector<BlockComparisonRow>& rows) {
  nlohmann::json comparison = nlohmann::json::array();
  for (const BlockComparisonRow& row : rows) {
    nlohmann::json j = {{"dtype", std::string(dtype_info(row.dtype).name)},
                        {"variant", row.variant},
                        {"output", row.output},
                        {"cancellation_at_worst_ratio", json_number(row.cancellation_at_worst)}};
    j.update(accumulator_json(row.acc));
    comparison.push_back(j);
  }
  return comparison;
}

}  // namespace

nlohmann::json block_comparison_from_records(const nlohmann::json& records) {
  BlockSuiteResult r;
  for (const nlohmann::json& rec : records) {
    const nightly::ShardRecordAccumulator a = nightly::shard_record_accumulator(rec, "rms_block");
    BlockRecord b;
    b.storage = a.storage;
    b.acc = a.acc;
    b.variant = rec.at("variant").get<std::string>();
    b.output = rec.at("output").get<std::string>();
    if (a.ran) {
      if (!rec.contains("worst_cancellation")) throw std::invalid_argument("a rms_block shard record has no worst_cancellation");
      b.worst.cancellation = parse_hexfloat(rec.at("worst_cancellation").get<std::string>());
    }
    r.records.push_back(std::move(b));
  }
  return comparison_json(block_comparison(r));
}

nlohmann::json block_suite_json(const BlockSuiteConfig& cfg, const BlockSuiteResult& r, const std::string& report_path) {
  nlohmann::json records = nlohmann::json::array();
  for (size_t i = 0; i < r.records.size(); ++i) records.push_back(block_record_json(r.records[i], i, report_path, cfg.shard.sharded()));
  nlohmann::json comparison = comparison_json(block_comparison(r));
  nlohmann::json j = suite_section_json({cfg.dtypes, cfg.generators, cfg.cases_per_generator, cfg.seed,
                                         block_suite_passed(r), r.cases_planned, r.cases_done},
                                        std::move(records), std::move(comparison));
  j["config"]["variants"] = cfg.variants;
  j["flag_checks"] = flag_checks_json(r.flag_checks);
  j["records_passed"] = block_records_passed(r);
  return j;
}

BlockSuiteConfig block_config_from_json(const nlohmann::json& section) {
  const auto& c = section.at("config");
  BlockSuiteConfig cfg;
  for (const auto& d : c.at("dtypes")) {
    const auto dt = parse_dtype(d.get<std::string>());
    if (!dt) throw std::invalid_argument("unknown dtype in block config");
    cfg.dtypes.push_back(*dt);
  }
  cfg.generators = c.at("generators").get<std::vector<std::string>>();
  cfg.variants = c.at("variants").get<std::vector<std::string>>();
  cfg.cases_per_generator = c.at("cases_per_generator").get<int>();
  cfg.seed = parse_decimal_u64(c.at("seed").get<std::string>(), "seed");
  return cfg;
}

}  // namespace normcheck
