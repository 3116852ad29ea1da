// Conventions a command-line user relies on (issue 19): list --json, --quiet/--verbose everywhere,
// one way of counting records and cases, diff that explains a new failure, max ULP over normal
// outputs, the install tree (binary, header, schema, docs, completion, man page, Python package),
// and no silent default output path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "cli_harness.hpp"
#include "kernels/registry.hpp"
#include "ops/op_kernels.hpp"
#include "sections/section.hpp"

namespace {

const std::string kExec = "/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/exec_example.py";

/// The last line of `text` that starts with `prefix`.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::string found;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    if (line.rfind(prefix, 0) == 0) found = line;
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return found;
}

TEST(Conventions, ListJsonNamesEveryRegisteredOpKernelAndSuite) {
  const Outcome o = run_cli("list --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  std::set<std::string> ops;
  for (const auto& op : j.at("ops")) ops.insert(op.get<std::string>());
  for (const normcheck::sections::Section* s : normcheck::sections::registry())
    for (std::string_view op : s->ops()) EXPECT_TRUE(ops.count(std::string(op))) << op;
  int64_t forward_kernels = 0;
  for (const normcheck::KernelEntry& k : normcheck::builtin_kernels()) forward_kernels += normcheck::is_backward(k.op) ? 0 : 1;
  EXPECT_EQ(static_cast<int64_t>(j.at("kernels").size()), forward_kernels);
  for (const char* key : {"dtypes", "generators", "block_kernels", "block_generators", "contraction_generators", "suites"})
    EXPECT_FALSE(j.at(key).empty()) << key;
  // The text listing shows the same names.
  const Outcome text = run_cli("list");
  for (const auto& op : j.at("ops")) EXPECT_NE(text.out.find(op.get<std::string>()), std::string::npos) << op;
}

/// Counts the lines of `text` that start with "progress: ".
int progress_lines(const std::string& text) {
  int n = 0;
  for (size_t at = text.find("progress: "); at != std::string::npos; at = text.find("progress: ", at + 1)) n += at == 0 || text[at - 1] == '\n';
  return n;
}

TEST(Conventions, ACiLogGetsAProgressLineEveryIntervalAndQuietOrZeroSilencesIt) {
  const std::string report = (scratch() / "progress.json").string();
  const std::string run = "run --ops layernorm_backward --dtypes f64 --generators normal,large_mean --threads 1 --out " + report;  // about 1.6 s
  const Outcome every = run_cli(run + " --progress-every 0.5");  // stderr is a file here, not a terminal
  ASSERT_EQ(every.exit_code, 0) << every.err;
  EXPECT_GE(progress_lines(every.err), 1) << every.err;
  for (const char* word : {" cases, ", " failing a must-pass kernel, ", " s elapsed, ~", " s left\n"})
    EXPECT_NE(every.err.find(word), std::string::npos) << word << " in: " << every.err;
  EXPECT_EQ(every.err.find('\r'), std::string::npos);  // whole lines, not a terminal's rewritten one
  EXPECT_EQ(progress_lines(every.out), 0);               // stdout keeps its tables
  for (const char* silent : {" --progress-every 0.5 --quiet", " --progress-every 0"}) {
    const Outcome o = run_cli(run + silent);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_EQ(progress_lines(o.err), 0) << silent << ": " << o.err;
  }
  EXPECT_EQ(run_cli(run + " --progress-every -1").exit_code, 2);
}

TEST(Conventions, QuietAndVerboseAreAcceptedByEveryCommand) {
  normcheck::cli::CommandLine cl;
  normcheck::cli::declare_command_line(cl, {});
  for (const CLI::App* sub : cl.app.get_subcommands({})) {
    std::set<std::string> names;
    for (const CLI::Option* opt : sub->get_options())
      for (const std::string& l : opt->get_lnames()) names.insert(l);
    EXPECT_TRUE(names.count("quiet") && names.count("verbose")) << sub->get_name();
  }
  const Outcome both = run_cli("suites --quiet --verbose");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(std::count(both.err.begin(), both.err.end(), '\n'), 1) << both.err;
  // --quiet: a command whose product is a file prints nothing on stdout; the file is written.
  const fs::path report = scratch() / "quiet.json", html = scratch() / "quiet.html";
  ASSERT_EQ(run_cli("run --suite quick --ops layernorm_forward --dtypes f32 --generators normal --kernels two_pass -q --out " +
                    report.string()).exit_code, 0);
  const Outcome rendered = run_cli("render " + report.string() + " --out " + html.string() + " --quiet");
  EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
  EXPECT_TRUE(rendered.out.empty()) << rendered.out;
  EXPECT_TRUE(fs::exists(html));
  // --verbose: diff lists the unchanged records too; without it, only changes (none here).
  const Outcome quiet_diff = run_cli("diff " + report.string() + " " + report.string());
  const Outcome verbose_diff = run_cli("diff -v " + report.string() + " " + report.string());
  EXPECT_EQ(quiet_diff.out.find("unchanged "), std::string::npos) << quiet_diff.out;
  EXPECT_NE(verbose_diff.out.find("unchanged "), std::string::npos) << verbose_diff.out;
}

TEST(Conventions, RunMergeAndTheSummaryLineCountRecordsAndCasesTheSameWay) {
  const std::string opts = "run --suite quick --ops layernorm_forward,grouped_norm --dtypes f32,bf16 --kernels two_pass,one_pass -q ";
  const fs::path whole = scratch() / "counts_whole.json", s0 = scratch() / "counts_s0.json", s1 = scratch() / "counts_s1.json",
                 merged = scratch() / "counts_merged.json";
  const Outcome run = run_cli(opts + "--summary-json --out " + whole.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_EQ(run_cli(opts + "--shard 0/2 --out " + s0.string()).exit_code, 0);
  ASSERT_EQ(run_cli(opts + "--shard 1/2 --out " + s1.string()).exit_code, 0);
  const Outcome merge = run_cli("merge " + s0.string() + " " + s1.string() + " --out " + merged.string());
  ASSERT_EQ(merge.exit_code, 0) << merge.out << merge.err;
  // "N records: J judged, ..." and "(PASSED, d/p cases)" read the same in both.
  const std::string counts = line_starting(run.out, "  "), merged_counts = line_starting(merge.out, "  ");
  EXPECT_NE(counts.find(" records: "), std::string::npos) << run.out;
  EXPECT_EQ(counts, merged_counts);
  const std::string cases = run.out.substr(run.out.find("(PASSED, ")), merged_cases = merge.out.substr(merge.out.find("(PASSED, "));
  EXPECT_EQ(cases.substr(0, cases.find(')')), merged_cases.substr(0, merged_cases.find(')')));
  const auto summary = nlohmann::json::parse(line_starting(run.out, "{"));
  EXPECT_EQ(summary.at("judged").get<int64_t>() + summary.at("not_run").get<int64_t>(), summary.at("records").get<int64_t>());
  EXPECT_GT(summary.at("flagged").get<int64_t>(), 0);  // one_pass is known weak
  EXPECT_EQ(summary.at("failing").get<int64_t>(), 0);  // ... and does not count as failing
  // Cases over every section: the per-op cases (run) plus the grouped section's.
  const auto report = nlohmann::json::parse(slurp(whole));
  EXPECT_EQ(summary.at("cases_done").get<int64_t>(),
            report.at("run").at("cases_done").get<int64_t>() + report.at("grouped_norm").at("cases_done").get<int64_t>());
  EXPECT_NE(cases.find(std::to_string(summary.at("cases_done").get<int64_t>()) + "/"), std::string::npos) << cases;
}

TEST(Conventions, DiffExplainsANewFailureWithNumbersWorstElementAndReplay) {
  const fs::path base = scratch() / "diff_base.json", now = scratch() / "diff_now.json";
  const std::string opts = " --exec-name k --ops layernorm_forward --dtypes f32 --generators large_mean --cases 2 -q --out ";
  ASSERT_EQ(run_cli("run --exec '" + kExec + " {dir}'" + opts + base.string()).exit_code, 0);
  ASSERT_EQ(run_cli("run --exec '" + kExec + " --one-pass {dir}'" + opts + now.string()).exit_code, 1);
  const Outcome d = run_cli("diff " + base.string() + " " + now.string());
  EXPECT_EQ(d.exit_code, 1) << d.out << d.err;
  for (const char* fact : {"new_failure", "max err/bound ", "max ULP (normal outputs) ", "worst element: case ", "kernel ",
                           "exact ", "replay: normcheck replay --report ", "records compared: ", "REGRESSED"})
    EXPECT_NE(d.out.find(fact), std::string::npos) << fact << "\n" << d.out;
  EXPECT_EQ(d.out.find('{'), std::string::npos) << "no raw JSON in the text output:\n" << d.out;
  // The printed replay command works as printed.
  const std::string replay = line_starting(d.out, "    replay: ").substr(std::string("    replay: ").size());
  const Outcome r = run_shell(std::string(NORMCHECK_BINARY) + replay.substr(std::string("normcheck").size()));
  EXPECT_EQ(r.exit_code, 0) << replay << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find("replay reproduces the recorded worst element"), std::string::npos) << r.out;
}

TEST(Conventions, MaxUlpOverNormalOutputsStaysFiniteWhereExactZerosMakeMaxUlpInfinite) {
  // Constant rows: y = beta exactly, zeros among them; a kernel's tiny residue (within the bound) is
  // infinitely many ULPs of an exact zero in max_ulp, not in max_ulp_normal nor in the terminal table.
  const fs::path out = scratch() / "constant.json";
  const Outcome o = run_cli("run --ops layernorm_forward --dtypes f64 --generators constant --kernels two_pass,one_pass --cases 4 --out " +
                            out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto report = nlohmann::json::parse(slurp(out));
  bool some_infinite = false;
  for (const auto& r : report.at("records")) {
    ASSERT_TRUE(r.contains("max_ulp_normal"));
    const auto& all = r.at("max_ulp");
    const double normal = r.at("max_ulp_normal").get<double>();
    some_infinite = some_infinite || all == "inf";
    if (all.is_number()) {
      EXPECT_LE(normal, all.get<double>());
    }
    EXPECT_TRUE(std::isfinite(normal));  // within the bound, so finitely many ULPs of a normal output
  }
  EXPECT_TRUE(some_infinite) << "the generator no longer produces exact zeros: pick another for this test";
  EXPECT_EQ(o.out.find(" inf "), std::string::npos) << o.out;
}

TEST(Conventions, TheInstallTreeHoldsEverythingAndItsPiecesWork) {
  const fs::path build = fs::path(NORMCHECK_BINARY).parent_path(), prefix = scratch() / "install";
  const Outcome install = run_shell("cmake --install " + build.string() + " --prefix " + prefix.string());
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  for (const char* file : {"bin/normcheck", "include/normcheck/plugin.h", "share/normcheck/schema/report.v1.schema.json",
                           "share/doc/normcheck/README.md", "share/doc/normcheck/docs/bounds.md",
                           "share/doc/normcheck/docs/terminal.md", "share/bash-completion/completions/normcheck",
                           "share/man/man1/normcheck.1"})
    EXPECT_TRUE(fs::exists(prefix / file)) << file;
  const Outcome version = run_shell((prefix / "bin/normcheck").string() + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("normcheck ", 0), 0u) << version.out;
  // The completion script loads in bash and completes commands, options and comma-list values.
  const std::string complete = "bash -c 'source " + (prefix / "share/bash-completion/completions/normcheck").string() +
                               "; complete -p normcheck >/dev/null || exit 3; "
                               "COMP_WORDS=(normcheck ren); COMP_CWORD=1; _normcheck; echo \"${COMPREPLY[*]}\"; "
                               "COMP_WORDS=(normcheck run --junit); COMP_CWORD=2; _normcheck; echo \"${COMPREPLY[*]}\"; "
                               "COMP_WORDS=(normcheck run --dtypes f16,b); COMP_CWORD=3; _normcheck; echo \"${COMPREPLY[*]}\"'";
  const Outcome c = run_shell(complete);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "render\n--junit\nf16,bf16\n");
  // The man page formats without a groff warning and documents every subcommand.
  const Outcome man = run_shell("groff -man -Tascii -P-cbou -ww " + (prefix / "share/man/man1/normcheck.1").string());
  EXPECT_EQ(man.exit_code, 0);
  EXPECT_TRUE(man.err.empty()) << man.err;
  for (const char* cmd : {"run", "replay", "diff", "merge", "render", "bounds", "completion", "manpage"})
    EXPECT_NE(man.out.find("\n   " + std::string(cmd) + "\n"), std::string::npos) << cmd;
  // The Python package, where the module was built.
  if (fs::exists(build / "python/normcheck")) {
    const fs::path site = prefix / "lib/python3/dist-packages";
    const Outcome py = run_shell("cd / && PYTHONPATH=" + site.string() +
                                 " /usr/bin/python3 -c 'import normcheck, os; print(os.path.dirname(normcheck.__file__))'");
    EXPECT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(py.out, (site / "normcheck").string() + "\n");
    // With the distribution metadata whose pytest11 entry point loads the fixture and marker.
    std::string entry_points;
    for (const auto& e : fs::directory_iterator(site))
      if (e.path().filename().string().rfind("normcheck-", 0) == 0) entry_points = slurp(e.path() / "entry_points.txt");
    EXPECT_NE(entry_points.find("normcheck = normcheck.pytest_plugin"), std::string::npos);
  }
}

TEST(Conventions, WithoutOutTheReportPathIsAnnouncedOnStderr) {
  const fs::path dir = scratch() / "no_out";
  fs::create_directories(dir);
  const Outcome o = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY +
                              " run --suite quick --ops layernorm_forward --dtypes f32 --generators normal --kernels two_pass -q");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("no --out given: writing " + (dir / "reports/latest.json").string()), std::string::npos) << o.err;
  EXPECT_TRUE(fs::exists(dir / "reports/latest.json"));
  // With --out, nothing is announced.
  const Outcome named = run_cli("run --suite quick --ops layernorm_forward --dtypes f32 --generators normal --kernels two_pass -q --out " +
                                (dir / "named.json").string());
  EXPECT_EQ(named.err.find("no --out"), std::string::npos) << named.err;
}

}  // namespace

