#include "report/ci_output.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "io/json_input.hpp"
#include "report/verdicts.hpp"

namespace normcheck {

namespace {

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' ? '?' : c;  // XML 1.0 has no control characters
    }
  }
  return out;
}

std::string text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const nlohmann::json& v = j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

/// Every section's records array, with the section's key (the per-op section's is "records").
std::vector<std::pair<std::string, const nlohmann::json*>> record_lists(const nlohmann::json& report) {
  std::vector<std::pair<std::string, const nlohmann::json*>> lists;
  for (const auto& [key, section] : report.items()) {
    if (key == "records" && section.is_array()) lists.emplace_back(key, &section);
    else if (section.is_object() && section.contains("records") && section.at("records").is_array())
      lists.emplace_back(key, &section.at("records"));
  }
  return lists;
}

}  // namespace

std::string record_name(const nlohmann::json& r) {
  std::string name = text(r, "op") + "/" + text(r, "output");
  for (const char* key : {"kernel", "variant"})
    if (!text(r, key).empty() && text(r, key) != "builtin") name += " " + text(r, key);
  name += " " + text(r, "storage");
  if (!text(r, "accum").empty()) name += " (acc " + text(r, "accum") + ")";
  for (const char* key : {"property", "generator", "kind", "layout"})
    if (!text(r, key).empty()) name += " " + text(r, key);
  return name;
}

namespace {

/// The words for a non-finite kernel value where the exact value is finite (its error/bound is inf
/// or nan, which says nothing); empty otherwise.
std::string nonfinite_words(const nlohmann::json& e) {
  const std::string got = text(e, "kernel"), exact = text(e, "oracle_rounded");
  const bool got_finite = got != "nan" && got != "inf" && got != "-inf";
  const bool exact_finite = exact != "nan" && exact != "inf" && exact != "-inf";
  if (got_finite || got.empty() || !exact_finite) return "";
  return fmt::format("the kernel returned {} where the exact value is finite: always a failure, whatever the bound\n",
                     got == "nan" ? "NaN" : got == "inf" ? "+Inf" : "-Inf");
}

}  // namespace

std::string record_failure_text(const nlohmann::json& r) {
  if (r.contains("difference") && r.at("difference").is_object()) {  // batch_invariance records (no oracle, no cases)
    const nlohmann::json& d = r.at("difference");
    return fmt::format("verdict {}: {} differs, output {} row {} col {}\n{} gives {}\n{} gives {}\nreplay: {}\n", text(r, "verdict"),
                       text(d, "check") == "determinism" ? "a repeated call" : "the same row in another batch", text(d, "output"),
                       text(d, "row"), text(d, "col"), text(d, "config_a"), text(d, "a"), text(d, "config_b"), text(d, "b"), text(r, "replay"));
  }
  std::string body = fmt::format("verdict {}: {} of {} cases failed\n", text(r, "verdict"), text(r, "failed_cases"), text(r, "cases"));
  if (r.contains("kernel_failures") && r.at("kernel_failures").is_object() && !text(r.at("kernel_failures"), "first").empty())
    body += "kernel failure: " + text(r.at("kernel_failures"), "first") + "\n";
  if (r.contains("worst_case") && r.at("worst_case").is_object()) {
    const nlohmann::json& wc = r.at("worst_case");
    const nlohmann::json e = wc.contains("element") ? wc.at("element") : nlohmann::json::object();
    const std::string shape = text(wc, "rows").empty() ? "" : ", " + text(wc, "rows") + " x " + text(wc, "n");
    body += fmt::format("worst element: case {} (seed {}{}), row {}, col {}\n", text(wc, "case_index"), text(wc, "case_seed"), shape,
                        text(e, "row"), text(e, "col"));
    body += fmt::format("kernel {} ({}), exact {} (correctly rounded {})\n", text(e, "kernel_decimal"), text(e, "kernel"),
                        text(e, "oracle_decimal"), text(e, "oracle_rounded"));
    body += fmt::format("error {} ulp, bound {}, error/bound {}\n", text(e, "ulp_error"), text(e, "bound"), text(e, "bound_ratio"));
    body += nonfinite_words(e);
    if (!text(wc, "replay").empty()) body += "replay: " + text(wc, "replay") + "\n";
  }
  return body;
}

