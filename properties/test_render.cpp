// normcheck render (issue 8): the HTML report of a real report is self-contained, has its sections
// and charts, escapes hostile strings, highlights a planted regression, handles unknown sections and
// huge point sets, and refuses bad input with one line and exit 2.
#include <gtest/gtest.h>

#include <cmath>

#include "nightly/diff.hpp"
#include "properties/render_fixture.hpp"
#include "render/svg_charts.hpp"

namespace {

using namespace normcheck;

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

/// Renders `report` (extra arguments appended) into `html_name` in the scratch folder; returns the HTML.
std::string render_to(const fs::path& report, const std::string& html_name, const std::string& extra = "") {
  const fs::path out = scratch() / html_name;
  const Outcome o = run_cli("render " + report.string() + " --out " + out.string() + " " + extra);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.err.empty()) << o.err;
  return slurp(out);
}

TEST(Render, SelfContainedWithSectionsAndCharts) {
  const std::string html = render_to(render_fixture_report(), "real.html");
  ASSERT_FALSE(html.empty());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* forbidden : {"http://", "https://", "src=", "<link", "url(", "@import", "<img", "<iframe", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(html.find(forbidden), std::string::npos) << forbidden;
  // One inline script (sorting and filtering); the tables are complete in the static HTML.
  EXPECT_EQ(count_of(html, "<script"), 1u);
  EXPECT_NE(html.find("<script>\n(function () {"), std::string::npos);
  EXPECT_NE(html.find("id=\"kernels-table\""), std::string::npos);
  EXPECT_NE(html.find("<th>worst element</th>"), std::string::npos);
  const bool passed = load_json(render_fixture_report()).at("run").at("passed").get<bool>();
  EXPECT_NE(html.find(passed ? "normcheck: PASSED" : "normcheck: FAILED"), std::string::npos);
  EXPECT_NE(html.find("complete run"), std::string::npos);
  // The verdict first (issue 46): the header's verdict, the per-kernel and per-op summaries, then the
  // worst cases and the charts.
  size_t previous = html.find(passed ? "normcheck: PASSED" : "normcheck: FAILED");
  for (const char* section : {"id=\"kernels\"", "id=\"summary\"", "id=\"worst\"", "id=\"histograms\"", "id=\"scatter\""}) {
    const size_t at = html.find("<h2 " + std::string(section));
    ASSERT_NE(at, std::string::npos) << section;
    EXPECT_LT(previous, at) << section;
    previous = at;
  }
  EXPECT_EQ(html.find("id=\"regressions\""), std::string::npos);
  for (const char* row : {"<td>layernorm_forward</td><td>f32</td>", "<td>rmsnorm_forward</td><td>bf16</td>",
                          "<td>linear_rmsnorm</td><td>f32</td>", "<td>grouped_norm:batch_norm</td><td>bf16</td>"})
    EXPECT_NE(html.find(row), std::string::npos) << row;
  EXPECT_GE(count_of(html, "<svg"), 8u + 4u);  // >= 8 op x dtype histograms, 2 scatter charts per dtype
  EXPECT_EQ(count_of(html, "<svg"), count_of(html, "</svg>"));
  EXPECT_GT(count_of(html, "class=\"bar"), 20u);
  EXPECT_EQ(count_of(html, "class=\"ref\""), 2u);  // err/bound = 1 line, one per dtype
  EXPECT_GE(count_of(html, "class=\"pts\""), 4u);
  EXPECT_NE(html.find("\xE2\x89\xA4" "0.5"), std::string::npos);  // bucket axis label
  EXPECT_NE(html.find("<span>normcheck</span> <span>replay</span> <span>--report</span>"), std::string::npos);
  EXPECT_LT(html.size(), 1000000u);
}

TEST(Render, DefaultOutputBesideTheReport) {
  const fs::path copy = scratch() / "beside.json";
  fs::copy_file(render_fixture_report(), copy, fs::copy_options::overwrite_existing);
  const Outcome o = run_cli("render " + copy.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(fs::exists(scratch() / "beside.html"));
  EXPECT_NE(o.out.find("beside.html"), std::string::npos);
}

TEST(Render, EscapesHostileStrings) {
  nlohmann::json r = load_json(render_fixture_report());
  r["run"]["command_line"] = "normcheck run <script>alert(1)</script>";
  r["records"][0]["kernel"] = "\"><img src=x onerror=alert(2)>";
  r["records"][0]["worst_case"]["replay"] = "normcheck replay <b>&</b>";
  r["records"][0]["max_bound_ratio"] = "inf";  // in the worst-case table
  r["<svg onload=alert(3)>"] = {{"records", {{{"op", "<i>op</i>"}, {"storage", "f32"}, {"verdict", "pass"}}}}};
  const std::string html = render_to(save_json(r, "hostile.json"), "hostile.html");
  EXPECT_EQ(count_of(html, "<script"), 1u);  // ours only
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_EQ(html.find("<i>op"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;svg onload=alert(3)&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&amp;&lt;/b&gt;"), std::string::npos);
}

TEST(Render, ANewFailureShowsItsMagnitudesBesideItsVerdictChange) {
  // Issue 46: the why column of a new failure said only "pass -> fail"; the numbers before and after
  // (err/bound, ULPs) stand beside it.
  const fs::path base = render_fixture_report();
  nlohmann::json now = load_json(base);
  const size_t i = regressable_record(now);
  now["records"][i]["verdict"] = "fail";
  now["records"][i]["max_bound_ratio"] = 3.5;
  const std::string html = render_to(save_json(now, "now_failing.json"), "new_failure.html", "--diff " + base.string());
  const std::string key = render::escape(nightly::record_identity(now["records"][i]));
  const size_t row = html.find("<tr class=\"bad\"><td>new_failure</td><td>records</td><td>" + key + "</td>");
  ASSERT_NE(row, std::string::npos) << html.substr(html.find("id=\"regressions\""), 3000);
  const std::string cell = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(cell.find("-&gt; fail<br>max err/bound "), std::string::npos) << cell;
  EXPECT_NE(cell.find(" -&gt; 3.5; max ULP (normal outputs) "), std::string::npos) << cell;
}

TEST(Render, DiffHighlightsAPlantedRegression) {
  const fs::path now = render_fixture_report();
  nlohmann::json base = load_json(now);
  const size_t i = regressable_record(base);
  plant_regression(base, i);  // the base was better: the real report regressed
  size_t j = i + 1;
  while (j + 1 < base["records"].size() && base["records"][j]["verdict"] != "pass") ++j;
  base["records"][j]["verdict"] = "fail";  // failed in the base, passes now: fixed
  const std::string diff = render_to(now, "diff.html", "--diff " + save_json(base, "base.json").string());
  ASSERT_NE(diff.find("id=\"regressions\""), std::string::npos);
  EXPECT_LT(diff.find("id=\"regressions\""), diff.find("id=\"summary\""));  // at the top
  EXPECT_NE(diff.find("REGRESSED"), std::string::npos);
  EXPECT_NE(diff.find("<span class=\"badge bad\">regression: 1</span>"), std::string::npos);
  EXPECT_NE(diff.find("<span class=\"badge good\">fixed: 1</span>"), std::string::npos);
  EXPECT_NE(diff.find("new_failure: 0"), std::string::npos);
  const std::string key = render::escape(nightly::record_identity(base["records"][i]));
  EXPECT_NE(diff.find("<tr class=\"bad\"><td>regression</td><td>records</td><td>" + key + "</td>"), std::string::npos);
  EXPECT_NE(diff.find("<tr class=\"good\"><td>fixed</td><td>records</td><td>" +
                      render::escape(nightly::record_identity(base["records"][j])) + "</td>"),
            std::string::npos);
  const std::string worst = diff.substr(diff.find("id=\"worst\""));  // the regressed record is in the worst table, red
  const std::string replay = "--record</span> <span>" + std::to_string(i) + "</span>";
  const size_t row = worst.find(replay);
  ASSERT_NE(row, std::string::npos);
  EXPECT_EQ(worst.compare(worst.rfind("<tr", row), 16, "<tr class=\"bad\">"), 0);
}

TEST(Render, UnknownSectionsShardsAndHugePointSets) {
  nlohmann::json r = load_json(render_fixture_report());
  r["run"]["shard"] = {{"index", 1}, {"count", 4}};
  r["run"]["merged_from"] = {"a.json", "b.json"};
  r["run"]["complete"] = false;
  r["qr_contraction"] = nullptr;
  r["port_hamiltonian"] = {{"records",
                            {{{"op", "port_hamiltonian"}, {"storage", "f64"}, {"verdict", "pass"}, {"max_ulp", 1.5},
                              {"max_bound_ratio", 0.25}, {"ulp_histogram", {7, 3, 1}}},
                             {{"op", "port_hamiltonian"}, {"storage", "f64"}, {"verdict", "fail"}, {"max_ulp", "inf"},
                              {"max_bound_ratio", "inf"}, {"ulp_histogram", {1}}}}}};
  nlohmann::json& points = r["records"][0]["points"];
  for (const char* f : {"case_index", "rows", "n", "max_ulp", "max_bound_ratio"}) points[f] = nlohmann::json::array();
  for (int k = 0; k < 6000; ++k) {
    points["case_index"].push_back(k), points["rows"].push_back(1), points["n"].push_back(1 + k);
    points["max_ulp"].push_back(k % 7 == 0 ? nlohmann::json("inf") : nlohmann::json(k * 0.01));
    points["max_bound_ratio"].push_back(k * 1e-4);
  }
  const std::string html = render_to(save_json(r, "unknown.json"), "unknown.html");
  EXPECT_NE(html.find("<td>port_hamiltonian</td><td>port_hamiltonian</td><td>f64</td><td class=\"n c-pass\">1</td>"
                      "<td class=\"n c-fail\">1</td>"),
            std::string::npos);
  EXPECT_NE(html.find("port_hamiltonian \xC2\xB7 f64</text>"), std::string::npos);  // its histogram
  EXPECT_NE(html.find("INCOMPLETE (interrupted)"), std::string::npos);
  EXPECT_NE(html.find("<th>shard</th>"), std::string::npos);
  EXPECT_NE(html.find("2 shard reports"), std::string::npos);
  EXPECT_NE(html.find("thinned to"), std::string::npos);
  size_t circles = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const size_t in_chart = count_of(html.substr(at, html.find("</svg>", at) - at), "<circle");
    EXPECT_LE(in_chart, 1000u);  // thinned to the default cap per chart
    circles += in_chart;
  }
  EXPECT_GE(circles, 1000u);  // the 6000-point record's chart is drawn, thinned, with one circle per point
  EXPECT_NE(html.find("<title>case "), std::string::npos);  // a point names its case on hover
  EXPECT_LT(html.size(), 1000000u);
}

TEST(Render, BadInputIsOneLineAndExit2) {
  const fs::path report = render_fixture_report();
  nlohmann::json other_seed = load_json(report);
  other_seed["config"]["seed"] = "12345";
  std::ofstream(scratch() / "invalid.json") << "{\"tool\": \"normcheck\", ";
  const fs::path self = scratch() / "self.json";
  fs::copy_file(report, self, fs::copy_options::overwrite_existing);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"render " + (scratch() / "missing.json").string(), "cannot open"},
      {"render " + (scratch() / "invalid.json").string(), "not valid JSON"},
      {"render " + save_json({{"tool", "other"}, {"records", nlohmann::json::array()}}, "other.json").string(), "not a normcheck report"},
      {"render " + report.string() + " --bogus", "--bogus"},
      {"render " + report.string() + " --out /nonexistent_dir/x/y.html", "cannot write"},
      {"render " + report.string() + " --diff " + save_json(other_seed, "other_seed.json").string(), "seed differs"},
      {"render " + report.string() + " --diff " + (scratch() / "missing.json").string(), "cannot open"},
      {"render", "report is required"},
      {"render " + self.string() + " --out " + self.string(), "would overwrite the report"}};
  for (const auto& [args, why] : cases) {
    fs::remove(scratch() / "bad.html");
    const bool has_out = args.find("--out") != std::string::npos;
    const Outcome o = run_cli(args + (has_out ? "" : " --out " + (scratch() / "bad.html").string()));
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_EQ(o.err.rfind("normcheck: error: ", 0), 0u) << args << ": " << o.err;
    EXPECT_EQ(count_of(o.err, "\n"), 1u) << args << ": " << o.err;
    EXPECT_NE(o.err.find(why), std::string::npos) << args << ": " << o.err;
    EXPECT_FALSE(fs::exists(scratch() / "bad.html")) << args;
    EXPECT_FALSE(fs::exists(scratch() / "bad.html.tmp")) << args;
  }
  EXPECT_TRUE(slurp(self) == slurp(report));  // not EXPECT_EQ: gtest's line diff of two 2 MB reports needs O(lines^2) memory
}

TEST(RenderCharts, Primitives) {
  EXPECT_EQ(render::escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(render::format_count(1234567), "1,234,567");
  EXPECT_EQ(render::format_count(12), "12");
  EXPECT_EQ(render::format_value(HUGE_VAL), "inf");
  EXPECT_EQ(render::ulp_bucket_label(1), "1");
  EXPECT_EQ(render::ulp_bucket_label(4), "8");
  EXPECT_EQ(render::ulp_bucket_label(21), "2^20");
  EXPECT_EQ(render::ulp_bucket_range(2, 48), "(1, 2] ULP");
  EXPECT_EQ(render::ulp_bucket_range(47, 48), "> 2^45 ULP or non-finite");
  std::vector<render::ScatterSeries> s = {{"a", {}}, {"b", {}}};
  for (int i = 0; i < 3000; ++i) s[0].points.push_back({1.0 + i, i == 1234 ? 1e9 : 1.0});
  for (int i = 0; i < 10; ++i) s[1].points.push_back({1.0 + i, 2.0});
  const std::vector<render::ScatterSeries> copy = s;
  EXPECT_EQ(render::thin_series(s, 2000) + s[0].points.size() + s[1].points.size(), 3010u);
  EXPECT_LE(s[0].points.size() + s[1].points.size(), 2000u);
  EXPECT_EQ(s[0].points[0].y, 1e9);  // the largest is kept
  std::vector<render::ScatterSeries> again = copy;
  render::thin_series(again, 2000);
  ASSERT_EQ(again[0].points.size(), s[0].points.size());
  for (size_t k = 0; k < s[0].points.size(); ++k) EXPECT_EQ(again[0].points[k].x, s[0].points[k].x);  // deterministic
  const std::string svg = render::histogram_svg({5, 0, 100000}, 10, 48, "t<x>");
  EXPECT_NE(svg.find("t&lt;x&gt;"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<rect x"), 2u + 1u);  // two bars and the frame
}

}  // namespace

namespace {

TEST(Render, WorstCasesPutMustPassRecordsBeforeKnownWeakOnesAndExplainRedBars) {
  const std::string html = render_to(render_fixture_report(), "severity.html");
  const size_t start = html.find("id=\"worst-table\""), end = html.find("</table>", start);
  ASSERT_NE(start, std::string::npos);
  const std::string table = html.substr(start, end - start);
  // The fixture holds far more than 20 must-pass records with a ratio: the first 20 rows are theirs,
  // not known-weak kernels flagged as expected (the table used to open with 20 "inf flagged" rows).
  size_t rows = 0, flagged_in_first_20 = 0;
  for (size_t tr = table.find("<tr", table.find("</tr>")); tr != std::string::npos && rows < 20; tr = table.find("<tr", tr + 1), ++rows)
    flagged_in_first_20 += table.substr(tr, table.find("</tr>", tr) - tr).find(">flagged<") != std::string::npos;
  EXPECT_EQ(rows, 20u);
  EXPECT_EQ(flagged_in_first_20, 0u);
  // Each row shows its worst element's values.
  EXPECT_NE(table.find(": kernel "), std::string::npos);
  EXPECT_NE(table.find(" vs exact "), std::string::npos);
  // A red histogram bar in a report whose records passed comes with its explanation.
  const auto report = load_json(render_fixture_report());
  int64_t nonfinite_passing = 0;
  for (const auto& r : report.at("records"))
    if (r.value("known_weak", false) == false && r.at("verdict") == "pass")
      nonfinite_passing += r.value("nonfinite_mismatches", int64_t{0});
  EXPECT_EQ(html.find("non-finite outputs (Inf or NaN") != std::string::npos, nonfinite_passing > 0) << nonfinite_passing;
}

}  // namespace
