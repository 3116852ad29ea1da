// Bad input from files and options (issue 16): one clear line and exit 2, nothing half-written,
// nothing left behind, no crash on hostile reports or shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/layernorm_case.hpp"
#include "properties/cli_harness.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "io/output_files.hpp"
#include "report/schema_check.hpp"

namespace {

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expect_one_line_exit_two(const std::string& args, const std::string& why) {
  const Outcome o = run_cli(args);
  EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out << o.err;
  EXPECT_EQ(lines(o.err), 1) << args << ": " << o.err;
  EXPECT_NE(o.err.find(why), std::string::npos) << args << ": " << o.err;
  EXPECT_EQ(o.err.find("[json.exception"), std::string::npos) << args << ": " << o.err;
}

/// A small real report (grouped norms only, f32) to edit.
const fs::path& small_report() {
  static const fs::path p = [] {
    const fs::path r = scratch() / "hardening_small.json";
    EXPECT_EQ(run_cli("run --suite quick --dtypes f32 --ops layernorm_forward --cases 1 --out " + r.string()).exit_code, 0);
    return r;
  }();
  return p;
}

fs::path edited(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(slurp(small_report()));
  edit(j);
  const fs::path p = scratch() / name;
  std::ofstream(p) << j.dump();
  return p;
}

TEST(Hardening, DeeplyNestedJsonIsRefusedByEveryCommandThatReadsReports) {
  const fs::path deep = scratch() / "deep.json";
  std::ofstream(deep) << std::string(200000, '[') << std::string(200000, ']');
  const std::string d = deep.string(), ok = small_report().string();
  for (const std::string& args : {"replay --report " + d + " --record 0", "merge " + d + " --out " + (scratch() / "m.json").string(),
                                  "diff " + d + " " + ok, "diff " + ok + " " + d, "render " + d})
    expect_one_line_exit_two(args, "deeper than");
  // a string holding brackets is not nesting
  EXPECT_EQ(normcheck::json_nesting_depth(R"({"a": "[[[[[[[[", "b": [1, {"c": "]]]"}]})"), 3u);
  EXPECT_EQ(normcheck::json_nesting_depth(R"(["\"[[[[["])"), 1u);
}

TEST(Hardening, MalformedReportFieldsNameTheFileInOneLine) {
  const fs::path type = edited("hardening_type.json", [](nlohmann::json& j) { j["records"][0]["op"] = 5; });
  expect_one_line_exit_two("replay --report " + type.string() + " --record 0",
                           "'" + type.string() + "' is malformed at /records/0/op: must be a string; is an integer (5)");
  const fs::path metric = edited("hardening_metric.json", [](nlohmann::json& j) { j["records"][0]["max_ulp"] = "5"; });
  expect_one_line_exit_two("diff " + small_report().string() + " " + metric.string(),
                           "'" + metric.string() + "' is malformed at /records/0/max_ulp: must be one of \"inf\", \"nan\"; is \"5\"");
  // A field deep in a section, through each command that reads reports.
  const fs::path deep = edited("hardening_deep.json", [](nlohmann::json& j) { j["records"][0]["worst_case"]["element"]["row"] = "x"; });
  for (const std::string& args : {"render " + deep.string(), "diff " + small_report().string() + " " + deep.string(),
                                  "merge " + deep.string() + " --out " + (scratch() / "deep_merged.json").string(),
                                  "replay --report " + deep.string() + " --record 0"})
    expect_one_line_exit_two(args, "is malformed at /records/0/worst_case/element/row: must be an integer; is a string (\"x\")");
  const fs::path overflow = scratch() / "hardening_overflow.json";
  std::ofstream(overflow) << R"({"tool": "normcheck", "x": 1e999})";
  expect_one_line_exit_two("render " + overflow.string(), "'" + overflow.string() + "' is malformed: number overflow");
  // control characters from a file never reach the terminal raw
  EXPECT_EQ(normcheck::printable("a\nb\x1b[31mc"), "a\\nb\\x1b[31mc");
  const std::string header = R"({"evil\nname\u001b[2J": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}})";
  std::string file(8, '\0');
  for (int b = 0; b < 8; ++b) file[static_cast<size_t>(b)] = static_cast<char>((header.size() >> (8 * b)) & 0xff);
  const fs::path st = scratch() / "hardening_evil.safetensors";
  std::ofstream(st, std::ios::binary) << file << header << 'x';
  expect_one_line_exit_two("contract --assume-chain --in " + st.string() + " --out " + (scratch() / "evil_out.safetensors").string(), "evil\\nname\\x1b[2J");
}

// A float where a case's shape needs an integer (found by fuzz_report_json: rows = 1.97778e+48
// reached nlohmann's cast to int64_t, undefined behaviour) is refused with an error naming the field,
// and so is an integer beyond int64_t. This test runs under ASan + UBSan in scripts/sanitize.sh.
TEST(Hardening, ACaseShapeThatIsNotA64BitIntegerIsRefused) {
  const nlohmann::json good = {{"dtype", "f32"}, {"rows", 1}, {"n", 1}, {"eps", "0x1p-20"}, {"x", {"0x1p+0"}}, {"gamma", {"0x1p+0"}},
                               {"beta", {"0x0p+0"}}};
  EXPECT_EQ(normcheck::case_from_json(good).rows, 1);
  for (const nlohmann::json& bad : {nlohmann::json(1.97778e48), nlohmann::json(2.5), nlohmann::json(18446744073709551615ULL), nlohmann::json("1")}) {
    nlohmann::json j = good;
    j["rows"] = bad;
    try {
      (void)normcheck::case_from_json(j);
      ADD_FAILURE() << "accepted rows = " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'rows' must be an integer"), std::string::npos) << e.what();
    }
  }
}

// Issue 48 (low): the schema check's "integer" test converted 1.98e48 to int64 (undefined behaviour,
// UBSan in scripts/sanitize.sh); a whole float beyond int64 is not an integer of a report, one inside is.
TEST(Hardening, TheSchemaCheckNeverConvertsAFloatBeyondInt64) {
  const nlohmann::json schema = {{"type", "integer"}};
  for (const double bad : {1.98e48, -1.98e48, 0x1p63, 2.5})
    EXPECT_TRUE(normcheck::first_schema_violation(nlohmann::json(bad), schema).has_value()) << bad;
  for (const double good : {3.0, -0x1p63, 0x1p62})
    EXPECT_FALSE(normcheck::first_schema_violation(nlohmann::json(good), schema).has_value()) << good;
  const fs::path huge = edited("hardening_huge_row.json", [](nlohmann::json& j) { j["records"][0]["worst_case"]["element"]["row"] = 1.98e48; });
  expect_one_line_exit_two("render " + huge.string(), "is malformed at /records/0/worst_case/element/row: must be an integer");
}

TEST(Hardening, ShapesBeyondTheElementCapAreRefusedBeforeAnyAllocation) {
  expect_one_line_exit_two("run --rows 1048576 --n 1048576", "exceeds 16777216 elements per case");
  expect_one_line_exit_two("bounds --n 1048576 --rows 4096", "exceeds 16777216 elements per case");
  expect_one_line_exit_two("run --max-elements 100000000", "--max-elements must be in [1, 16777216]");
  expect_one_line_exit_two("search --rows 4611686018427387904 --n 4", "rows*n <= 65536");
  EXPECT_FALSE(normcheck::case_elements(int64_t{1} << 62, 4));  // no signed overflow
  EXPECT_FALSE(normcheck::case_elements(0, 4));
  EXPECT_EQ(normcheck::case_elements(4096, 4096), int64_t{1} << 24);
  // an edited report claiming rows = 2^62 with empty inputs is an invalid case, not an allocation
  normcheck::LayerNormCase c;
  c.rows = int64_t{1} << 62;
  c.n = 4;
  c.eps = 1e-5;
  c.gamma = c.beta = {1, 1, 1, 1};
  ASSERT_TRUE(normcheck::validate_case(c, false).has_value());
  EXPECT_NE(normcheck::validate_case(c, false)->find("exceeds"), std::string::npos);
}

TEST(Hardening, AnUnwritableOutputIsFoundBeforeTheWorkAndNothingIsLeftBehind) {
  const fs::path file = scratch() / "hardening_a_file";
  std::ofstream(file) << "x";
  const Outcome run = run_cli("run --suite quick --out " + (file / "r.json").string());
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("cannot write"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "") << "the suite must not have run";
  expect_one_line_exit_two("norm-budget --out " + (file / "b.json").string(), "cannot write");
  // contract: the input is never the output, and weights are written only with their certificate
  const fs::path block = scratch() / "hardening_block.safetensors", out = scratch() / "hardening_contracted.safetensors";
  ASSERT_EQ(run_cli("example-block --out " + block.string()).exit_code, 0);
  const std::string before = slurp(block);
  expect_one_line_exit_two("contract --assume-chain --in " + block.string() + " --out " + block.string(), "is the input block");
  EXPECT_EQ(slurp(block), before);
  expect_one_line_exit_two("contract --assume-chain --in " + block.string() + " --out " + out.string() + " --certificate " + (file / "c.json").string(),
                           "cannot write");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

TEST(Hardening, OutputFilesCommitAllOrNothing) {
  const fs::path a = scratch() / "hardening_all_a.txt", bad = scratch() / "no_such_folder" / "b.txt";
  fs::remove(a);
  {
    normcheck::OutputFiles files;
    files.add(a.string(), "first");
    EXPECT_THROW(files.add(bad.string(), "second"), std::runtime_error);
  }  // destroyed without commit: the first temporary goes too
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(a.string() + ".tmp"));
  normcheck::write_file_atomically(a.string(), "whole");
  EXPECT_EQ(slurp(a), "whole");
  EXPECT_FALSE(fs::exists(a.string() + ".tmp"));
}

}  // namespace

// Issue 48 (low): `search --out` with a malformed corpus file is refused before the search runs
// (it used to search for minutes, then fail writing), and the file is left as it was.
TEST(Hardening, SearchRefusesAMalformedCorpusBeforeSearching) {
  const fs::path corpus = scratch() / "malformed_corpus.txt";
  std::ofstream(corpus) << "garbage line\n";
  const Outcome o = run_cli("search --ops layernorm_forward --dtypes f32 --restarts 50 --out " + corpus.string());
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_EQ(lines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find(corpus.string() + ":1: token 'garbage' is not key=value"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("evals"), std::string::npos) << "the search ran: " << o.out;
  EXPECT_EQ(slurp(corpus), "garbage line\n");
}

// Issue 48 (low): a seed in a report that is not a decimal integer is named in one line (std::stoull
// printed a bare "stoull", or read "12x" as 12).
TEST(Hardening, ASeedThatIsNotADecimalIntegerIsNamed) {
  for (const char* seed : {"x12", "12x", "-1", "18446744073709551616", ""}) {
    const fs::path p = edited("hardening_seed.json", [&](nlohmann::json& j) {
      for (auto& r : j["records"])
        if (r.contains("worst_case") && r["worst_case"].is_object()) r["worst_case"]["case_seed"] = seed;
    });
    expect_one_line_exit_two("replay --report " + p.string() + " --record 0", "'case_seed' must be a decimal integer from 0 to 2^64 - 1");
  }
}
