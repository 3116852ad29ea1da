#include "report/ci_output.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

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

bool is_failure(const std::string& verdict) {
  return verdict == "fail" || verdict == "kernel_failure" || verdict == "own_bound_violated" || verdict == "uncertified";
}

/// "layernorm_forward/y two_pass f32 (acc f32) accuracy/normal" and the like, from whatever identity
/// fields the record has.
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

std::string failure_body(const nlohmann::json& r) {
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
    if (!text(wc, "replay").empty()) body += "replay: " + text(wc, "replay") + "\n";
  }
  return body;
}

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
  for (const auto& [key, section] : report.items()) {
    const nlohmann::json* list = key == "records" && section.is_array() ? &section
                                 : section.is_object() && section.contains("records") && section.at("records").is_array() ? &section.at("records")
                                                                                                                         : nullptr;
    if (!list) continue;
    for (const nlohmann::json& r : *list)
      if (r.is_object() && is_failure(text(r, "verdict")) && text(r, "expectation") != "report_only") failing.emplace_back(severity(r), &r);
  }
  if (failing.empty()) return "";
  std::stable_sort(failing.begin(), failing.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format("\nfailing records, most severe first ({} of {}):\n", std::min(cap, failing.size()), failing.size());
  for (size_t i = 0; i < failing.size() && i < cap; ++i) {
    const nlohmann::json& r = *failing[i].second;
    out += "FAIL " + record_name(r) + "\n";
    std::string body = failure_body(r);
    for (size_t start = 0; start < body.size();) {
      const size_t end = body.find('\n', start);
      out += "  " + body.substr(start, end - start) + "\n";
      start = end == std::string::npos ? body.size() : end + 1;
    }
  }
  return out;
}

std::string junit_xml(const nlohmann::json& report) {
  std::string suites;
  int64_t all_tests = 0, all_failures = 0;
  for (const auto& [key, section] : report.items()) {
    const nlohmann::json* records = nullptr;
    if (key == "records" && section.is_array()) records = &section;
    else if (section.is_object() && section.contains("records") && section.at("records").is_array()) records = &section.at("records");
    if (!records) continue;
    std::string cases;
    int64_t tests = 0, failures = 0, skipped = 0;
    for (const nlohmann::json& r : *records) {
      if (!r.is_object()) continue;
      ++tests;
      const std::string verdict = text(r, "verdict"), expectation = text(r, "expectation");
      cases += fmt::format("    <testcase classname=\"normcheck.{}\" name=\"{}\">\n", xml_escaped(key), xml_escaped(record_name(r)));
      if (verdict == "not_run") {
        ++skipped;
        cases += "      <skipped message=\"not run (unsupported or no case)\"/>\n";
      } else if (is_failure(verdict) && expectation != "report_only") {
        ++failures;
        cases += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", xml_escaped(verdict),
                             xml_escaped(verdict + ": " + record_name(r)), xml_escaped(failure_body(r)));
      } else if (is_failure(verdict)) {
        cases += fmt::format("      <system-out>{}</system-out>\n", xml_escaped("report-only " + failure_body(r)));
      } else if (verdict == "flagged") {
        cases += "      <system-out>a known-weak kernel, caught as expected</system-out>\n";
      }
      cases += "    </testcase>\n";
    }
    all_tests += tests;
    all_failures += failures;
    suites += fmt::format("  <testsuite name=\"normcheck.{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}  </testsuite>\n",
                          xml_escaped(key), tests, failures, skipped, cases);
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"normcheck\" tests=\"{}\" failures=\"{}\">\n{}</testsuites>\n",
                     all_tests, all_failures, suites);
}

nlohmann::json summary_line(const nlohmann::json& report, const std::string& report_path) {
  int64_t records = 0, failing = 0, flagged = 0;
  for (const auto& [key, section] : report.items()) {
    const nlohmann::json* list = key == "records" && section.is_array() ? &section
                                 : section.is_object() && section.contains("records") && section.at("records").is_array() ? &section.at("records")
                                                                                                                         : nullptr;
    if (!list) continue;
    for (const nlohmann::json& r : *list) {
      ++records;
      const std::string verdict = text(r, "verdict");
      failing += is_failure(verdict) ? 1 : 0;
      flagged += verdict == "flagged" ? 1 : 0;
    }
  }
  const nlohmann::json& run = report.at("run");
  return {{"passed", run.at("passed")}, {"complete", run.at("complete")}, {"cases_done", run.at("cases_done")},
          {"cases_planned", run.at("cases_planned")}, {"records", records}, {"failing", failing}, {"flagged", flagged},
          {"report", report_path}};
}

}  // namespace normcheck
