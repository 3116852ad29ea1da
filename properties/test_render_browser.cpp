// normcheck render in a real browser: headless Chromium loads the HTML report (with a --diff
// against a planted regression), takes a 1280x2400 screenshot that must not be blank, logs no
// console or script errors, and its DOM holds the SVG charts. Skipped only without chromium
// (scripts/setup.sh installs it).
#include <gtest/gtest.h>

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
Outcome chromium(const fs::path& html, const std::string& args) {
  const fs::path home = scratch() / "chromium_home";
  fs::create_directories(home);
  return shell("env HOME=" + home.string() + " timeout 60 " + kChromium +
               " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run"
               " --user-data-dir=" + (home / "profile").string() + " --enable-logging=stderr --v=0 " + args +
               " file://" + html.string());
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