namespace {

TEST(Conventions, TheTerminalTranscriptInTheDocsIsWhatARunPrints) {
  const fs::path dir = scratch() / "transcript";
  fs::create_directories(dir / "build");
  fs::copy_file(fs::path(NORMCHECK_BINARY).parent_path() / "libnc_plugin_one_pass.so", dir / "build/libnc_plugin_one_pass.so",
                fs::copy_options::overwrite_existing);
  const Outcome o = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY +
                              " run --kernel build/libnc_plugin_one_pass.so --ops layernorm_forward --dtypes f32 "
                              "--generators large_mean --cases 2 --out fail.json");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  const std::string expected = doc_block_after("docs/terminal.md", "prints (exit status 1");
  ASSERT_GT(expected.size(), 500u);
  EXPECT_TRUE(o.out == expected) << "docs/terminal.md's transcript differs from a fresh run; the run printed:\n" << o.out;
}

}  // namespace

#include "report/schema_check.hpp"

namespace {

TEST(Conventions, EveryReportTheRunWritesFollowsTheSchemaStrictly) {
  // Built-in kernels in every section, an ABI v2 plugin in every section it serves, a crashing plugin
  // (kernel failures), an exec kernel (declined f16/bf16 calls): each report strictly conforms (the
  // check that found the block records' kernel fields and the kernel_failure verdict missing from it).
  const std::string build = fs::path(NORMCHECK_BINARY).parent_path().string();
  const std::vector<std::string> runs = {
      "run --suite quick --dtypes f32,bf16",
      "run --suite quick --dtypes f32,bf16 --shard 1/3",  // a shard report: shard_items, acc_bytes, shard_cases
      "run --suite quick --dtypes f32 --kernel " + build + "/libnc_plugin_v2_good.so",
      "run --suite quick --ops layernorm_forward --dtypes f32 --generators normal --kernel " + build + "/libnc_plugin_crash.so",
      "run --suite quick --ops layernorm_forward --dtypes f16,f32 --generators normal --exec '" + kExec + " {dir}'"};
  for (size_t i = 0; i < runs.size(); ++i) {
    const fs::path out = scratch() / ("strict_" + std::to_string(i) + ".json");
    const Outcome o = run_cli(runs[i] + " -q --out " + out.string());
    ASSERT_LE(o.exit_code, 1) << runs[i] << o.err;
    const auto report = nlohmann::json::parse(slurp(out));
    const auto violation = normcheck::first_schema_violation(report, normcheck::report_schema(), normcheck::SchemaMode::strict);
    EXPECT_FALSE(violation) << runs[i] << ": at " << violation->pointer << ": " << violation->what;
  }
  // The committed baselines too.
  for (const char* name : {"quick.json", "nightly.json"}) {
    const auto committed = nlohmann::json::parse(slurp(fs::path(NORMCHECK_SOURCE_DIR) / "reports/baseline" / name));
    const auto violation = normcheck::first_schema_violation(committed, normcheck::report_schema(), normcheck::SchemaMode::strict);
    EXPECT_FALSE(violation) << name << ": at " << violation->pointer << ": " << violation->what;
  }
  const auto baseline = nlohmann::json::parse(slurp(fs::path(NORMCHECK_SOURCE_DIR) / "reports/baseline/nightly.json"));
  // And the checker does catch: a required field removed, an unknown one added, a type changed.
  nlohmann::json tampered = baseline;
  tampered["records"][0].erase("verdict");
  EXPECT_EQ(normcheck::first_schema_violation(tampered, normcheck::report_schema())->what, "misses the required field \"verdict\"");
  tampered = baseline;
  tampered["records"][0]["surprise"] = 1;
  EXPECT_NE(normcheck::first_schema_violation(tampered, normcheck::report_schema())->what.find("\"surprise\""), std::string::npos);
  EXPECT_FALSE(normcheck::first_schema_violation(tampered, normcheck::report_schema(), normcheck::SchemaMode::present_fields));
  tampered["records"][0]["cases"] = -1;
  EXPECT_EQ(normcheck::first_schema_violation(tampered, normcheck::report_schema(), normcheck::SchemaMode::present_fields)->pointer,
            "/records/0/cases");
}

}  // namespace

namespace {

TEST(Conventions, EveryNormcheckCommandInDocsTerminalWorksAsPrinted) {
  // From a scratch folder holding a build/ link (as after the README's build), not the source tree.
  const fs::path root = scratch() / "terminal_doc";
  fs::create_directories(root);
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  std::ifstream doc(fs::path(NORMCHECK_SOURCE_DIR) / "docs/terminal.md");
  int ran = 0;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("    ./build/normcheck ", 0) != 0) continue;
    const std::string command = line.substr(4, line.find("  #") == std::string::npos ? std::string::npos : line.find("  #") - 4);
    const Outcome o = run_shell("cd " + root.string() + " && " + command);
    const int expected = command.find("one_pass") != std::string::npos ? 1 : 0;  // the planted kernel's run fails, as documented
    EXPECT_EQ(o.exit_code, expected) << command << "\n" << o.err;
    ++ran;
  }
  EXPECT_GE(ran, 2);
  const Outcome man = run_shell("cd " + root.string() + " && man -l build/share/man/man1/normcheck.1 | head -3");
  EXPECT_NE(man.out.find("NORMCHECK"), std::string::npos) << man.err;
}

}  // namespace
