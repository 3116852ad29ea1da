#include "render/html_sections.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/metrics.hpp"
#include "render/svg_charts.hpp"
#include "io/case_json.hpp"

namespace normcheck::render {
namespace {

/// Records grouped by a label, groups in order of first appearance.
template <class Label>
std::vector<std::pair<std::string, std::vector<const RecordRef*>>> group_by(const std::vector<RecordRef>& records, Label label) {
  std::vector<std::pair<std::string, std::vector<const RecordRef*>>> groups;
  for (const RecordRef& r : records) {
    const std::string key = label(r);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(&r);
  }
  return groups;
}

/// The per-case points of a record: (n, max ULP) and (n, max err/bound); false when it has none.
bool case_points(const nlohmann::json& r, std::vector<ScatterPoint>& ulp, std::vector<ScatterPoint>& ratio) {
  if (!r.contains("points") || !r.at("points").is_object()) return false;
  const nlohmann::json& p = r.at("points");
  for (const char* f : {"n", "max_ulp", "max_bound_ratio"})
    if (!p.contains(f) || !p.at(f).is_array()) return false;
  const nlohmann::json &n = p.at("n"), &u = p.at("max_ulp"), &b = p.at("max_bound_ratio");
  const nlohmann::json* cases = p.contains("case_index") && p.at("case_index").is_array() ? &p.at("case_index") : nullptr;
  const auto value = [](const nlohmann::json& v) { return json_number_value(v).value_or(HUGE_VAL); };
  const std::string record = string_field(r, "op") + (string_field(r, "output").empty() ? "" : "/" + string_field(r, "output")) + " " +
                             kernel_label(r);
  for (size_t i = 0; i < n.size() && i < u.size() && i < b.size(); ++i) {
    if (!n[i].is_number()) continue;
    const std::string label = fmt::format("case {} {}", cases && i < cases->size() ? cases->at(i).dump() : "?", record);
    ulp.push_back({n[i].get<double>(), value(u[i]), label});
    ratio.push_back({n[i].get<double>(), value(b[i]), label});
  }
  return true;
}

/// One scatter chart in a figure, thinned, with a caption saying what is drawn.
std::string scatter_figure(std::vector<ScatterSeries> series, ScatterAxes axes, size_t cap, size_t record_count) {
  size_t total = 0, low = 0, nonfinite = 0, off_axis = 0;
  for (const ScatterSeries& s : series)
    for (const ScatterPoint& p : s.points)
      total += 1, low += p.y < axes.y_floor, nonfinite += !std::isfinite(p.y), off_axis += !(p.x > 0);
  const size_t dropped = thin_series(series, cap);
  std::string caption = fmt::format("{} cases of {} records", format_count(static_cast<int64_t>(total)), record_count);
  if (dropped)
    caption += fmt::format("; thinned to {} points (at most {} per chart: evenly spaced per generator, each one's largest kept)",
                           format_count(static_cast<int64_t>(total - dropped)), cap);
  if (low)
    caption += fmt::format("; {} values below {} (zeros included) drawn at {}", format_count(static_cast<int64_t>(low)),
                           format_value(axes.y_floor), format_value(axes.y_floor));
  if (nonfinite) caption += fmt::format("; {} non-finite drawn on the top edge", format_count(static_cast<int64_t>(nonfinite)));
  if (off_axis) caption += fmt::format("; {} with n <= 0 not drawn", format_count(static_cast<int64_t>(off_axis)));
  return "<figure>" + scatter_svg(series, axes) + "<figcaption>" + escape(caption) + ".</figcaption></figure>";
}

/// A command as HTML that wraps only between its words (each word an unbreakable span; copies as typed).
std::string command_html(const std::string& command) {
  std::string h;
  size_t start = 0;
  while (start <= command.size()) {
    const size_t end = std::min(command.find(' ', start), command.size());
    h += (start ? " <span>" : "<span>") + escape(command.substr(start, end - start)) + "</span>";
    start = end + 1;
  }
  return h;
}

/// The cells of a worst-case table row; `change_cell` (the diff class, may be empty) goes before the replay command.
std::string row_cells(const RecordRef& r, const std::string& change_cell) {
  const nlohmann::json& j = *r.json;
  const std::string op = string_field(j, "output").empty() ? r.op : r.op + "/" + string_field(j, "output");
  std::string generator = string_field(j, "property", "-");
  if (generator.rfind("accuracy/", 0) == 0) generator = generator.substr(9);
  const std::string dtype = string_field(j, "accum").empty() ? r.dtype : r.dtype + "/" + string_field(j, "accum");
  const auto ulp = number_field(j, "max_ulp"), ratio = number_field(j, "max_bound_ratio");
  std::string verdict = string_field(j, "verdict", "-");
  if (verdict == "kernel_failure" && j.contains("kernel_failures") && j.at("kernel_failures").is_object())
    verdict += ": " + string_field(j.at("kernel_failures"), "first").substr(0, 300);  // why, not a number
  std::string replay = j.contains("worst_case") && j.at("worst_case").is_object() ? string_field(j.at("worst_case"), "replay") : "";
  std::string element = "-";
  if (j.contains("worst_case") && j.at("worst_case").is_object() && j.at("worst_case").contains("element") &&
      j.at("worst_case").at("element").is_object()) {
    const nlohmann::json& e = j.at("worst_case").at("element");
    element = fmt::format("row {}, col {}: kernel {} vs exact {} (rounded {}), {} ULP", text_field(e, "row"), text_field(e, "col"),
                          text_field(e, "kernel_decimal", text_field(e, "kernel")), text_field(e, "oracle_decimal", text_field(e, "oracle_hi")),
                          text_field(e, "oracle_rounded"), text_field(e, "ulp_error"));
  }
  if (replay.empty()) replay = fmt::format("{} record {} (no replay)", r.section, r.index);
  return fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"c-{}\">{}</td><td class=\"w\">{}</td>",
                     escape(op), escape(kernel_label(j)), escape(dtype), escape(generator),
                     escape(shape_label(j)), ulp ? format_value(*ulp) : "-", ratio ? format_value(*ratio) : "-",
                     verdict_class(j) == VerdictClass::fail ? "fail" : verdict_class(j) == VerdictClass::flagged ? "flagged" : "x",
                     escape(verdict), escape(element)) +
         change_cell + "<td><code>" + command_html(replay) + "</code></td>";
}

/// The diff class of a record, or null.
const nightly::RecordChange* change_of(const RecordRef& r, const ChangeMap* changes) {
  if (!changes) return nullptr;
  const auto it = changes->find(change_key(r.section, nightly::record_identity(*r.json)));
  return it == changes->end() ? nullptr : it->second;
}

/// A table of records with their replay commands; with a diff, a change column and the rows colored.
std::string worst_table(const std::vector<const RecordRef*>& rows, const ChangeMap* changes, const std::string& id) {
  std::string h = fmt::format("<table class=\"worst sortable\" id=\"{}\"><tr><th>op/output</th><th>kernel</th><th>dtype/accum</th>"
                              "<th>generator</th><th>shape</th><th>max ULP</th><th>err/bound</th><th>verdict</th>"
                              "<th>worst element</th>{}<th>replay</th></tr>", id, changes ? "<th>change</th>" : "");
  for (const RecordRef* r : rows) {
    const nightly::RecordChange* c = change_of(*r, changes);
    std::string change;
    if (changes)
      change = "<td class=\"w\">" + escape(c && c->change != nightly::Change::unchanged ? std::string(nightly::change_name(c->change)) + (c->why.empty() ? "" : ": " + c->why) : "") + "</td>";
    h += fmt::format("<tr class=\"{}\">{}</tr>", c ? change_css(c->change) : "", row_cells(*r, change));
  }
  return h + "</table>";
}

/// Sort key of the worst-case table: max err/bound, NaN first, records without one last.
double ratio_key(const RecordRef& r) {
  const auto v = number_field(*r.json, "max_bound_ratio");
  if (!v) return -1;
  return std::isnan(*v) ? HUGE_VAL : *v;
}

}  // namespace