namespace {

double severity(const nlohmann::json& r) {
  if (text(r, "verdict") == "kernel_failure") return HUGE_VAL;
  if (!r.contains("worst_case") || !r.at("worst_case").is_object() || !r.at("worst_case").contains("element")) return 0;
  const nlohmann::json& ratio = r.at("worst_case").at("element").at("bound_ratio");
  if (ratio.is_number()) return ratio.get<double>();
  return ratio.is_string() && ratio.get<std::string>().find("nan") == std::string::npos ? HUGE_VAL : 0;  // "inf"
}

}  // namespace

std::string failing_records_text(const nlohmann::json& report, size_t cap) {
  std::vector<std::pair<double, const nlohmann::json*>> failing;
  for (const auto& [key, list] : record_lists(report))
    for (const nlohmann::json& r : *list)
      if (r.is_object() && is_failing_verdict(text(r, "verdict")) && text(r, "expectation") != "report_only") failing.emplace_back(severity(r), &r);
  if (failing.empty()) return "";
  std::stable_sort(failing.begin(), failing.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format("\nfailing records, most severe first ({} of {}):\n", std::min(cap, failing.size()), failing.size());
  for (size_t i = 0; i < failing.size() && i < cap; ++i) {
    const nlohmann::json& r = *failing[i].second;
    out += "FAIL " + record_name(r) + "\n";
    std::string body = record_failure_text(r);
    for (size_t start = 0; start < body.size();) {
      const size_t end = body.find('\n', start);
      out += "  " + body.substr(start, end - start) + "\n";
      start = end == std::string::npos ? body.size() : end + 1;
    }
  }
  return out;
}

RecordCounts record_counts(const nlohmann::json& report) {
  RecordCounts c;
  for (const auto& [key, list] : record_lists(report))
    for (const nlohmann::json& r : *list) {
      if (!r.is_object()) continue;
      ++c.records;
      const std::string verdict = text(r, "verdict");
      if (verdict == "not_run") {
        ++c.not_run;
        c.declined_cases = add_report_counts(c.declined_cases, report_count(r, "declined_cases"));
        continue;
      }
      ++c.judged;
      c.declined_cases = add_report_counts(c.declined_cases, report_count(r, "declined_cases"));
      if (verdict == "flagged") ++c.flagged;
      if (verdict == "looser_contract") ++c.looser_contract;
      if (!is_failing_verdict(verdict)) continue;
      if (text(r, "expectation") == "report_only") ++c.failing_report_only;
      else ++c.failing;
    }
  return c;
}

std::string record_counts_text(const RecordCounts& c) {
  std::string s = fmt::format("{} record{}: {} judged, {} failed", c.records, c.records == 1 ? "" : "s", c.judged, c.failing);
  if (c.flagged) s += fmt::format(", {} known-weak flagged (expected to fail)", c.flagged);
  if (c.looser_contract)
    s += fmt::format(", {} within the Welford contract only (not the two-pass one; docs/bounds.md 2.7.5)", c.looser_contract);
  if (c.failing_report_only) s += fmt::format(", {} failed report-only", c.failing_report_only);
  if (c.not_run) s += fmt::format(", {} not run (unsupported or no case)", c.not_run);
  if (c.declined_cases) s += fmt::format("; {} cases declined by the kernel (unsupported)", c.declined_cases);
  return s;
}

CaseTotals case_totals(const nlohmann::json& report) {
  CaseTotals t;
  const auto add = [&t](const nlohmann::json& j) {
    t.done = add_report_counts(t.done, report_count(j, "cases_done"));
    t.planned = add_report_counts(t.planned, report_count(j, "cases_planned"));
  };
  for (const auto& [key, section] : report.items())
    if (section.is_object() && section.contains("cases_planned") && section.at("cases_planned").is_number_integer()) add(section);
  return t;
}

std::string run_result_text(const nlohmann::json& report, const std::string& report_path) {
  const nlohmann::json& run = report.at("run");
  const bool passed = run.value("passed", false), complete = run.value("complete", false);
  const CaseTotals t = case_totals(report);
  return fmt::format("report: {} ({}, {}/{} cases{})\n  {}\n", report_path, passed ? "PASSED" : "FAILED", t.done, t.planned,
                     complete ? "" : ", INCOMPLETE: interrupted", record_counts_text(record_counts(report)));
}

std::string junit_xml(const nlohmann::json& report, const std::vector<JunitSuite>& extra) {
  std::string suites;
  int64_t all_tests = 0, all_failures = 0;
  for (const auto& [key, records] : record_lists(report)) {
    std::string cases;
    int64_t tests = 0, failures = 0, skipped = 0;
    for (const nlohmann::json& r : *records) {
      if (!r.is_object()) continue;
      ++tests;
      const std::string verdict = text(r, "verdict"), expectation = text(r, "expectation");
      cases += fmt::format("    <testcase classname=\"normcheck.{}\" name=\"{}\">\n", xml_escaped(key), xml_escaped(record_name(r)));
      if (verdict == "not_run" || verdict == "uncertified") {
        ++skipped;
        cases += verdict == "not_run" ? "      <skipped message=\"not run (unsupported or no case)\"/>\n"
                                      : "      <skipped message=\"uncertified: the oracle certified no element\"/>\n";
      } else if (is_failing_verdict(verdict) && expectation != "report_only") {
        ++failures;
        cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", xml_escaped(verdict),
                             xml_escaped(verdict + ": " + record_name(r)), xml_escaped(record_failure_text(r)));
      } else if (is_failing_verdict(verdict)) {
        cases += fmt::format("      <system-out>{}</system-out>\n", xml_escaped("report-only " + record_failure_text(r)));
      } else if (verdict == "flagged") {
        cases += "      <system-out>a known-weak kernel, caught as expected</system-out>\n";
      } else if (verdict == "looser_contract") {
        const std::string note = r.contains("contract") ? text(r.at("contract"), "note") : "";
        cases += fmt::format("      <system-out>{}</system-out>\n", xml_escaped(note.empty() ? "within a looser sound contract" : note));
      }
      cases += "    </testcase>\n";
    }
    all_tests += tests;
    all_failures += failures;
    suites += fmt::format("  <testsuite name=\"normcheck.{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}  </testsuite>\n",
                          xml_escaped(key), tests, failures, skipped, cases);
  }
  for (const JunitSuite& s : extra) {
    std::string cases;
    int64_t failures = 0;
    for (const JunitCase& c : s.cases) {
      cases += fmt::format("    <testcase classname=\"normcheck.{}\" name=\"{}\">\n", xml_escaped(s.name), xml_escaped(c.name));
      if (!c.failure_type.empty()) {
        ++failures;
        cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", xml_escaped(c.failure_type),
                             xml_escaped(c.failure_message), xml_escaped(c.text));
      } else if (!c.text.empty()) {
        cases += fmt::format("      <system-out>{}</system-out>\n", xml_escaped(c.text));
      }
      cases += "    </testcase>\n";
    }
    all_tests += static_cast<int64_t>(s.cases.size());
    all_failures += failures;
    suites += fmt::format("  <testsuite name=\"normcheck.{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n{}  </testsuite>\n",
                          xml_escaped(s.name), s.cases.size(), failures, cases);
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"normcheck\" tests=\"{}\" failures=\"{}\">\n{}</testsuites>\n",
                     all_tests, all_failures, suites);
}

nlohmann::json summary_line(const nlohmann::json& report, const std::string& report_path) {
  const RecordCounts c = record_counts(report);
  const CaseTotals totals = case_totals(report);
  const nlohmann::json& run = report.at("run");
  return {{"passed", run.at("passed")}, {"complete", run.at("complete")}, {"cases_done", totals.done},
          {"cases_planned", totals.planned}, {"records", c.records}, {"judged", c.judged}, {"not_run", c.not_run},
          {"failing", c.failing}, {"failing_report_only", c.failing_report_only}, {"flagged", c.flagged},
          {"looser_contract", c.looser_contract},
          {"declined_cases", c.declined_cases}, {"report", report_path}};
}

}  // namespace normcheck
