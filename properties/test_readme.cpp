// The README's commands that name a script work as printed (issue 15): each runs through bash from a
// folder laid out like the source folder (build/ is this build, scripts/ the source's), with the
// README's own prerequisites (the run that writes the report a table script reads) run first.
// bash scripts/run.sh and scripts/test.sh are what CI runs; scripts/nightly is run by
// test_nightly on a quick suite (the nightly suite takes minutes).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <vector>

#include "properties/cli_harness.hpp"

namespace {

/// The README's indented command lines, without trailing "# comment"s.
std::vector<std::string> readme_commands() {
  std::ifstream f(std::string(NORMCHECK_SOURCE_DIR) + "/README.md");
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("    ", 0) != 0) continue;
    line = line.substr(4);
    if (const size_t hash = line.find("  #"); hash != std::string::npos) line = line.substr(0, hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    const std::string program = line.substr(0, line.find(' '));
    if (program == "./build/normcheck" || (program.rfind("scripts/", 0) == 0 && program.back() != '/')) out.push_back(line);
  }
  return out;
}

bool names_script(const std::string& c) {
  return c.find("scripts/") != std::string::npos && c.find("scripts/nightly") == std::string::npos;
}

}  // namespace

TEST(Readme, EveryCommandThatNamesAScriptWorksAsPrinted) {
  const fs::path root = scratch() / "readme";
  fs::remove_all(root);
  fs::create_directories(root / "reports");
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  fs::create_symlink(fs::path(NORMCHECK_SOURCE_DIR) / "scripts", root / "scripts");
  const std::vector<std::string> all = readme_commands();
  std::vector<std::string> selected;
  for (const std::string& c : all)
    if (names_script(c)) selected.push_back(c);
  ASSERT_GE(selected.size(), 5u);  // the table scripts, exec, two serve examples
  const std::regex out_re("--out (reports/[a-z_.]+)");
  std::vector<std::string> commands;
  for (const std::string& c : all) {  // README order; a run whose report a selected script reads goes first
    std::smatch m;
    bool prerequisite = false;
    if (std::regex_search(c, m, out_re))
      for (const std::string& s : selected) prerequisite = prerequisite || (names_script(s) && s.find(m[1].str()) != std::string::npos && s != c);
    if (prerequisite || names_script(c)) commands.push_back(c);
  }
  for (const std::string& c : commands) {
    const Outcome o = run_shell("cd " + root.string() + " && bash -c '" + std::regex_replace(c, std::regex("'"), "'\\''") + "'");
    EXPECT_EQ(o.exit_code, 0) << c << "\n" << o.out.substr(0, 2000) << o.err.substr(0, 2000);
    // report-only runs exit 0 even when every call fails: a missing Python module must not pass
    EXPECT_EQ(o.out.find("No module named"), std::string::npos) << c << "\n" << o.out.substr(0, 2000);
    EXPECT_EQ(o.out.find("nothing was verified"), std::string::npos) << c << "\n" << o.out.substr(0, 2000);
  }
}
