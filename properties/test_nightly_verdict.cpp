// Issue 42 item 4: a nightly must not pass while comparing nothing. `diff` fails when the reports share
// no judged record or records were removed (unless --allow-removed); the HTML banner, JUnit and
// --summary-json follow the nightly verdict when a base is given; the regressions table groups the
// changed records (kernel x dtype x op) with counts before listing them. Every test drives the CLI, so
// each fails on the code before the change (there diff exited 0 on all of these, render's banner said
// PASSED, run had no --diff).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "properties/render_fixture.hpp"

namespace {

/// One per-op record of a synthetic report.
nlohmann::json record(const std::string& op, const std::string& variant, const std::string& dtype, double ratio,
                      const std::string& verdict = "pass") {
  return {{"op", op}, {"kernel", "builtin"}, {"variant", variant}, {"storage", dtype}, {"accum", dtype == "f64" ? "f64" : "f32"},
          {"property", "accuracy/normal"}, {"output", "y"}, {"verdict", verdict}, {"max_ulp", 1.0}, {"rms_ulp", 0.5},
          {"max_bound_ratio", ratio}};
}

/// A report of these per-op records (a vector: a braced list of one record would be that record).
nlohmann::json report_of(const std::vector<nlohmann::json>& records) {
  return {{"tool", "normcheck"}, {"schema_version", "1.0.0"}, {"run", {{"complete", true}, {"passed", true}}},
          {"config", {{"suite", "quick"}, {"suite_version", 1}, {"seed", "1"}}}, {"records", nlohmann::json(records)}};
}

fs::path save(const nlohmann::json& j, const std::string& name) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << j.dump();
  return p;
}

/// The last non-empty line of a text.
std::string last_line(const std::string& text) {
  std::string s = text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
}

TEST(NightlyVerdict, ADiffOfReportsSharingNoJudgedRecordFailsWithOneLineSayingWhy) {
  // A user's kernel against the committed built-in baseline: every record added or removed.
  const fs::path base = save(report_of({record("layernorm_forward", "two_pass", "f32", 0.5),
                                        record("layernorm_forward", "welford", "f32", 0.5)}), "nothing_base.json");
  nlohmann::json mine = report_of({record("layernorm_forward", "two_pass", "f32", 0.5)});
  mine["records"][0]["kernel"] = "plugin:mine";
  const fs::path now = save(mine, "nothing_now.json"), out = scratch() / "nothing_diff.json";
  for (const std::string extra : {"", " --allow-removed"}) {  // allowing removals does not make nothing something
    const Outcome o = run_cli("diff " + base.string() + " " + now.string() + " --out " + out.string() + extra);
    EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
    EXPECT_EQ(last_line(o.out), "FAILED: the reports share no judged record (1 added, 2 removed): nothing was compared") << o.out;
    const auto d = load_json(out);
    EXPECT_FALSE(d.at("passed").get<bool>());
    EXPECT_EQ(d.at("compared").get<int>(), 0);
  }
  // A record run in the base and not run in the new report is not judged in both either.
  nlohmann::json not_run = load_json(base);
  for (auto& r : not_run["records"]) r["verdict"] = "not_run";
  const Outcome o = run_cli("diff " + base.string() + " " + save(not_run, "not_run.json").string());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(last_line(o.out).find("share no judged record"), std::string::npos) << o.out;
}

