#pragma once
/// Views of a finished report for people and CI: the failing records explained in the terminal, JUnit
/// XML (`run --junit FILE`: one testsuite per section, one testcase per record, a <failure> with the
/// worst element where the record failed; GitLab, Jenkins and GitHub test reporters show it), and the
/// one-line summary (`run --summary-json`).
#include <string>

#include <nlohmann/json.hpp>

namespace normcheck {

/// The XML text of `report` (schema reports/schema/report.v1.schema.json).
std::string junit_xml(const nlohmann::json& report);

/// One line summarising `report`: {"passed", "complete", "cases_done", "cases_planned", "records",
/// "failing", "flagged", "report"} (`run --summary-json`).
nlohmann::json summary_line(const nlohmann::json& report, const std::string& report_path);

/// The failing must-pass records of every section, most severe first (kernel failures, then by the
/// worst element's error/bound), at most `cap`: for each, its identity, case counts, the worst
/// element (case, seed, row/col, kernel vs exact in decimal and hexfloat, ULPs, bound, ratio) and the
/// replay command. Empty when nothing failed.
std::string failing_records_text(const nlohmann::json& report, size_t cap);

}  // namespace normcheck
