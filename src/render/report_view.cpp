#include "render/report_view.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "core/metrics.hpp"
#include "io/case_json.hpp"
#include "report/verdicts.hpp"
#include "sections/section.hpp"

namespace normcheck::render {
namespace {

/// The probed kernel of an axis-audit record (`kernel` object), else the record itself.
const nlohmann::json& probe(const nlohmann::json& r) {
  return r.contains("kernel") && r.at("kernel").is_object() ? r.at("kernel") : r;
}

bool has_records(const nlohmann::json& section) {
  return section.is_object() && section.contains("records") && section.at("records").is_array();
}

void add_section(const std::string& name, const nlohmann::json& records, std::vector<RecordRef>& out) {
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& r = records[i];
    if (!r.is_object()) continue;
    std::string op = string_field(r, "op", string_field(r, "kind", name));
    if (r.contains("op") && !string_field(r, "kind").empty()) op += ":" + string_field(r, "kind");  // grouped_norm:batch_norm
    out.push_back({name, i, &r, op, string_field(r, "storage", string_field(r, "dtype", string_field(probe(r), "dtype", "-")))});
  }
}

}  // namespace

const char* verdict_class_name(VerdictClass c) {
  switch (c) {
    case VerdictClass::pass: return "pass";
    case VerdictClass::fail: return "fail";
    case VerdictClass::flagged: return "flagged";
    case VerdictClass::not_run: return "not run";
    case VerdictClass::uncertified: return "uncertified";
    case VerdictClass::other: return "measured / other";
  }
  return "?";
}

void require_report(const nlohmann::json& j) {
  if (!j.is_object() || string_field(j, "tool") != "normcheck" || !j.contains("schema_version"))
    throw std::invalid_argument("not a normcheck report (no tool/schema_version)");
  if (!j.contains("run") || !j.at("run").is_object()) throw std::invalid_argument("not a normcheck report (no run object)");
}

std::vector<RecordRef> collect_records(const nlohmann::json& report) {
  std::vector<RecordRef> out;
  // the registry's sections in their order, then unknown ones (a newer report) in key order
  for (const sections::Section* s : sections::registry())
    if (const nlohmann::json* records = s->records(report)) add_section(std::string(s->key()), *records, out);
  for (const auto& [key, value] : report.items())
    if (sections::section_by_key(key) == nullptr && has_records(value)) add_section(key, value.at("records"), out);
  return out;
}

VerdictClass verdict_class(const nlohmann::json& record) {
  const std::string v = string_field(record, "verdict");
  const nlohmann::json& p = probe(record);
  if (v.empty() && p.contains("as_expected") && p.at("as_expected").is_boolean())  // axis audit: as expected or not
    return p.at("as_expected").get<bool>() ? VerdictClass::pass : VerdictClass::fail;
  if (v == "pass") return VerdictClass::pass;
  if (is_failing_verdict(v)) return VerdictClass::fail;
  if (v == "flagged") return VerdictClass::flagged;
  if (v == "not_run") return VerdictClass::not_run;
  if (v == "uncertified") return VerdictClass::uncertified;
  return VerdictClass::other;
}

bool failing_must_pass(const nlohmann::json& record) {
  return verdict_class(record) == VerdictClass::fail && string_field(record, "expectation") != "report_only";
}

std::optional<double> number_field(const nlohmann::json& j, const char* field) {
  if (!j.is_object() || !j.contains(field)) return std::nullopt;
  return json_number_value(j.at(field));
}

std::string string_field(const nlohmann::json& j, const char* field, const std::string& fallback) {
  if (!j.is_object() || !j.contains(field) || !j.at(field).is_string()) return fallback;
  return j.at(field).get<std::string>();
}

std::string text_field(const nlohmann::json& j, const char* field, const std::string& fallback) {
  if (!j.is_object() || !j.contains(field) || j.at(field).is_null()) return fallback;
  const nlohmann::json& v = j.at(field);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string kernel_label(const nlohmann::json& record) {
  const std::string kernel = string_field(record, "kernel"), variant = string_field(record, "variant");
  if (!kernel.empty() && !variant.empty()) return kernel == "builtin" || kernel == variant ? variant : kernel + " " + variant;
  if (record.contains("kernel") && record.at("kernel").is_object()) return string_field(record.at("kernel"), "name", "-");
  for (const char* field : {"kernel", "variant", "form", "kind"})
    if (!string_field(record, field).empty()) return string_field(record, field);
  return "-";
}

std::string shape_label(const nlohmann::json& record) {
  if (!record.contains("worst_case") || !record.at("worst_case").is_object()) return "-";
  const nlohmann::json& w = record.at("worst_case");
  const auto field = [&](const char* f) { return text_field(w, f, "?"); };
  if (w.contains("d")) return fmt::format("{}x(d {} n {} m {})", field("rows"), field("d"), field("n"), field("m"));
  if (w.contains("m")) return fmt::format("{}x(n {} m {})", field("rows"), field("n"), field("m"));
  if (w.contains("rows") || w.contains("n")) return fmt::format("{} x {}", field("rows"), field("n"));
  if (w.contains("shape")) return field("shape");
  return "-";
}

std::vector<int64_t> summed_histogram(const std::vector<const RecordRef*>& records) {
  std::vector<int64_t> sum;
  for (const RecordRef* r : records) {
    if (!r->json->contains("ulp_histogram") || !r->json->at("ulp_histogram").is_array()) continue;
    const nlohmann::json& h = r->json->at("ulp_histogram");
    // a report's histogram has kUlpBuckets buckets: more are not drawn (a hostile report with
    // millions of buckets would make a huge page); counts saturate instead of overflowing
    const size_t buckets = std::min(h.size(), static_cast<size_t>(kUlpBuckets));
    if (sum.size() < buckets) sum.resize(buckets, 0);
    for (size_t k = 0; k < buckets; ++k)
      if (h[k].is_number_integer() && h[k].get<int64_t>() > 0 && __builtin_add_overflow(sum[k], h[k].get<int64_t>(), &sum[k]))
        sum[k] = std::numeric_limits<int64_t>::max();
  }
  return sum;
}

}  // namespace normcheck::render