TEST(NightlyVerdict, RemovedRecordsFailTheDiffUnlessAllowed) {
  const fs::path base = save(report_of({record("layernorm_forward", "two_pass", "f32", 0.5),
                                        record("layernorm_forward", "two_pass", "f64", 0.5)}), "removed_base.json");
  const fs::path now = save(report_of({record("layernorm_forward", "two_pass", "f32", 0.5)}), "removed_now.json");
  const fs::path out = scratch() / "removed_diff.json";
  Outcome o = run_cli("diff " + base.string() + " " + now.string() + " --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_EQ(last_line(o.out), "FAILED: 1 record judged in the base report not judged in the new one (removed; --allow-removed "
                              "accepts that)") << o.out;
  EXPECT_FALSE(load_json(out).at("passed").get<bool>());
  o = run_cli("diff " + base.string() + " " + now.string() + " --allow-removed --out " + out.string());
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_EQ(last_line(o.out), "no regression");
  EXPECT_TRUE(load_json(out).at("passed").get<bool>());
  // A regression still fails with removals allowed, and says both.
  nlohmann::json better = load_json(base);
  better["records"][0]["max_bound_ratio"] = 0.1;
  o = run_cli("diff " + save(better, "removed_better.json").string() + " " + now.string());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(last_line(o.out), "REGRESSED: 0 new failures, 1 regression; 1 record judged in the base report not judged in the new "
                              "one (removed; --allow-removed accepts that)") << o.out;
}

TEST(NightlyVerdict, TheHtmlBannerIsTheNightlyVerdictWhenADiffIsGiven) {
  const fs::path now = save(report_of({record("layernorm_forward", "two_pass", "f32", 0.5),
                                       record("rmsnorm_forward", "rms", "f32", 0.5)}), "banner_now.json");
  const auto banner = [&now](const fs::path& base, const std::string& extra) {
    const fs::path html = scratch() / "banner.html";
    const Outcome o = run_cli("render " + now.string() + " --out " + html.string() + (base.empty() ? "" : " --diff " + base.string()) + extra);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    const std::string page = slurp(html);
    const size_t at = page.find("<h1>");
    return at == std::string::npos ? std::string() : page.substr(at, page.find("</div>", at) - at);
  };
  EXPECT_NE(banner({}, "").find("<h1>normcheck: PASSED</h1>"), std::string::npos);
  // The run passed, but against a better base it regressed: the banner says so.
  nlohmann::json better = load_json(now);
  better["records"][0]["max_bound_ratio"] = 0.1;
  const std::string regressed = banner(save(better, "banner_better.json"), "");
  EXPECT_NE(regressed.find("<h1>normcheck: FAILED</h1>"), std::string::npos) << regressed;
  EXPECT_NE(regressed.find("REGRESSED: 0 new failures, 1 regression"), std::string::npos) << regressed;
  // A base with a record the night did not judge: FAILED, unless removals are allowed.
  nlohmann::json more = load_json(now);
  more["records"].push_back(record("layernorm_forward", "welford", "f32", 0.5));
  const fs::path bigger = save(more, "banner_bigger.json");
  EXPECT_NE(banner(bigger, "").find("<h1>normcheck: FAILED</h1>"), std::string::npos);
  EXPECT_NE(banner(bigger, " --allow-removed").find("<h1>normcheck: PASSED</h1>"), std::string::npos);
  EXPECT_NE(banner(now, "").find("<h1>normcheck: PASSED</h1>"), std::string::npos);  // the same report: compared, no change
}

TEST(NightlyVerdict, RunWithABaseWritesJunitAndSummaryJsonWithTheNightlyVerdict) {
  const std::string sel = "run --quiet --ops layernorm_forward --kernels two_pass --dtypes f32 --generators normal --cases 1 ";
  const fs::path first = scratch() / "junit_first.json";
  ASSERT_EQ(run_cli(sel + "--out " + first.string()).exit_code, 0);
  // The base judged one more record than tonight's run does (a kernel since dropped from the selection).
  nlohmann::json base = load_json(first);
  nlohmann::json gone = base["records"][0];
  gone["variant"] = "two_pass_retired";
  base["records"].push_back(gone);
  const fs::path base_path = save(base, "junit_base.json"), junit = scratch() / "night.xml", now = scratch() / "junit_now.json";
  Outcome o = run_cli(sel + "--diff " + base_path.string() + " --junit " + junit.string() + " --summary-json --out " + now.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;  // the run passed; the night did not
  const nlohmann::json summary = nlohmann::json::parse(last_line(o.out));
  EXPECT_FALSE(summary.at("passed").get<bool>()) << summary.dump();
  EXPECT_TRUE(summary.at("run_passed").get<bool>());
  EXPECT_EQ(summary.at("diff").at("counts").at("removed").get<int>(), 1);
  const std::string xml = slurp(junit);
  EXPECT_EQ(xml.find("<testsuites name=\"normcheck\" tests=\""), xml.find("<testsuites"));
  EXPECT_EQ(xml.find("failures=\"0\">\n  <testsuite"), std::string::npos) << xml.substr(0, 200);  // the top-level count is not 0
  EXPECT_NE(xml.find("<testsuite name=\"normcheck.nightly_diff\""), std::string::npos);
  EXPECT_NE(xml.find("two_pass_retired"), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"removed\""), std::string::npos);
  // Allowed removals: the night passes, and the JUnit has no failure.
  o = run_cli(sel + "--diff " + base_path.string() + " --allow-removed --junit " + junit.string() + " --summary-json --out " +
              now.string());
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(nlohmann::json::parse(last_line(o.out)).at("passed").get<bool>());
  EXPECT_EQ(slurp(junit).find("<failure"), std::string::npos);
  EXPECT_EQ(run_cli(sel + "--allow-removed --out " + now.string()).exit_code, 2);  // without --diff: bad usage
  EXPECT_EQ(run_cli(sel + "--diff " + (scratch() / "absent.json").string() + " --out " + now.string()).exit_code, 2);
}

TEST(NightlyVerdict, TheRegressionsTableGroupsTheChangedRecordsWithCountsBeforeListingThem) {
  nlohmann::json base = report_of({}), now = report_of({});
  for (const char* dtype : {"f32", "f64"})
    for (const char* op : {"layernorm_forward", "layernorm_backward"})
      for (const char* generator : {"normal", "large_mean", "constant"}) {
        nlohmann::json r = record(op, "two_pass", dtype, 0.5);
        r["property"] = std::string("accuracy/") + generator;
        base["records"].push_back(r);
        // f32 layernorm_forward regressed on every generator, f64 layernorm_backward improved on one.
        if (std::string(dtype) == "f32" && std::string(op) == "layernorm_forward") r["max_bound_ratio"] = 0.9;
        if (std::string(dtype) == "f64" && std::string(op) == "layernorm_backward" && std::string(generator) == "normal")
          r["max_bound_ratio"] = 0.1;
        now["records"].push_back(r);
      }
  const fs::path b = save(base, "groups_base.json"), n = save(now, "groups_now.json"), out = scratch() / "groups_diff.json";
  const Outcome d = run_cli("diff " + b.string() + " " + n.string() + " --out " + out.string());
  EXPECT_EQ(d.exit_code, 1);
  const size_t heading = d.out.find("changed records by kernel x dtype x op (2 groups):");
  ASSERT_NE(heading, std::string::npos) << d.out;
  EXPECT_NE(d.out.find("3 changed  builtin two_pass f32 layernorm_forward: 3 regression", heading), std::string::npos) << d.out;
  EXPECT_LT(heading, d.out.find("regression   records"));  // the groups come before the records
  const auto groups = load_json(out).at("groups");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].at("regression").get<int>(), 3);
  EXPECT_EQ(groups[1].at("improvement").get<int>(), 1);
  const fs::path html = scratch() / "groups.html";
  ASSERT_EQ(run_cli("render " + n.string() + " --diff " + b.string() + " --out " + html.string()).exit_code, 0);
  const std::string page = slurp(html);
  const size_t table = page.find("id=\"change-groups\"");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(page.find("<tr class=\"bad\"><td>builtin two_pass</td><td>f32</td><td>layernorm_forward</td><td class=\"n\">3</td>"
                      "<td class=\"n\"></td><td class=\"n\">3</td>", table), std::string::npos);
  EXPECT_LT(table, page.find("<tr class=\"bad\"><td>regression</td>"));  // grouped first, then listed
}

}  // namespace