std::string change_key(const std::string& section, const std::string& identity) { return section + '\n' + identity; }

const char* change_css(nightly::Change c) {
  if (c == nightly::Change::new_failure || c == nightly::Change::regression) return "bad";
  if (c == nightly::Change::fixed || c == nightly::Change::improvement) return "good";
  return "neutral";
}

std::string kernel_summary_section(const std::vector<RecordRef>& records) {
  struct Row {
    int64_t records = 0, failing = 0, flagged = 0, not_run = 0, void_elements = 0, kernel_failures = 0;
    double max_ratio = 0, max_ulp = 0;
    std::string first_failure;
  };
  const auto groups = group_by(records, [](const RecordRef& r) { return kernel_label(*r.json) + "\n" + r.dtype + "\n" + r.op; });
  std::string h = "<h2 id=\"kernels\">Per kernel: records by kernel, dtype and op</h2><p>max ULP over outputs whose exact "
                  "value is a normal number where the record has it (max_ulp_normal), else over all; void: elements whose "
                  "a priori bound is void (overflow predicted or statistics unresolved), judged by the envelope only. "
                  "Click a column header to sort; type in the box to filter (without scripts the table is static).</p>"
                  "<table class=\"sortable\" id=\"kernels-table\"><tr><th>kernel</th><th>dtype</th><th>op</th><th>records</th>"
                  "<th>failing</th><th>flagged</th><th>not run</th><th>max err/bound</th><th>max ULP</th><th>void</th>"
                  "<th>kernel failures</th></tr>";
  for (const auto& [key, members] : groups) {
    Row row;
    for (const RecordRef* r : members) {
      const nlohmann::json& j = *r->json;
      ++row.records;
      const VerdictClass v = verdict_class(j);
      row.failing += failing_must_pass(j) ? 1 : 0;
      row.flagged += v == VerdictClass::flagged ? 1 : 0;
      row.not_run += v == VerdictClass::not_run ? 1 : 0;
      row.max_ratio = std::max(row.max_ratio, number_field(j, "max_bound_ratio").value_or(0));
      row.max_ulp = std::max(row.max_ulp, number_field(j, j.contains("max_ulp_normal") ? "max_ulp_normal" : "max_ulp").value_or(0));
      row.void_elements += static_cast<int64_t>(number_field(j, "void_bound_elements").value_or(0));
      if (j.contains("kernel_failures") && j.at("kernel_failures").is_object()) {
        row.kernel_failures += static_cast<int64_t>(number_field(j.at("kernel_failures"), "cases").value_or(0));
        if (row.first_failure.empty()) row.first_failure = string_field(j.at("kernel_failures"), "first");
      }
    }
    const size_t a = key.find('\n'), b = key.find('\n', a + 1);
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n{}\">{}</td><td class=\"n{}\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                     escape(key.substr(0, a)), escape(key.substr(a + 1, b - a - 1)), escape(key.substr(b + 1)), row.records,
                     row.failing ? " c-fail" : "", row.failing, row.flagged ? " c-flagged" : "", row.flagged, row.not_run,
                     format_value(row.max_ratio), format_value(row.max_ulp), format_count(row.void_elements),
                     escape(row.kernel_failures ? fmt::format("{}: {}", row.kernel_failures, row.first_failure.substr(0, 200)) : ""));
  }
  return h + "</table>";
}

