#pragma once
/// Views of a finished report for people and CI: the failing records explained in the terminal, JUnit
/// XML (`run --junit FILE`: one testsuite per section, one testcase per record, a <failure> with the
/// worst element where the record failed; GitLab, Jenkins and GitHub test reporters show it), and the
/// one-line summary (`run --summary-json`).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck {

/// "layernorm_forward/y two_pass f32 (acc f32) accuracy/normal" and the like, from whatever identity
/// fields the record has.
std::string record_name(const nlohmann::json& record);

/// Why a record failed, in lines: verdict and failed cases, the first kernel failure, the worst
/// element (case, seed, shape, row/col, kernel vs exact in decimal and hexfloat, ULPs, bound, ratio)
/// and the replay command.
std::string record_failure_text(const nlohmann::json& record);

/// A testsuite added after the report's own (the nightly comparison's, nightly/diff_outputs.hpp): a case
/// with a failure_type fails.
struct JunitCase {
  std::string name, failure_type{}, failure_message{}, text{};
};
struct JunitSuite {
  std::string name;
  std::vector<JunitCase> cases;
};

/// The XML text of `report` (schema reports/schema/report.v1.schema.json), then the `extra` suites.
std::string junit_xml(const nlohmann::json& report, const std::vector<JunitSuite>& extra = {});

/// Records of every section by outcome, counted the same way wherever counts are printed (run, merge,
/// render, --summary-json): judged excludes not_run; failing counts
/// must-pass records with a failing verdict (report/verdicts.hpp), flagged the known-weak kernels
/// caught as expected.
struct RecordCounts {
  int64_t records = 0, judged = 0, not_run = 0, failing = 0, failing_report_only = 0, flagged = 0;
  int64_t looser_contract = 0;  ///< external kernels within the Welford contract, not the two-pass one (not failing)
  int64_t declined_cases = 0;  ///< cases an external kernel declined (unsupported), over every record
};
RecordCounts record_counts(const nlohmann::json& report);
/// "240 records: 230 judged, 0 failed, 12 known-weak flagged (expected to fail), 10 not run (...)".
std::string record_counts_text(const RecordCounts& c);

/// Cases done and planned over every section (the per-op section's are in "run").
struct CaseTotals {
  int64_t done = 0, planned = 0;
};
CaseTotals case_totals(const nlohmann::json& report);

/// The closing lines of run and merge: "report: PATH (PASSED, 1912/1912 cases)" and the record counts.
std::string run_result_text(const nlohmann::json& report, const std::string& report_path);

/// One line summarising `report`: {"passed", "complete", "cases_done", "cases_planned", "records",
/// "judged", "not_run", "failing", "failing_report_only", "flagged", "declined_cases", "report"}; cases
/// over every section (`run --summary-json`).
nlohmann::json summary_line(const nlohmann::json& report, const std::string& report_path);

/// The failing must-pass records of every section, most severe first (kernel failures, then by the
/// worst element's error/bound), at most `cap`: for each, its identity, case counts, the worst
/// element (case, seed, row/col, kernel vs exact in decimal and hexfloat, ULPs, bound, ratio) and the
/// replay command. Empty when nothing failed.
std::string failing_records_text(const nlohmann::json& report, size_t cap);

}  // namespace normcheck
