#include "nightly/diff_outputs.hpp"

#include <fmt/format.h>

namespace normcheck::nightly {

JunitSuite diff_junit_suite(const DiffResult& d, const std::string& base_name) {
  JunitSuite s{"nightly_diff", {}};
  JunitCase overall{"comparison against " + base_name};
  overall.text = d.verdict_line();
  std::string why;  // new failures and regressions fail their own cases below
  for (const std::string& r : d.comparison_failures()) why += (why.empty() ? "" : "; ") + r;
  if (!why.empty()) overall.failure_type = "comparison", overall.failure_message = why;
  s.cases.push_back(overall);
  for (const RecordChange& c : d.changes) {
    const bool bad = c.change == Change::new_failure || c.change == Change::regression ||
                     (c.change == Change::removed && !d.allow_removed);
    if (!bad) continue;
    JunitCase k{c.section + " " + c.key};
    k.failure_type = change_name(c.change);
    k.failure_message = fmt::format("{}: {}{}{}", change_name(c.change), c.key, c.why.empty() ? "" : ": ", c.why);
    k.text = c.details;
    s.cases.push_back(std::move(k));
  }
  return s;
}

nlohmann::json summary_line_with_diff(const nlohmann::json& report, const std::string& report_path, const DiffResult& d) {
  nlohmann::json line = summary_line(report, report_path);
  const bool run_passed = line.at("passed").is_boolean() && line.at("passed").get<bool>();
  nlohmann::json counts = nlohmann::json::object();
  for (Change c : {Change::new_failure, Change::fixed, Change::regression, Change::improvement, Change::unchanged, Change::added,
                   Change::removed})
    counts[change_name(c)] = d.count(c);
  line["run_passed"] = run_passed;
  line["passed"] = run_passed && d.passed();
  line["diff"] = {{"passed", d.passed()}, {"verdict", d.verdict_line()}, {"compared", d.compared()}, {"counts", counts}};
  return line;
}

}  // namespace normcheck::nightly
