#pragma once
/// JUnit XML of a report (`run --junit FILE`): one testsuite per section, one testcase per record, a
/// <failure> with the worst element where the record failed; CI systems (GitLab, Jenkins, GitHub
/// test reporters) show it natively.
#include <string>

#include <nlohmann/json.hpp>

namespace normcheck {

/// The XML text of `report` (schema reports/schema/report.v1.schema.json).
std::string junit_xml(const nlohmann::json& report);

/// One line summarising `report`: {"passed", "complete", "cases_done", "cases_planned", "records",
/// "failing", "flagged", "report"} (`run --summary-json`).
nlohmann::json summary_line(const nlohmann::json& report, const std::string& report_path);

}  // namespace normcheck
