// The README's commands work as printed (issue 46): every one, in order, through bash from a folder
// laid out like the source folder (build/ is this build; scripts/, properties/ and the committed
// reports are the source's), with the exit status it documents and the output it shows. The
// commands of docs/status.md that name a script run too (issue 15), with their prerequisites (the
// run that writes the report a table script reads) first. bash scripts/run.sh and scripts/test.sh
// are what CI runs.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <vector>

#include "properties/cli_harness.hpp"

namespace {

/// One indented command line of a document: the command without its trailing "# comment", the
/// comment, and the lines of the ```text blocks that follow it (what it prints, in part).
struct DocCommand {
  std::string command, comment;
  std::vector<std::string> shown_output;
};

bool is_command(const std::string& line) {
  const std::string program = line.substr(0, line.find(' '));
  return program == "./build/normcheck" || (program.rfind("scripts/", 0) == 0 && program.back() != '/');
}

std::vector<DocCommand> doc_commands(const std::string& relative_path) {
  std::ifstream f(std::string(NORMCHECK_SOURCE_DIR) + "/" + relative_path);
  std::vector<DocCommand> out;
  bool in_text = false;
  for (std::string line; std::getline(f, line);) {
    if (line == "```text" || (in_text && line == "```")) {
      in_text = line != "```";
      continue;
    }
    if (in_text) {
      if (!out.empty() && !line.empty()) out.back().shown_output.push_back(line);
      continue;
    }
    if (line.rfind("    ", 0) != 0) continue;
    line = line.substr(4);
    DocCommand c;
    if (const size_t hash = line.find("  #"); hash != std::string::npos) {
      c.comment = line.substr(line.find_first_not_of(' ', hash + 3) == std::string::npos ? line.size() : line.find_first_not_of(' ', hash + 3));
      line = line.substr(0, hash);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!is_command(line)) continue;
    c.command = line;
    out.push_back(std::move(c));
  }
  return out;
}

bool names_script(const std::string& c) {
  return c.find("scripts/") != std::string::npos && c.find("scripts/nightly") == std::string::npos;
}

/// A folder laid out like the source folder after the README's two commands.
fs::path doc_root(const std::string& name) {
  const fs::path root = scratch() / name;
  fs::remove_all(root);
  fs::create_directories(root / "reports");
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  for (const char* linked : {"scripts", "properties", "include"}) fs::create_symlink(fs::path(NORMCHECK_SOURCE_DIR) / linked, root / linked);
  for (const char* linked : {"baseline", "schema"})
    fs::create_symlink(fs::path(NORMCHECK_SOURCE_DIR) / "reports" / linked, root / "reports" / linked);
  return root;
}

Outcome run_in(const fs::path& root, const std::string& c) {
  return run_shell("cd " + root.string() + " && bash -c '" + std::regex_replace(c, std::regex("'"), "'\\''") + "'");
}

/// The exit status a command's comment documents ("exits 1", "exit 1: ..."), else 0.
int expected_exit(const DocCommand& c) {
  return c.comment.find("exits 1") != std::string::npos || c.comment.rfind("exit 1", 0) == 0 ? 1 : 0;
}

/// What every run a document prints must not contain: report-only runs exit 0 even when every
/// call fails, so a missing Python module must not pass.
void expect_something_verified(const std::string& c, const Outcome& o) {
  EXPECT_EQ(o.out.find("No module named"), std::string::npos) << c << "\n" << o.out.substr(0, 2000);
  EXPECT_EQ(o.out.find("nothing was verified"), std::string::npos) << c << "\n" << o.out.substr(0, 2000);
}

}  // namespace

TEST(Readme, EveryCommandWorksAsPrinted) {
  const fs::path root = doc_root("readme");
  const std::vector<DocCommand> commands = doc_commands("README.md");
  ASSERT_GE(commands.size(), 8u);  // serve, plugin, a failing plugin and its replay, render, bounds, the nightly's
  int shown = 0;
  for (const DocCommand& c : commands) {
    const Outcome o = run_in(root, c.command);
    const int expected = expected_exit(c);
    EXPECT_EQ(o.exit_code, expected) << c.command << "\n" << o.out.substr(0, 3000) << o.err.substr(0, 2000);
    expect_something_verified(c.command, o);
    for (const std::string& line : c.shown_output) {  // each line it is shown to print, verbatim
      EXPECT_NE(o.out.find(line), std::string::npos) << c.command << "\nshown: " << line << "\nprinted:\n" << o.out.substr(0, 4000);
      ++shown;
    }
  }
  EXPECT_GE(shown, 4);  // the serve and plugin verdicts at least
}

TEST(Readme, EveryCommandOfTheStatusPageThatNamesAScriptWorksAsPrinted) {
  const fs::path root = doc_root("status_page");
  const std::vector<DocCommand> all = doc_commands("docs/status.md");
  std::vector<std::string> selected;
  for (const DocCommand& c : all)
    if (names_script(c.command)) selected.push_back(c.command);
  ASSERT_GE(selected.size(), 5u);  // the table scripts, exec, two serve examples
  const std::regex out_re("--out (reports/[a-z_.]+)");
  std::vector<std::string> commands;
  for (const DocCommand& d : all) {  // document order; a run whose report a selected script reads goes first
    const std::string& c = d.command;
    std::smatch m;
    bool prerequisite = false;
    if (std::regex_search(c, m, out_re))
      for (const std::string& s : selected) prerequisite = prerequisite || (s.find(m[1].str()) != std::string::npos && s != c);
    if (prerequisite || names_script(c)) commands.push_back(c);
  }
  for (const std::string& c : commands) {
    const Outcome o = run_in(root, c);
    EXPECT_EQ(o.exit_code, 0) << c << "\n" << o.out.substr(0, 2000) << o.err.substr(0, 2000);
    expect_something_verified(c, o);
  }
}

TEST(Readme, EveryCommandOfTheDocsWorksAsPrinted) {
  // The guides whose commands are short enough to run here, every one in order with its documented
  // exit status (docs/terminal.md, docs/qr-contraction.md and the status page have their own tests).
  for (const std::string doc : {"docs/invariance.md"}) {
    const fs::path root = doc_root("doc_" + fs::path(doc).stem().string());
    const std::vector<DocCommand> commands = doc_commands(doc);
    ASSERT_GE(commands.size(), 4u) << doc;
    for (const DocCommand& c : commands) {
      const Outcome o = run_in(root, c.command);
      EXPECT_EQ(o.exit_code, expected_exit(c)) << doc << ": " << c.command << "\n" << o.out.substr(0, 3000) << o.err.substr(0, 2000);
      expect_something_verified(c.command, o);
    }
  }
}