std::string trend_section(const std::vector<nightly::HistoryTrend>& trends, const std::string& history_name, size_t count) {
  const auto latest_ratio = [](const nightly::HistoryTrend& t) {
    return t.points.empty() || !t.points.back().max_bound_ratio ? -1.0 : *t.points.back().max_bound_ratio;
  };
  std::vector<const nightly::HistoryTrend*> regressed, rest;
  size_t nights = 0;
  for (const nightly::HistoryTrend& t : trends) {
    nights = std::max(nights, t.points.size());
    const bool any = std::any_of(t.points.begin(), t.points.end(), [](const nightly::HistoryPoint& p) { return p.regressed; });
    const bool weak_flagged = !t.points.empty() && t.points.back().verdict == "flagged";  // known weak, failing as expected
    if (any) regressed.push_back(&t);
    else if (!weak_flagged) rest.push_back(&t);
  }
  std::stable_sort(rest.begin(), rest.end(), [&](auto* a, auto* b) { return latest_ratio(*a) > latest_ratio(*b); });
  std::vector<const nightly::HistoryTrend*> shown = regressed;
  for (size_t i = 0; i < rest.size() && shown.size() < std::max(count, regressed.size()); ++i) shown.push_back(rest[i]);
  std::string h = fmt::format("<h2 id=\"trends\">Trends across nights ({})</h2><p>{} runs in the history, {} records; "
                              "{} records regressed on some night (a new failure, or a growth beyond diff's default thresholds "
                              "against the night before), each drawn with that night marked in red; then the records with the "
                              "largest latest max |error|/bound (known-weak kernels flagged as expected left out). Hover a point for its "
                              "night and value.</p><div class=\"charts\">",
                              escape(history_name), nights, trends.size(), regressed.size());
  for (const nightly::HistoryTrend* t : shown) {
    std::vector<TrendPoint> points;
    for (const nightly::HistoryPoint& p : t->points)
      points.push_back({p.run.start_time, p.max_bound_ratio.value_or(0), p.regressed, p.regressed_why});
    // the whole identity, wrapped under the chart: records differ at its end (generator, output)
    h += "<figure>" + trend_svg(points, t->section) + "<figcaption>" + escape(t->section + ": " + t->identity) + "</figcaption></figure>";
  }
  if (shown.empty()) h += "<p>The history holds no record.</p>";
  return h + "</div>";
}

