#include "render/html_sections.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/metrics.hpp"
#include "render/svg_charts.hpp"
#include "report/case_json.hpp"

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
  const auto value = [](const nlohmann::json& v) { return json_number_value(v).value_or(HUGE_VAL); };
  for (size_t i = 0; i < n.size() && i < u.size() && i < b.size(); ++i) {
    if (!n[i].is_number()) continue;
    ulp.push_back({n[i].get<double>(), value(u[i])});
    ratio.push_back({n[i].get<double>(), value(b[i])});
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
    caption += fmt::format("; thinned to {} points (at most {} per chart: evenly spaced per op, each op's largest kept)",
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
  if (replay.empty()) replay = fmt::format("{} record {} (no replay)", r.section, r.index);
  return fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"c-{}\">{}</td>",
                     escape(op), escape(kernel_label(j)), escape(dtype), escape(generator),
                     escape(shape_label(j)), ulp ? format_value(*ulp) : "-", ratio ? format_value(*ratio) : "-",
                     verdict_class(j) == VerdictClass::fail ? "fail" : verdict_class(j) == VerdictClass::flagged ? "flagged" : "x",
                     escape(verdict)) +
         change_cell + "<td><code>" + command_html(replay) + "</code></td>";
}

/// The diff class of a record, or null.
const nightly::RecordChange* change_of(const RecordRef& r, const ChangeMap* changes) {
  if (!changes) return nullptr;
  const auto it = changes->find(change_key(r.section, nightly::record_identity(*r.json)));
  return it == changes->end() ? nullptr : it->second;
}

/// A table of records with their replay commands; with a diff, a change column and the rows colored.
std::string worst_table(const std::vector<const RecordRef*>& rows, const ChangeMap* changes) {
  std::string h = fmt::format("<table class=\"worst\"><tr><th>op/output</th><th>kernel</th><th>dtype/accum</th>"
                              "<th>generator</th><th>shape</th><th>max ULP</th><th>err/bound</th><th>verdict</th>{}"
                              "<th>replay</th></tr>", changes ? "<th>change</th>" : "");
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
  return h + "</div>";
}

std::string scatter_section(const std::vector<RecordRef>& records, size_t max_points_per_chart) {
  std::string h = "<h2 id=\"scatter\">Error and err/bound against n per dtype</h2><p>One point per case: its max "
                  "|error| in ULPs and its max |error|/bound, against the row length n (log scales). Above the "
                  "dashed line at 1 the a priori bound is exceeded.</p>";
  const auto by_dtype = group_by(records, [](const RecordRef& r) { return r.dtype; });
  bool any = false;
  for (const auto& [dtype, members] : by_dtype) {
    std::vector<ScatterSeries> ulp, ratio;
    size_t with_points = 0;
    for (const RecordRef* r : members) {
      std::vector<ScatterPoint> u, b;
      if (!case_points(*r->json, u, b)) continue;
      ++with_points;
      auto it = std::find_if(ulp.begin(), ulp.end(), [&](const ScatterSeries& s) { return s.name == r->op; });
      if (it == ulp.end()) ulp.push_back({r->op, {}}), ratio.push_back({r->op, {}}), it = ulp.end() - 1;
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
  std::stable_sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) { return ratio_key(*a) > ratio_key(*b); });
  std::vector<const RecordRef*> worst, sound;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const nlohmann::json& j = *ranked[i]->json;
    const nightly::RecordChange* c = change_of(*ranked[i], changes);
    const bool regressed = c && std::string(change_css(c->change)) == "bad";
    if ((i < count && ratio_key(*ranked[i]) >= 0) || failing_must_pass(j) || regressed) worst.push_back(ranked[i]);
    const bool must_pass = string_field(j, "expectation") == "must_pass" && !(j.contains("known_weak") && j.at("known_weak") == true);
    if (must_pass && sound.size() < count && ratio_key(*ranked[i]) >= 0) sound.push_back(ranked[i]);
  }
  std::string h = fmt::format("<h2 id=\"worst\">Worst cases</h2><p>The {} records with the largest max |error|/bound, "
                              "every failing must-pass record{}. Replay a record's worst case with the command shown "
                              "(flagged: a known-weak kernel, caught as expected).</p>",
                              count, changes ? " and every regressed record (red)" : "");
  h += worst_table(worst, changes);
  h += fmt::format("<h3>Closest to their bound: the {} must-pass records (sound kernels) with the largest max |error|/bound</h3>",
                   sound.size());
  return h + worst_table(sound, changes);
}

}  // namespace normcheck::render
