#include "render/html_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

#include "render/html_sections.hpp"
#include "report/ci_output.hpp"
#include "render/report_view.hpp"
#include "render/svg_charts.hpp"

namespace normcheck::render {
namespace {

const char* const kStyle = R"css(
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:13px;margin:16px 24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:22px 0 6px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f0f0f0}input.filter{display:block;margin:6px 0 2px;width:260px}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{padding:10px 14px;border-radius:6px;margin-bottom:10px}
.verdict.passed{background:#d4edda;border:2px solid #2e7d32}.verdict.failed{background:#f8d7da;border:2px solid #c62828}
.incomplete{color:#c62828;font-weight:bold}
.c-pass{background:#d4edda}.c-fail{background:#f5b7b1;font-weight:bold}.c-flagged{background:#fff3cd}
.c-not_run{background:#e0e0e0}.c-uncertified{background:#e1d5f0}.c-other{background:#d6e9f8}
tr.bad td{background:#f8d7da}tr.good td{background:#d4edda}
.badge{display:inline-block;padding:2px 8px;margin:2px;border-radius:10px;border:1px solid #999}
.badge.bad{background:#f5b7b1;border-color:#c62828;font-weight:bold}.badge.good{background:#c8e6c9;border-color:#2e7d32}
code{font-family:"DejaVu Sans Mono",monospace;font-size:12px;user-select:all;white-space:pre-wrap;overflow-wrap:anywhere}
table.worst{width:100%;font-size:12px}table.worst td{white-space:nowrap}table.worst td.w{white-space:normal;min-width:90px}
table.worst td:last-child{white-space:normal;min-width:200px}code span{white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:8px}figure{margin:0;border:1px solid #ddd;padding:4px}
figure{width:min-content}figcaption{font-size:11px;color:#555}nav a{margin-right:12px}
svg.chart{background:#fff}.ct{font-size:12px;font-weight:bold}.tl{font-size:9px;fill:#444}.al{font-size:10px;fill:#333}
.grid{stroke:#e4e4e4;stroke-width:1}.frame{fill:none;stroke:#888}.bar{fill:#4a78b5}.bar.nf{fill:#c62828}
.ref{stroke:#c62828;stroke-width:1.5;stroke-dasharray:6 3}.reft{font-size:10px;fill:#c62828}
.pts{fill-opacity:.65}.lg{font-size:10px}
)css";

/// Sorting and filtering of the tables marked "sortable" (the page is complete without it: scripts
/// disabled, the tables are static). A header click sorts by that column, numbers as numbers ("inf"
/// largest), again in the other direction; a filter box above each table hides rows without the text.
/// "#click=ID" in the URL clicks that element once loaded (how the headless-browser test clicks).
const char* const kScript = R"js(
(function () {
  function key(text) {
    var s = text.trim().split(/\s+/)[0].replace(/,/g, '');
    if (s === '' || s === '-') return -Infinity;
    if (s === 'inf' || s === 'nan') return Infinity;
    if (s === '-inf') return -Infinity;
    var v = Number(s);
    return isNaN(v) ? null : v;
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (t, ti) {
    var body = t.tBodies[0];
    Array.prototype.forEach.call(t.rows[0].cells, function (th, ci) {
      th.id = (t.id || 'table' + ti) + '-th-' + ci;
      th.style.cursor = 'pointer';
      th.title = 'sort by this column';
      th.addEventListener('click', function () {
        var desc = th.getAttribute('data-desc') !== '1';
        th.setAttribute('data-desc', desc ? '1' : '0');
        var rows = Array.prototype.slice.call(t.rows, 1);
        rows.sort(function (a, b) {
          var x = a.cells[ci] ? a.cells[ci].textContent : '', y = b.cells[ci] ? b.cells[ci].textContent : '';
          var kx = key(x), ky = key(y);
          var c = kx !== null && ky !== null ? (kx < ky ? -1 : kx > ky ? 1 : 0) : x.localeCompare(y);
          return desc ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
    var f = document.createElement('input');
    f.type = 'search';
    f.placeholder = 'filter rows';
    f.className = 'filter';
    f.addEventListener('input', function () {
      var q = f.value.toLowerCase();
      Array.prototype.slice.call(t.rows, 1).forEach(function (r) {
        r.style.display = r.textContent.toLowerCase().indexOf(q) < 0 ? 'none' : '';
      });
    });
    t.parentNode.insertBefore(f, t);
  });
  var m = /^#click=(.+)$/.exec(location.hash);
  if (m) { var e = document.getElementById(decodeURIComponent(m[1])); if (e) e.click(); }
})();
)js";

/// "PASSED"/"FAILED", completeness, configuration and progress. With a diff the banner is the nightly
/// verdict: the run passed and the comparison with the base passed (diff's exit status).
std::string header(const nlohmann::json& report, const nightly::DiffResult* diff, const RenderOptions& o) {
  const nlohmann::json& run = report.at("run");
  const nlohmann::json config = report.contains("config") && report.at("config").is_object() ? report.at("config")
                                                                                             : nlohmann::json::object();
  const bool run_passed = run.contains("passed") && run.at("passed") == true;
  const bool passed = run_passed && (!diff || diff->passed());
  const bool complete = run.contains("complete") && run.at("complete") == true;
  const CaseTotals totals = case_totals(report);
  std::string nightly;
  if (diff)
    nightly = fmt::format("<p class=\"nightly\">run: {}; against {}: {}</p>", run_passed ? "passed" : "FAILED", escape(o.base_name),
                          escape(diff->verdict_line()));
  std::string h = fmt::format("<div class=\"verdict {}\"><h1>normcheck: {}</h1>{}{}</div>", passed ? "passed" : "failed",
                              passed ? "PASSED" : "FAILED", nightly,
                              complete ? "<span>complete run</span>"
                                       : "<span class=\"incomplete\">INCOMPLETE (interrupted): not every planned case ran</span>");
  const auto row = [](const std::string& k, const std::string& v) {
    return fmt::format("<tr><th>{}</th><td>{}</td></tr>", escape(k), v);
  };
  h += "<table class=\"meta\">" + row("report", escape(o.report_name)) + row("suite", escape(text_field(config, "suite"))) +
       row("seed", escape(text_field(config, "seed"))) + row("git revision", escape(text_field(run, "git_revision"))) +
       row("time", escape(text_field(run, "start_time") + " \u2013 " + text_field(run, "end_time"))) +
       row("cases done / planned (every section)", escape(fmt::format("{} / {}", totals.done, totals.planned))) +
       row("records", escape(record_counts_text(record_counts(report)))) +
       row("threads", escape(text_field(run, "threads"))) + row("schema", escape(text_field(report, "schema_version")));
  if (run.contains("shard") && !run.at("shard").is_null()) h += row("shard", escape(text_field(run, "shard")));
  if (run.contains("merged_from") && run.at("merged_from").is_array())
    h += row("merged from", escape(fmt::format("{} shard reports", run.at("merged_from").size())));
  std::string sections;
  for (const auto& [name, section] : report.items())
    if (section.is_object() && section.contains("cases_planned"))
      sections += fmt::format("{}{}: {} / {}{}", sections.empty() ? "" : "; ", name, text_field(section, "cases_done"),
                              text_field(section, "cases_planned"), section.contains("passed") && section.at("passed") == false ? " (FAILED)" : "");
  if (!sections.empty()) h += row("section cases done / planned", escape(sections));
  h += row("command line", "<code>" + escape(text_field(run, "command_line")) + "</code>");
  return h + "</table>";
}

/// Pass/fail counts per (section, op, dtype), colored by verdict class.
std::string summary_section(const std::vector<RecordRef>& records) {
  using Key = std::tuple<std::string, std::string, std::string>;  // section, op, dtype
  std::vector<Key> order;
  std::map<Key, std::array<int64_t, kVerdictClasses>> counts;
  for (const RecordRef& r : records) {
    const Key key{r.section, r.op, r.dtype};
    if (!counts.count(key)) order.push_back(key), counts[key].fill(0);
    ++counts[key][static_cast<size_t>(verdict_class(*r.json))];
  }
  static const char* css[] = {"pass", "fail", "flagged", "not_run", "uncertified", "other"};
  std::string h = "<h2 id=\"summary\">Summary: records per op and dtype</h2><p>flagged: a known-weak kernel caught "
                  "failing its dtype's contract, as expected. measured: reported, not judged.</p><table class=\"sortable\" id=\"summary-table\"><tr>"
                  "<th>section</th><th>op</th><th>dtype</th>";
  for (int c = 0; c < kVerdictClasses; ++c) h += fmt::format("<th>{}</th>", verdict_class_name(static_cast<VerdictClass>(c)));
  h += "</tr>";
  for (const Key& key : order) {
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td>", escape(std::get<0>(key)), escape(std::get<1>(key)),
                     escape(std::get<2>(key)));
    for (int c = 0; c < kVerdictClasses; ++c) {
      const int64_t n = counts[key][static_cast<size_t>(c)];
      h += n ? fmt::format("<td class=\"n c-{}\">{}</td>", css[c], format_count(n)) : "<td class=\"n\"></td>";
    }
    h += "</tr>";
  }
  return h + "</table>";
}

int severity(nightly::Change c) {
  switch (c) {
    case nightly::Change::new_failure: return 0;
    case nightly::Change::regression: return 1;
    case nightly::Change::fixed: return 2;
    case nightly::Change::improvement: return 3;
    case nightly::Change::added: return 4;
    case nightly::Change::removed: return 5;
    case nightly::Change::unchanged: return 6;
  }
  return 6;
}

/// The changed records counted per kernel x dtype x op, groups with new failures or regressions first.
std::string change_groups_table(const nightly::DiffResult& d) {
  static constexpr nightly::Change kShown[] = {nightly::Change::new_failure, nightly::Change::regression, nightly::Change::removed,
                                               nightly::Change::fixed, nightly::Change::improvement, nightly::Change::added};
  const std::vector<nightly::ChangeGroup> groups = nightly::group_changes(d);
  std::string h = fmt::format("<p>{} changed records in {} groups (kernel \u00d7 dtype \u00d7 op):</p><table class=\"sortable\" "
                              "id=\"change-groups\"><tr><th>kernel</th><th>dtype</th><th>op</th><th>changed</th>",
                              format_count(static_cast<int64_t>(d.changes.size()) - d.count(nightly::Change::unchanged)), groups.size());
  for (nightly::Change c : kShown) h += fmt::format("<th>{}</th>", nightly::change_name(c));
  h += "</tr>";
  for (const nightly::ChangeGroup& g : groups) {
    const bool bad = g.counts[static_cast<size_t>(nightly::Change::new_failure)] + g.counts[static_cast<size_t>(nightly::Change::regression)] > 0;
    h += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>", bad ? " class=\"bad\"" : "", escape(g.kernel),
                     escape(g.dtype), escape(g.op), format_count(g.changed()));
    for (nightly::Change c : kShown) {
      const int64_t k = g.counts[static_cast<size_t>(c)];
      h += k ? fmt::format("<td class=\"n\">{}</td>", format_count(k)) : "<td class=\"n\"></td>";
    }
    h += "</tr>";
  }
  return h + "</table><p>The changed records:</p>";
}

/// The diff against the base report: counts per class and the changed records, worst first.
std::string diff_section(const nightly::DiffResult& d, const RenderOptions& o) {
  std::array<int64_t, 7> counts{};
  std::vector<const nightly::RecordChange*> changed;
  for (const nightly::RecordChange& c : d.changes) {
    ++counts[static_cast<size_t>(severity(c.change))];
    if (c.change != nightly::Change::unchanged) changed.push_back(&c);
  }
  std::stable_sort(changed.begin(), changed.end(), [](auto* a, auto* b) { return severity(a->change) < severity(b->change); });
  std::string h = fmt::format("<h2 id=\"regressions\">Regressions against {}</h2><p>{}</p><p>", escape(o.base_name),
                              d.passed() ? "no regression" : "<b class=\"incomplete\">" + escape(d.verdict_line()) + "</b>");
  for (nightly::Change c : {nightly::Change::new_failure, nightly::Change::regression, nightly::Change::fixed,
                            nightly::Change::improvement, nightly::Change::added, nightly::Change::removed, nightly::Change::unchanged})
    h += fmt::format("<span class=\"badge {}\">{}: {}</span>", counts[static_cast<size_t>(severity(c))] ? change_css(c) : "",
                     nightly::change_name(c), format_count(counts[static_cast<size_t>(severity(c))]));
  h += "</p>";
  for (const std::string& w : d.warnings) h += "<p>warning: " + escape(w) + "</p>";
  if (changed.empty()) return h;
  h += change_groups_table(d);
  const size_t shown = std::min<size_t>(changed.size(), 300);
  h += "<table><tr><th>change</th><th>section</th><th>record</th><th>why</th></tr>";
  for (size_t i = 0; i < shown; ++i) {
    // a new failure's why is its verdict change: the magnitudes (err/bound, ULPs before and after) beside it
    const nightly::RecordChange& c = *changed[i];
    const std::string magnitudes = c.change == nightly::Change::new_failure ? c.details.substr(0, c.details.find('\n')) : "";
    h += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>", change_css(c.change), nightly::change_name(c.change),
                     escape(c.section), escape(c.key), escape(c.why), magnitudes.empty() ? "" : "<br>" + escape(magnitudes));
  }
  h += "</table>";
  if (shown < changed.size()) h += fmt::format("<p>\u2026 and {} more changes (normcheck diff lists them all)</p>", changed.size() - shown);
  return h;
}

}  // namespace

std::string render_html(const nlohmann::json& report, const nightly::DiffResult* diff, const RenderOptions& o) {
  require_report(report);
  const std::vector<RecordRef> records = collect_records(report);
  ChangeMap changes;
  if (diff)
    for (const nightly::RecordChange& c : diff->changes) changes[change_key(c.section, c.key)] = &c;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>normcheck report " +
                  escape(o.report_name) + "</title><style>" + kStyle + "</style></head><body>\n";
  // The verdict first (issue 46): the header's, the regressions against the base, the summaries per
  // kernel and per op; the trends, worst cases and charts after.
  h += header(report, diff, o) + "<nav>" + std::string(diff ? "<a href=\"#regressions\">regressions</a>" : "") +
       "<a href=\"#kernels\">per kernel</a><a href=\"#summary\">summary</a>" + std::string(o.trends ? "<a href=\"#trends\">trends</a>" : "") +
       "<a href=\"#worst\">worst cases</a><a href=\"#histograms\">ULP histograms</a><a href=\"#scatter\">error vs n</a></nav>\n";
  if (diff) h += diff_section(*diff, o) + "\n";
  h += kernel_summary_section(records) + "\n";
  h += summary_section(records) + "\n";
  if (o.trends) h += trend_section(*o.trends, o.history_name, o.trend_count) + "\n";
  h += worst_section(records, diff ? &changes : nullptr, o.worst_count) + "\n";
  h += histogram_section(records) + "\n";
  h += scatter_section(records, o.max_points_per_chart) + "\n";
  return h + "<p style=\"color:#777\">normcheck render: self-contained; one inline script sorts and filters the tables, "
             "the page is complete without it.</p><script>" + kScript + "</script></body></html>\n";
}

}  // namespace normcheck::render