std::string histogram_section(const std::vector<RecordRef>& records) {
  std::string h = "<h2 id=\"histograms\">ULP-error distributions per op and dtype</h2><p>Elements per |error| bucket "
                  "(ULPs of the output dtype, log count scale), summed over the records of the kernels expected to "
                  "be sound; known-weak kernels (textbook one-pass, planted defects) are left out here, their errors "
                  "are in the summary and worst-case tables. The red bar also holds non-finite mismatches. Buckets beyond "
                  "the report format's " + std::to_string(kUlpBuckets) + " are not drawn.</p>"
                  "<div class=\"charts\">";
  std::vector<RecordRef> sound;
  for (const RecordRef& r : records)
    if (!(r.json->contains("known_weak") && r.json->at("known_weak") == true)) sound.push_back(r);
  const auto groups = group_by(sound, [](const RecordRef& r) { return r.op + " \u00b7 " + r.dtype; });
  std::vector<std::pair<std::string, std::vector<int64_t>>> charts;
  size_t shown = 8;
  for (const auto& [label, members] : groups) {
    std::vector<int64_t> sum = summed_histogram(members);
    if (sum.empty()) continue;
    shown = std::max(shown, sum.size());
    charts.emplace_back(label, std::move(sum));
  }
  for (const auto& [label, sum] : charts) h += "<figure>" + histogram_svg(sum, shown, kUlpBuckets, label) + "</figure>";
  if (charts.empty()) h += "<p>No record carries an ULP histogram.</p>";
  h += "</div>";
  int64_t nonfinite = 0, nonfinite_failing = 0;
  for (const RecordRef& r : sound) {
    const auto n = static_cast<int64_t>(number_field(*r.json, "nonfinite_mismatches").value_or(0));
    nonfinite += n;
    if (failing_must_pass(*r.json)) nonfinite_failing += n;
  }
  if (nonfinite > nonfinite_failing)
    h += fmt::format("<p>Red bars: {} non-finite outputs (Inf or NaN where the exact value is finite, or the reverse) of records "
                     "that did not fail. These are elements whose a priori bound is void because an intermediate may overflow "
                     "(docs/bounds.md section 5): there Inf and NaN are predicted and allowed, and the structural envelope "
                     "judges the finite ones. Non-finite outputs of failing records: {}.</p>",
                     format_count(nonfinite - nonfinite_failing), format_count(nonfinite_failing));
  return h;
}

