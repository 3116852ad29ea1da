#pragma once
/// The JSON report (schema: reports/schema/report.v1.schema.json).
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_input.hpp"
#include "io/output_files.hpp"
#include "report/verdicts.hpp"
#include "suite/runner.hpp"

namespace normcheck {

inline constexpr const char* kReportSchemaVersion = "1.0.0";

struct RunMetadata {
  std::string start_time, end_time;
  std::string command_line;
};

/// The report of a run before its sections: schema, tool, run (metadata; counts of no case yet),
/// config, and an empty per-op section.
nlohmann::json report_header(const RunConfig& cfg, const RunMetadata& meta);

/// Writes the per-op section (top-level records, records_passed, flag_checks, and the run's counts
/// and oracle precision); worst cases are regenerated from their seeds to embed their inputs.
void write_per_op_section(nlohmann::json& report, const RunConfig& cfg, const RunResult& r, const std::string& report_path);




/// The configuration a report was produced with (for regenerating worst cases).
RunConfig config_from_report(const nlohmann::json& report);

/// Text form of a record's identity, e.g. "layernorm_forward/y two_pass f16(acc f32) accuracy/normal".
std::string record_label(const RecordKey& k);

/// The metrics of an accumulator as report fields (max/RMS ULP, normwise, bound ratio, counts).
/// Per-case points of a record (case index, rows, n, max ULP, max err/bound), as parallel arrays.
nlohmann::json case_points_json(const std::vector<CasePoint>& points);

nlohmann::json accumulator_json(const ErrorAccumulator& a);

/// Cases per oracle cascade level, keyed by its precision in bits ("53": the double ball; 168,
/// 500, 1330: MPFI).
nlohmann::json oracle_levels_json(const std::map<int, int64_t>& levels);

/// "not_run", "uncertified", "pass", "flagged" (a known-weak kernel failed) or "fail".
/// The bias statistic of a record (docs/bounds.md section 16): z, threshold, flagged, elements, groups.
nlohmann::json bias_json(const BiasAccumulator& b);

std::string verdict_name(int64_t cases, const ErrorAccumulator& a, bool failed, bool known_weak);


const char* expectation_name(Expectation e);

nlohmann::json flag_checks_json(const std::vector<FlagCheck>& checks);

/// The common part of a suite section (block, contraction): config (dtypes, generators, cases
/// per generator, seed), verdict, progress, records and comparison rows.
struct SuiteSection {
  std::vector<DType> dtypes;
  std::vector<std::string> generators;
  int cases_per_generator;
  uint64_t seed;
  bool passed;
  int64_t cases_planned, cases_done;
};
nlohmann::json suite_section_json(const SuiteSection& s, nlohmann::json records, nlohmann::json comparison);

/// "normcheck replay --report <path, shell-quoted> --<option> <index>": the command a record prints.
std::string replay_command_line(const std::string& report_path, const char* option, int64_t index);

/// ISO 8601 UTC timestamp of now.
std::string utc_now();

}  // namespace normcheck
