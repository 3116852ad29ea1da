// normcheck render in a real browser: headless Chromium loads the HTML report (with a --diff
// against a planted regression), takes a 1280x2400 screenshot that must not be blank, logs no
// console or script errors, and its DOM holds the SVG charts. Skipped only without chromium
// (scripts/setup.sh installs it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "properties/render_fixture.hpp"

namespace {

const char* const kChromium = "/usr/bin/chromium";
const std::string kPngCheck = std::string(NORMCHECK_SOURCE_DIR) + "/scripts/check_png.py";

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

/// A shell command's exit status and its stdout and stderr.
Outcome shell(const std::string& command) {
  const fs::path out = scratch() / "sh_stdout", err = scratch() / "sh_stderr";
  const int status = std::system((command + " >" + out.string() + " 2>" + err.string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, slurp(out), slurp(err)};
}

/// Headless Chromium on `html` with `args`, a private HOME and profile, logging to stderr; at most 60 s.
Outcome chromium(const fs::path& html, const std::string& args, const std::string& fragment = "") {
  const fs::path home = scratch() / "chromium_home";
  fs::create_directories(home);
  return shell("env HOME=" + home.string() + " timeout 60 " + kChromium +
               " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run"
               " --user-data-dir=" + (home / "profile").string() + " --enable-logging=stderr --v=0 " + args +
               " 'file://" + html.string() + fragment + "'");
}

/// Console messages (script errors included) in Chromium's log: lines with ":CONSOLE".
std::string console_lines(const std::string& log) {
  std::string lines, line;
  std::istringstream in(log);
  while (std::getline(in, line))
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) lines += line + "\n";
  return lines;
}

class RenderBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh installs Debian's chromium)";
  }
};

TEST_F(RenderBrowser, ScreenshotIsNotBlankLogsNoErrorsAndTheDomHasCharts) {
  const fs::path now = render_fixture_report();
  nlohmann::json base = load_json(now);
  plant_regression(base, regressable_record(base));
  const fs::path html = scratch() / "browser.html", png = scratch() / "browser.png";
  const Outcome r = run_cli("render " + now.string() + " --diff " + save_json(base, "browser_base.json").string() +
                            " --out " + html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const Outcome shot = chromium(html, "--screenshot=" + png.string() + " --window-size=1280,2400");
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png)) << shot.err;
  EXPECT_EQ(console_lines(shot.err), "");
  const Outcome check = shell("/usr/bin/python3 " + kPngCheck + " " + png.string() + " 1280 2400");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  const Outcome dom = chromium(html, "--dump-dom");
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(console_lines(dom.err), "");
  EXPECT_GE(count_of(dom.out, "<svg"), 12u);
  EXPECT_EQ(count_of(dom.out, "<svg"), count_of(slurp(html), "<svg"));  // every chart parsed as SVG
  EXPECT_NE(dom.out.find("Regressions against"), std::string::npos);
  EXPECT_NE(dom.out.find("<tr class=\"bad\">"), std::string::npos);
  EXPECT_NE(dom.out.find("Worst cases"), std::string::npos);
}

/// The text of column `col` of each body row of the table with id `id` in `dom`.
std::vector<std::string> column_of(const std::string& dom, const std::string& id, size_t col) {
  std::vector<std::string> values;
  const size_t start = dom.find("id=\"" + id + "\""), end = dom.find("</table>", start);
  if (start == std::string::npos) return values;
  const std::string table = dom.substr(start, end - start);
  for (size_t tr = table.find("<tr", table.find("</tr>")); tr != std::string::npos; tr = table.find("<tr", tr + 1)) {
    size_t td = tr;
    for (size_t c = 0; c <= col && td != std::string::npos; ++c) td = table.find("<td", td + 1);
    if (td == std::string::npos) break;
    const size_t open = table.find('>', td) + 1;
    values.push_back(table.substr(open, table.find("</td>", open) - open));
  }
  return values;
}

double numeric(const std::string& cell) {
  if (cell == "inf" || cell == "nan") return HUGE_VAL;
  if (cell == "-" || cell.empty()) return -HUGE_VAL;
  std::string s = cell;
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return std::stod(s);
}

TEST_F(RenderBrowser, ClickingASortHeaderOrdersTheRowsAndEachTableGetsAFilter) {
  const fs::path html = scratch() / "sortable.html";
  ASSERT_EQ(run_cli("render " + render_fixture_report().string() + " --out " + html.string()).exit_code, 0);
  // Column 5 of the worst-case table is max ULP; the page clicks its header when the URL says so.
  const std::vector<std::string> before = column_of(slurp(html), "worst-table", 5);
  ASSERT_GE(before.size(), 5u);
  const Outcome dom = chromium(html, "--dump-dom --virtual-time-budget=2000", "#click=worst-table-th-5");
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(console_lines(dom.err), "");
  const std::vector<std::string> after = column_of(dom.out, "worst-table", 5);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 1; i < after.size(); ++i) EXPECT_GE(numeric(after[i - 1]), numeric(after[i])) << i << ": " << after[i - 1] << " < " << after[i];
  EXPECT_NE(after, before) << "the static order already was the sorted one: pick another column for this test";
  std::vector<std::string> sorted = before;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> resorted = after;
  std::sort(resorted.begin(), resorted.end());
  EXPECT_EQ(resorted, sorted);  // the same rows, reordered
  EXPECT_EQ(count_of(dom.out, "class=\"filter\""), count_of(slurp(html), "sortable\""));  // one filter box per sortable table
}

TEST_F(RenderBrowser, TheChecksCatchABlankPageWithAScriptError) {
  const fs::path html = scratch() / "blank.html", png = scratch() / "blank.png";
  std::ofstream(html) << "<!DOCTYPE html><html><body><script>no_such_function_42();</script></body></html>\n";
  const Outcome shot = chromium(html, "--screenshot=" + png.string() + " --window-size=1280,2400");
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  EXPECT_NE(console_lines(shot.err).find("no_such_function_42"), std::string::npos) << shot.err;
  const Outcome check = shell("/usr/bin/python3 " + kPngCheck + " " + png.string() + " 1280 2400");
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
}

}  // namespace