std::string scatter_section(const std::vector<RecordRef>& records, size_t max_points_per_chart) {
  std::string h = "<h2 id=\"scatter\">Error and err/bound against n per dtype</h2><p>One point per case and record: its max "
                  "|error| in ULPs and its max |error|/bound, against the row length n (log scales), coloured by generator; "
                  "hover a point for its case, n and record. Above the dashed line at 1 the a priori bound is exceeded.</p>";
  const auto by_dtype = group_by(records, [](const RecordRef& r) { return r.dtype; });
  bool any = false;
  for (const auto& [dtype, members] : by_dtype) {
    std::vector<ScatterSeries> ulp, ratio;
    size_t with_points = 0;
    for (const RecordRef* r : members) {
      std::vector<ScatterPoint> u, b;
      if (!case_points(*r->json, u, b)) continue;
      ++with_points;
      std::string series = string_field(*r->json, "property", r->op);  // coloured by generator
      if (series.rfind("accuracy/", 0) == 0) series = series.substr(9);
      auto it = std::find_if(ulp.begin(), ulp.end(), [&](const ScatterSeries& s) { return s.name == series; });
      if (it == ulp.end()) ulp.push_back({series, {}}), ratio.push_back({series, {}}), it = ulp.end() - 1;
      const size_t k = static_cast<size_t>(it - ulp.begin());
      ulp[k].points.insert(ulp[k].points.end(), u.begin(), u.end());
      ratio[k].points.insert(ratio[k].points.end(), b.begin(), b.end());
    }
    if (!with_points) continue;
    any = true;
    h += "<h3>" + escape(dtype) + "</h3><div class=\"charts\">";
    h += scatter_figure(ulp, {dtype + ": max |error| (ULP) per case", "n (row length)", "max ULP", 0.01, std::nullopt, ""},
                        max_points_per_chart, with_points);
    h += scatter_figure(ratio, {dtype + ": max |error| / bound per case", "n (row length)", "max err/bound", 1e-4, 1.0, "bound (1)"},
                        max_points_per_chart, with_points);
    h += "</div>";
  }
  if (!any) h += "<p>No record carries per-case points.</p>";
  return h;
}

std::string worst_section(const std::vector<RecordRef>& records, const ChangeMap* changes, size_t count) {
  std::vector<const RecordRef*> ranked;
  for (const RecordRef& r : records) ranked.push_back(&r);
  // Severity: failing must-pass records, then other must-pass records, then report-only and known-weak
  // ones (caught as expected); within each, by max err/bound.
  const auto tier = [](const RecordRef& r) {
    if (failing_must_pass(*r.json)) return 0;
    const bool weak = r.json->contains("known_weak") && r.json->at("known_weak") == true;
    return string_field(*r.json, "expectation") != "report_only" && !weak ? 1 : 2;
  };
  std::stable_sort(ranked.begin(), ranked.end(), [&](auto* a, auto* b) {
    return tier(*a) != tier(*b) ? tier(*a) < tier(*b) : ratio_key(*a) > ratio_key(*b);
  });
  std::vector<const RecordRef*> worst, sound;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const nlohmann::json& j = *ranked[i]->json;
    const nightly::RecordChange* c = change_of(*ranked[i], changes);
    const bool regressed = c && std::string(change_css(c->change)) == "bad";
    if ((i < count && ratio_key(*ranked[i]) >= 0) || failing_must_pass(j) || regressed) worst.push_back(ranked[i]);
    const bool must_pass = string_field(j, "expectation") == "must_pass" && !(j.contains("known_weak") && j.at("known_weak") == true);
    if (must_pass && sound.size() < count && ratio_key(*ranked[i]) >= 0) sound.push_back(ranked[i]);
  }
  std::string h = fmt::format("<h2 id=\"worst\">Worst cases</h2><p>The {} most severe records (failing must-pass records "
                              "first, then must-pass records, then report-only and known-weak ones, each by max |error|/bound), "
                              "every failing must-pass record{}. Replay a record's worst case with the command shown "
                              "(flagged: a known-weak kernel, caught as expected).</p>",
                              count, changes ? " and every regressed record (red)" : "");
  h += worst_table(worst, changes, "worst-table");
  h += fmt::format("<h3>Closest to their bound: the {} must-pass records (sound kernels) with the largest max |error|/bound</h3>",
                   sound.size());
  return h + worst_table(sound, changes, "closest-table");
}

}  // namespace normcheck::render
