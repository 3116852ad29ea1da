// The normcheck command as a user meets it: bad input, reports, schema, replay, determinism.
#include <gtest/gtest.h>

#include <regex>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "properties/cli_harness.hpp"
#include "generators/generators.hpp"
#include "io/case_json.hpp"

namespace {

nlohmann::json load(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

/// Every record of the run (per-op records and block records), without the path-dependent replay line.
nlohmann::json comparable_records(const nlohmann::json& report) {
  nlohmann::json r = report.at("records");
  if (!report.at("rms_block").is_null())
    for (const auto& rec : report.at("rms_block").at("records")) r.push_back(rec);
  for (auto& rec : r)
    if (!rec.at("worst_case").is_null()) rec["worst_case"].erase("replay");
  return r;
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

const std::string kQuick = "run --suite quick --quiet ";

}  // namespace

TEST(Cli, BadInputGetsOneLineAndExitTwo) {
  for (const char* args : {"run --eps 0", "run --eps -1e-5", "run --eps nan", "run --n 0", "run --rows 0",
                           "run --dtypes f8", "run --ops softmax", "run --kernels fastest", "run --generators nope",
                           "run --suite nightly_of_doom", "run --bogus", "run --threads 0", "frobnicate", "",
                           "replay --report /nonexistent.json --record 0",
                           // seeds: CLI11 saturated these to 2^64 - 1 (issue 16)
                           "run --seed -1", "run --seed 99999999999999999999999", "bias --seed 1x", "norm-budget --seed -3",
                           "search --seed 0x10", "bounds --seed ''"}) {
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_EQ(lines(o.err), 1) << args << ": " << o.err;
    EXPECT_NE(o.err.find("error"), std::string::npos) << args;
  }
}

TEST(Cli, QuickSuitePassesWritesReportAndValidatesAgainstSchema) {
  const fs::path report = scratch() / "quick.json";
  const Outcome o = run_cli(kQuick + "--threads 2 --out " + report.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto j = load(report);
  EXPECT_TRUE(j.at("run").at("complete").get<bool>());
  EXPECT_TRUE(j.at("run").at("passed").get<bool>());
  for (const auto& f : j.at("flag_checks")) EXPECT_TRUE(f.at("caught").get<bool>()) << f.dump();
  for (const auto& r : j.at("records")) EXPECT_LE(r.at("oracle").at("certified_max_err_ulps").get<double>(), 1e-3);
  // Every element was judged (but for exact values beyond the dtype): no uncertified case or element in
  // any section; the corpus ran first.
  EXPECT_EQ(j.at("config").at("generators").at(0), "corpus");
  for (const char* section : {"records", "rms_block", "qr_contraction", "grouped_norm"}) {
    const auto& recs = std::string(section) == "records" ? j.at("records") : j.at(section).at("records");
    for (const auto& r : recs) {
      EXPECT_EQ(r.at("uncertified_elements").get<int64_t>(), 0) << section << " " << r.dump().substr(0, 300);
      // The only elements without a verdict are those whose exact value overflows the dtype.
      EXPECT_EQ(r.at("unjudged_elements"), r.at("exact_overflow_elements")) << section << " " << r.dump().substr(0, 300);
      if (r.contains("uncertified_cases")) {
        EXPECT_EQ(r.at("uncertified_cases").get<int64_t>(), 0) << section;
      }
    }
  }
  // The recorded worst element is the one with the record's largest err/bound.
  for (const auto& r : j.at("records")) {
    if (r.at("worst_case").is_null() || r.at("elements").get<int64_t>() == 0) continue;
    const auto ratio = normcheck::json_number_value(r.at("worst_case").at("element").at("bound_ratio"));
    ASSERT_TRUE(ratio.has_value());
    const auto record_ratio = normcheck::json_number_value(r.at("max_bound_ratio"));
    if (std::isinf(*ratio)) EXPECT_TRUE(std::isinf(*record_ratio));
    else EXPECT_DOUBLE_EQ(*ratio, *record_ratio) << r.at("variant") << " " << r.at("property") << " " << r.at("output");
  }
  const std::string schema = std::string(NORMCHECK_SOURCE_DIR) + "/reports/schema/report.v1.schema.json";
  const std::string py = "/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                         "json.load(open(sys.argv[2])))\" " + report.string() + " " + schema;
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0) GTEST_SKIP() << "python3-jsonschema absent";
  EXPECT_EQ(std::system(py.c_str()), 0);
}

TEST(Cli, SameSeedSameRecordsForOneAndTwoThreads) {
  const fs::path a = scratch() / "t1.json", b = scratch() / "t2.json";
  ASSERT_EQ(run_cli(kQuick + "--threads 1 --out " + a.string()).exit_code, 0);
  ASSERT_EQ(run_cli(kQuick + "--threads 2 --out " + b.string()).exit_code, 0);
  EXPECT_EQ(comparable_records(load(a)), comparable_records(load(b)));
  const fs::path c = scratch() / "seed2.json";
  ASSERT_EQ(run_cli(kQuick + "--seed 2 --out " + c.string()).exit_code, 0);
  EXPECT_NE(comparable_records(load(a)), comparable_records(load(c)));
}

TEST(Cli, ReplayReproducesRecordedWorstElements) {
  const fs::path report = scratch() / "replay.json";
  ASSERT_EQ(run_cli(kQuick + "--out " + report.string()).exit_code, 0);
  const auto j = load(report);
  int replayed = 0;
  for (size_t i = 0; i < j.at("records").size() && replayed < 6; i += 37) {
    if (j["records"][i]["worst_case"].is_null()) continue;
    const Outcome o = run_cli("replay --report " + report.string() + " --record " + std::to_string(i));
    EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find(j["records"][i]["worst_case"]["element"]["kernel"].get<std::string>()), std::string::npos);
    EXPECT_NE(o.out.find("reproduces"), std::string::npos);
    ++replayed;
  }
  EXPECT_GE(replayed, 3);
}

TEST(Cli, ReplayRejectsTamperedMalformedAndOutOfRangeReports) {
  const fs::path report = scratch() / "tamper.json";
  ASSERT_EQ(run_cli(kQuick + "--dtypes f32 --out " + report.string()).exit_code, 0);
  auto j = load(report);
  // Passing and flagged records carry generator, seed and digest only (the inputs are regenerated):
  // a tampered seed regenerates other inputs, which the digest refuses; inline inputs likewise.
  size_t idx = 0;
  while (j["records"][idx]["worst_case"].is_null()) ++idx;
  ASSERT_FALSE(j["records"][idx]["worst_case"].at("inputs_inline").get<bool>());
  EXPECT_FALSE(j["records"][idx]["worst_case"].contains("x"));
  auto seed_tampered = j;
  seed_tampered["records"][idx]["worst_case"]["case_seed"] = "12345";
  const fs::path tampered = scratch() / "tampered.json";
  std::ofstream(tampered) << seed_tampered.dump();
  Outcome o = run_cli("replay --report " + tampered.string() + " --record " + std::to_string(idx));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("digest"), std::string::npos) << o.err;
  auto inputs_tampered = j;
  auto& wc = inputs_tampered["records"][idx]["worst_case"];
  std::vector<std::string> x(static_cast<size_t>(wc.at("rows").get<int64_t>() * wc.at("n").get<int64_t>()), "0x1p+0");
  wc["x"] = x;
  for (const char* key : {"gamma", "beta"}) wc[key] = std::vector<std::string>(static_cast<size_t>(wc.at("n").get<int64_t>()), "0x1p+0");
  wc["dy"] = x;
  std::ofstream(tampered) << inputs_tampered.dump();
  o = run_cli("replay --report " + tampered.string() + " --record " + std::to_string(idx));
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("digest"), std::string::npos) << o.err;
  const fs::path garbage = scratch() / "garbage.json";
  std::ofstream(garbage) << "{\"records\": [1, 2";
  EXPECT_EQ(run_cli("replay --report " + garbage.string() + " --record 0").exit_code, 2);
  EXPECT_EQ(run_cli("replay --report " + report.string() + " --record 999999").exit_code, 2);
}

TEST(Cli, ExitOneWhenTheHarnessFailsToCatchAWeakKernel) {
  // With n = 1 the one-pass variance is exact, so its flag expectation cannot be met. With 10 large_mean
  // cases (the expectation's catch rate 0.75 needs 10 witness cases) the miss is a harness failure: exit 1.
  const fs::path report = scratch() / "uncaught.json";
  const Outcome o = run_cli("run --quiet --kernels one_pass --generators large_mean --n 1 --cases 10 --dtypes f32 --out " +
                              report.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_FALSE(load(report).at("run").at("passed").get<bool>());
  const nlohmann::json flag = load(report).at("flag_checks").at(0);
  EXPECT_TRUE(flag.at("required").get<bool>()) << flag.dump();
  EXPECT_EQ(flag.at("witness_cases"), 10);
}

TEST(Cli, TooFewOrBlindWitnessCasesMakeAMissedFlagNotRequired) {
  // A flag expectation is a statistical promise: with 2 cases (below the 10 its catch rate needs), or on
  // generators where the defect cannot show (bf16 op_by_op on n_equals_1: y = beta and dx = 0 exactly), a
  // miss is reported as not required and does not fail the run.
  for (const char* args : {"--kernels one_pass --generators large_mean --n 1 --cases 2 --dtypes f32",
                           "--kernels op_by_op --generators n_equals_1 --dtypes bf16",
                           "--kernels rms_xr_bf16 --generators constant --dtypes f32"}) {
    const fs::path report = scratch() / "not_required.json";
    const Outcome o = run_cli(std::string("run ") + args + " --out " + report.string());
    EXPECT_EQ(o.exit_code, 0) << args << "\n" << o.out << o.err;
    EXPECT_NE(o.out.find("not caught, not required ("), std::string::npos) << args << "\n" << o.out;
    const nlohmann::json flag = load(report).at("flag_checks").at(0);
    EXPECT_FALSE(flag.at("caught").get<bool>()) << flag.dump();
    EXPECT_FALSE(flag.at("required").get<bool>()) << flag.dump();
  }
}

TEST(Cli, AWeakKernelWhoseDefectIsInTheBackwardIsNotExpectedCaughtByItsForward) {
  // rms_dg_bf16 accumulates dg in bf16 and op_by_op's f32 r^3 leaves the range only in the backward:
  // a run of their forward alone must not report a harness failure (flag expectations name their op).
  for (const char* ops : {"rmsnorm_forward --kernels rms_dg_bf16", "layernorm_forward --kernels op_by_op --dtypes f32 f64"}) {
    const fs::path report = scratch() / "forward_only.json";
    const Outcome o = run_cli(std::string("run --quiet --cases 2 --max-elements 256 --ops ") + ops + " --out " + report.string());
    EXPECT_EQ(o.exit_code, 0) << ops << "\n" << o.out << o.err;
  }
  const fs::path report = scratch() / "backward_too.json";  // with the backward the expectation applies, and is met
  const Outcome o = run_cli("run --quiet --cases 3 --ops layernorm_forward layernorm_backward --kernels op_by_op --dtypes f32 "
                            "--generators overflow_prone --out " + report.string());
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  const nlohmann::json flags = load(report).at("flag_checks");
  ASSERT_EQ(flags.size(), 1u) << flags.dump();
  EXPECT_EQ(flags[0].at("op"), "layernorm_backward");
  EXPECT_TRUE(flags[0].at("caught").get<bool>());
}

TEST(Cli, InterruptedRunStillWritesAValidPartialReport) {
  const fs::path report = scratch() / "interrupted.json";
  const std::string cmd = "timeout -s TERM 3 " + std::string(NORMCHECK_BINARY) +
                          " run --quiet --cases 5000 --max-elements 256 --out " + report.string() + " >/dev/null 2>&1";
  std::system(cmd.c_str());
  ASSERT_TRUE(fs::exists(report));
  const auto j = load(report);
  EXPECT_FALSE(j.at("run").at("complete").get<bool>());
  EXPECT_GT(j.at("run").at("cases_done").get<int64_t>(), 0);
  EXPECT_LT(j.at("run").at("cases_done").get<int64_t>(), j.at("run").at("cases_planned").get<int64_t>());
}

TEST(Cli, ListNamesEveryDtypeAndKernel) {
  const Outcome o = run_cli("list");
  EXPECT_EQ(o.exit_code, 0);
  for (const char* s : {"f16", "bf16", "f32", "f64", "two_pass", "welford", "one_pass", "two_pass_storage_accum",
                        "op_by_op", "large_mean", "default", "quick", "composed", "deferred", "wide"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s;
}

TEST(Cli, BoundsPrintsFormulaConstantsAndSampleAsTextAndJson) {
  const Outcome text = run_cli("bounds --op layernorm_backward --kernel welford --dtype bf16 --n 64 --rows 4");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* s : {"LN-WELFORD-SEQ", "e_mu", "gamma_sum", "u_s", "dgamma", "observed error/bound"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s;
  const Outcome json = run_cli("bounds --kernel one_pass --dtype f32 --n 100 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("bound_id"), "LN-ONEPASS-SEQ[f32/f32]");  // as reports write it (own_bound_id)
  EXPECT_EQ(j.at("verdict_bound_id"), "LN-TWOPASS-SEQ[f32/f32]");
  EXPECT_GE(j.at("constants").size(), 8u);
  EXPECT_GT(j.at("sample").at("outputs").at("y").at("max_bound").get<double>(), 0.0);
  EXPECT_EQ(run_cli("bounds --kernel fastest").exit_code, 2);
  EXPECT_EQ(run_cli("bounds --n 0").exit_code, 2);
}

TEST(Cli, APassingRunSaysHowManyElementsItsBoundsLeaveLooseByAHundredPercent) {
  // Issue 46: a passing record can hide a 2x error, legitimately, where the contract's arithmetic
  // cannot resolve the row (large_mean_extreme in f32): the terminal says so, with the report's count.
  const fs::path out = scratch() / "loose.json";
  const Outcome o = run_cli("run --ops layernorm_forward --kernels two_pass --dtypes f32 --generators large_mean_extreme --cases 3 --out " +
                            out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  int64_t loose = 0;
  const nlohmann::json report = nlohmann::json::parse(slurp(out));
  for (const auto& r : report.at("records")) loose += r.at("loose_elements").get<int64_t>();
  ASSERT_GT(loose, 0);
  EXPECT_NE(o.out.find("loose: " + std::to_string(loose) + " elements of 1 passing records have a bound of 100 % of |exact| or more"),
            std::string::npos) << o.out;
  const Outcome tight = run_cli("run --ops layernorm_forward --kernels two_pass --dtypes f32 --generators normal --cases 2 --out " +
                                (scratch() / "tight.json").string());
  EXPECT_EQ(tight.out.find("loose:"), std::string::npos) << tight.out;  // said only where it happens
}

TEST(Cli, SearchReportsRatiosAndWritesACorpus) {
  const fs::path corpus = scratch() / "corpus.txt";
  const Outcome o = run_cli("search --kernels two_pass --dtypes f64 --rows 1 --n 8 --restarts 2 --iterations 20 --out " +
                              corpus.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("layernorm_forward"), std::string::npos);
  const std::string written = slurp(corpus);
  EXPECT_NE(written.find("op=layernorm_forward output=y variant=two_pass dtype=f64 rows=1 n=8"), std::string::npos);
  EXPECT_NE(o.out.find("1 cases added, 0 replaced, 0 kept"), std::string::npos) << o.out;
  // A search never replaces a harder case of the corpus by an easier one (issue 46: it replaced a
  // case of ratio 0.9977 by one of 0.7838) unless asked with --replace.
  const std::regex ratio_re("ratio=[^ ]+");
  std::ofstream(corpus) << std::regex_replace(written, ratio_re, "ratio=2");  // harder than any sound case (<= 1)
  const std::string search = "search --kernels two_pass --dtypes f64 --rows 1 --n 8 --restarts 1 --iterations 5 --seed 9 --out " + corpus.string();
  const Outcome again = run_cli(search);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("0 cases added, 0 replaced, 1 kept"), std::string::npos) << again.out;
  EXPECT_NE(slurp(corpus).find(" ratio=2 "), std::string::npos);
  const Outcome replaced = run_cli(search + " --replace");
  ASSERT_EQ(replaced.exit_code, 0) << replaced.out << replaced.err;
  EXPECT_NE(replaced.out.find("0 cases added, 1 replaced, 0 kept"), std::string::npos) << replaced.out;
  EXPECT_EQ(slurp(corpus).find(" ratio=2 "), std::string::npos);
  EXPECT_EQ(run_cli("search --dtypes f7").exit_code, 2);
  EXPECT_EQ(run_cli("search --rows 0").exit_code, 2);
}

TEST(Cli, RunJudgesTheBlockFormsPerDtypeFlagsTheDefectAndReplaysBlockRecords) {
  const fs::path out = scratch() / "block.json";
  const Outcome o = run_cli("run --ops linear_rmsnorm --block-cases 1 --threads 2 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("composed vs deferred"), std::string::npos);
  const auto j = load(out);
  EXPECT_TRUE(j.at("records").empty());
  const auto& b = j.at("rms_block");
  EXPECT_TRUE(b.at("passed").get<bool>());
  ASSERT_EQ(b.at("records").size(), 4u * 4u * 3u * 4u);  // dtypes x generators x variants x outputs
  ASSERT_EQ(b.at("comparison").size(), 4u * 3u * 4u);
  int64_t flagged = 0;
  for (const auto& r : b.at("records")) {
    EXPECT_EQ(r.at("uncertified_elements").get<int64_t>(), 0) << r.dump();
    EXPECT_GT(r.at("elements").get<int64_t>(), 0);
    if (r.at("variant") != "deferred_bias_in_correction") {
      EXPECT_EQ(r.at("verdict"), "pass") << r.dump();
    }
    if (r.at("verdict") == "flagged") ++flagged;
  }
  EXPECT_GE(flagged, 4);  // at least one bias-defect dx record in each dtype
  for (const auto& f : b.at("flag_checks")) EXPECT_TRUE(f.at("caught").get<bool>()) << f.dump();
  int replayed = 0;
  for (size_t i = 0; i < b.at("records").size() && replayed < 4; i += 23) {
    const Outcome r = run_cli("replay --report " + out.string() + " --block-record " + std::to_string(i));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("reproduces"), std::string::npos) << r.out;
    ++replayed;
  }
  const std::string schema = std::string(NORMCHECK_SOURCE_DIR) + "/reports/schema/report.v1.schema.json";
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") == 0) {
    const std::string py = "/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                           "json.load(open(sys.argv[2])))\" " + out.string() + " " + schema;
    EXPECT_EQ(std::system(py.c_str()), 0);
  }
  auto tampered = j;
  auto& wc = tampered["rms_block"]["records"][0]["worst_case"];
  if (wc.contains("x"))
    wc["x"][0] = "0x1.8p+3";
  else
    wc["case_seed"] = "12345";
  const fs::path bad = scratch() / "block_tampered.json";
  std::ofstream(bad) << tampered.dump();
  const Outcome t = run_cli("replay --report " + bad.string() + " --block-record 0");
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find("digest"), std::string::npos) << t.err;
  EXPECT_EQ(run_cli("run --ops linear_rmsnorm --block-generators nope").exit_code, 2);
  EXPECT_EQ(run_cli("run --ops layernorm_forward --kernels composed").exit_code, 2);
  EXPECT_EQ(run_cli("replay --report " + out.string() + " --block-record 99999").exit_code, 2);
  EXPECT_EQ(run_cli("replay --report " + out.string()).exit_code, 2);
}

TEST(Cli, RunJudgesTheQrContractionPerDtypeAndCategoryAndReplaysItsRecords) {
  const fs::path out = scratch() / "qr.json";
  const Outcome o = run_cli("run --ops qr_contraction --contraction-cases 1 --threads 2 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("QR contraction across LayerNorm"), std::string::npos);
  const auto j = load(out);
  EXPECT_TRUE(j.at("records").empty());
  EXPECT_TRUE(j.at("rms_block").is_null());
  const auto& q = j.at("qr_contraction");
  EXPECT_TRUE(q.at("passed").get<bool>());
  ASSERT_EQ(q.at("records").size(), 4u * 9u * 4u);  // dtypes x seed categories x {contracted, original} x {f, dx}
  for (const auto& r : q.at("records")) {
    EXPECT_EQ(r.at("uncertified_elements").get<int64_t>(), 0) << r.dump();
    if (r.at("form") == "contracted") {
      EXPECT_EQ(r.at("verdict"), "pass") << r.dump();
    }
    if (r.at("form") == "original") {  // no a priori bound: every element is judged by the envelope only
      EXPECT_EQ(r.at("bound_id").get<std::string>().rfind("ENVELOPE-ORIGINAL[", 0), 0u) << r.dump();
      EXPECT_EQ(r.at("void_bound_elements"), r.at("elements")) << r.dump();
    }
  }
  for (size_t i = 0; i < q.at("records").size(); i += 29) {
    const Outcome r = run_cli("replay --report " + out.string() + " --contraction-record " + std::to_string(i));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("reproduces"), std::string::npos) << r.out;
  }
  auto edited = j;
  edited["qr_contraction"]["records"][0]["worst_case"]["d"] = 9999;
  const fs::path bad = scratch() / "qr_edited.json";
  std::ofstream(bad) << edited.dump();
  EXPECT_EQ(run_cli("replay --report " + bad.string() + " --contraction-record 0").exit_code, 2);
  const std::string schema = std::string(NORMCHECK_SOURCE_DIR) + "/reports/schema/report.v1.schema.json";
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") == 0) {
    const std::string py = "/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                           "json.load(open(sys.argv[2])))\" " + out.string() + " " + schema;
    EXPECT_EQ(std::system(py.c_str()), 0);
  }
  EXPECT_EQ(run_cli("run --ops qr_contraction --contraction-generators nope").exit_code, 2);
  EXPECT_EQ(run_cli("replay --report " + out.string() + " --contraction-record -1").exit_code, 2);
}

TEST(Cli, AuditAxesPrintsTheCountsAndCatchesAWrongAxisKernel) {
  Outcome o = run_cli("audit-axes --shape 2,3,4,4 --layout nchw --kind batch_norm");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("reduction groups                   3"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("entries per group                  32"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("running-statistic scalars          6"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(1, 3, 1, 1)"), std::string::npos) << o.out;
  const fs::path out = scratch() / "audit.json";
  o = run_cli("audit-axes --shape 2,3,4,4 --layout nchw --kind channel_layer_norm --kernel last_axis_layer_norm --dtype bf16 --out " +
              out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("normalizes over W, declared over C"), std::string::npos) << o.out;
  const auto j = load(out);
  EXPECT_FALSE(j.at("record").at("kernel").at("match").get<bool>());
  EXPECT_EQ(j.at("record").at("declared").at("reduction_groups").get<int64_t>(), 32);
  EXPECT_EQ(run_cli("audit-axes --shape 2,3,4,4 --kind layer_norm --normalized-dims 3 --kernel declared").exit_code, 0);
  for (const char* bad : {"audit-axes --shape 2,3,4 --layout nchw", "audit-axes --shape 2,6,4,4 --kind group_norm --groups 4",
                          "audit-axes --shape 2,3 --layout dense --kind instance_norm", "audit-axes --shape 2,3,4,4 --kind foo",
                          "audit-axes --shape 2,3,4,4 --kernel nope", "audit-axes --shape 2,0,4,4"}) {
    o = run_cli(bad);
    EXPECT_EQ(o.exit_code, 2) << bad;
    EXPECT_EQ(lines(o.err), 1) << bad << ": " << o.err;
  }
}

TEST(Cli, RunJudgesGroupedNormsAndAuditsAxes) {
  const fs::path out = scratch() / "grouped.json";
  const Outcome o = run_cli("run --ops grouped_norm,axis_audit --grouped-cases 1 --threads 2 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto j = load(out);
  EXPECT_TRUE(j.at("grouped_norm").at("passed").get<bool>());
  // dtypes x outputs of batch (7), group, instance, layer, channel-layer (4 each) and RMS norm (3)
  EXPECT_EQ(j.at("grouped_norm").at("records").size(), 4u * (7u + 4u + 4u + 4u + 4u + 3u));
  EXPECT_TRUE(j.at("axis_audit").at("passed").get<bool>());
  int planted_caught = 0;
  for (const auto& r : j.at("axis_audit").at("records"))
    if (r.at("kernel").at("planted").get<bool>() && !r.at("kernel").at("match").get<bool>()) ++planted_caught;
  EXPECT_GE(planted_caught, 40);
  const std::string schema = std::string(NORMCHECK_SOURCE_DIR) + "/reports/schema/report.v1.schema.json";
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") == 0) {
    const std::string py = "/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                           "json.load(open(sys.argv[2])))\" " + out.string() + " " + schema;
    EXPECT_EQ(std::system(py.c_str()), 0);
  }
}

TEST(Cli, DiffClassifiesRecordsAndExitsOnRegressions) {
  const fs::path base = scratch() / "diff_base.json";
  ASSERT_EQ(run_cli("run --suite quick --quiet --dtypes f32 --out " + base.string()).exit_code, 0);
  Outcome o = run_cli("diff " + base.string() + " " + base.string());
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("no regression"), std::string::npos);
  auto edited = load(base);
  auto& first = edited["records"][0];
  first["verdict"] = "fail";
  edited["records"][1]["max_ulp"] = edited["records"][1]["max_ulp"].get<double>() * 10 + 10;
  edited["records"][2]["max_bound_ratio"] = edited["records"][2]["max_bound_ratio"].get<double>() + 0.5;
  edited["records"].erase(3);
  edited["qr_contraction"]["records"][0]["max_ulp"] = 0.0;  // an improvement if it was > 2 ULP, else unchanged
  const fs::path now = scratch() / "diff_new.json", out = scratch() / "diff.json";
  std::ofstream(now) << edited.dump();
  o = run_cli("diff " + base.string() + " " + now.string() + " --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const auto d = load(out);
  EXPECT_TRUE(d.at("regressed").get<bool>());
  EXPECT_EQ(d.at("counts").at("new_failure").get<int>(), 1);
  EXPECT_EQ(d.at("counts").at("regression").get<int>(), 2);
  EXPECT_EQ(d.at("counts").at("removed").get<int>(), 1);
  o = run_cli("diff " + now.string() + " " + base.string());
  EXPECT_EQ(o.exit_code, 1);  // fixed and added back, but the zeroed contraction max_ulp now grows back
  EXPECT_NE(o.out.find("fixed"), std::string::npos);
  EXPECT_NE(o.out.find("added"), std::string::npos);
  auto other_seed = load(base);
  other_seed["config"]["seed"] = "7";
  const fs::path seeded = scratch() / "diff_seed.json";
  std::ofstream(seeded) << other_seed.dump();
  o = run_cli("diff " + base.string() + " " + seeded.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("seed differs"), std::string::npos) << o.err;
  EXPECT_EQ(run_cli("diff " + base.string() + " " + seeded.string() + " --force").exit_code, 0);
  auto other_schema = load(base);
  other_schema["schema_version"] = "2.0.0";
  std::ofstream(seeded) << other_schema.dump();
  EXPECT_EQ(run_cli("diff " + base.string() + " " + seeded.string() + " --force").exit_code, 2);
  EXPECT_EQ(run_cli("diff " + base.string() + " /nonexistent.json").exit_code, 2);
  EXPECT_EQ(run_cli("diff " + base.string() + " " + base.string() + " --max-ulp-factor 0.5").exit_code, 2);
}

TEST(Cli, BenchOracleReportsEveryPathAndTheLevelThatCertified) {
  const fs::path out = scratch() / "bench_oracle.json";
  const Outcome o = run_cli("bench-oracle --n 64 --dtypes bf16,f64 --cases 1 --repeats 1 --elements 256 --json " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto j = load(out);
  EXPECT_EQ(j.at("rows").size(), 2u * (7u + 8u));  // bf16, f64 x (layernorm's seven paths + rmsnorm's eight: its a priori dd level)
  int a_priori_dd = 0, boost_mpfi = 0;
  for (const auto& r : j.at("rows")) {
    if (r.at("path") == "boost mpfi_float_50") {  // the reference point: the same formulas on Boost's type
      ++boost_mpfi;
      EXPECT_EQ(r.at("certified_by_bits"), "168:1");
    }
    if (r.at("path") == "a priori dd (106-bit)") {
      ++a_priori_dd;
      EXPECT_EQ(r.at("op"), "rmsnorm");
      EXPECT_EQ(r.at("certified_by_bits"), "106:1");  // a normal row: certified by the level itself
    }
    EXPECT_GT(r.at("ns_per_element").get<double>(), 0);
    EXPECT_EQ(r.at("generator"), "normal");
    if (r.at("path") != "cascade") continue;
    const std::string by = r.at("certified_by_bits").get<std::string>();
    EXPECT_TRUE(by == "53:1" || by == "106:1" || by == "168:1" || by == "500:1" || by == "1330:1") << by;  // some level certified the case
    if (r.at("dtype") == "f64") {
      EXPECT_NE(by, "53:1");  // a 53-bit ball never certifies f64 outputs
    }
  }
  EXPECT_EQ(a_priori_dd, 2);
  EXPECT_EQ(boost_mpfi, 4);
  // Every generator but the corpus, and the slope of the cost against n.
  const Outcome all = run_cli("bench-oracle --n 16 32 --dtypes bf16 --cases 1 --repeats 1 --elements 64 --generator all --json " + out.string());
  ASSERT_EQ(all.exit_code, 0) << all.out << all.err;
  const auto ja = load(out);
  EXPECT_EQ(ja.at("generators").size(), normcheck::gen::row_generator_names().size() - 1);
  EXPECT_EQ(ja.at("rows").size(), ja.at("generators").size() * 2u * (7u + 8u));
  EXPECT_EQ(ja.at("slopes").size(), ja.at("generators").size() * (7u + 8u));
  // --paths times only the named paths, beside the float64 kernel every ratio divides by.
  const Outcome some = run_cli("bench-oracle --n 64 --dtypes bf16 --cases 1 --repeats 1 --elements 256 --paths a_priori,cascade --json " + out.string());
  ASSERT_EQ(some.exit_code, 0) << some.out << some.err;
  const auto js = load(out);  // named: a range-for over a member of the temporary would dangle
  std::set<std::string> timed;
  for (const auto& r : js.at("rows")) timed.insert(r.at("path").get<std::string>());
  EXPECT_EQ(timed, (std::set<std::string>{"float64 kernel", "a priori (53-bit)", "cascade"}));
  EXPECT_EQ(js.at("rows").size(), 2u * 3u);
  EXPECT_NE(all.out.find("log-log slope"), std::string::npos);
  for (const char* bad : {"bench-oracle --n 0", "bench-oracle --dtypes f8", "bench-oracle --generator nope", "bench-oracle --paths mpfr"}) {
    const Outcome b = run_cli(bad);
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_EQ(lines(b.err), 1) << bad << ": " << b.err;
  }
}

// Issue 19 (partial): the conventions a CLI user relies on.

TEST(Conventions, VersionPrintsTheVersionRevisionAndOracleBackends) {
  for (const char* args : {"--version", "version"}) {
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.exit_code, 0) << args << o.err;
    for (const char* part : {"normcheck 0.", "(git ", "double-double ball", "MPFI", "MPFR", "Boost"})
      EXPECT_NE(o.out.find(part), std::string::npos) << args << ": " << part << "\n" << o.out;
  }
  const fs::path out = scratch() / "version.json";
  ASSERT_EQ(run_cli("run --ops layernorm_forward --dtypes f32 --suite quick --generators normal --quiet --out " + out.string()).exit_code, 0);
  const std::string first = run_cli("--version").out;
  EXPECT_NE(first.find("normcheck " + load(out).at("run").at("version").get<std::string>() + " "), std::string::npos);
}

TEST(Conventions, MistypedCommandsOptionsAndNamesGetOneLineWithTheClosestName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rn", "did you mean 'run'?"},
      {"run --dtype f32", "did you mean '--dtypes'?"},
      {"run --ops layernorm_forwrd", "did you mean 'layernorm_forward'?"},
      {"run --suite quik", "did you mean 'quick'?"},
      {"run --dtypes bf61", "did you mean 'bf16'?"},
      {"run --generators normall", "did you mean 'normal'?"},
      {"run --kernels welfrod", "did you mean 'welford'?"},
      {"bounds --kernel welfrod", "did you mean 'welford'?"},
      {"bench-oracle --generator nromal", "did you mean 'normal'?"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_EQ(lines(o.err), 1) << args << ": " << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << args << ": " << o.err;
  }
  const Outcome far = run_cli("run --suite zzzzzzzz");  // nothing close: no suggestion, still one line
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(Conventions, EveryHelpDocumentsTheExitCodes) {
  for (const char* cmd : {"--help", "run --help", "replay --help", "diff --help", "merge --help", "render --help", "bounds --help",
                          "suites --help", "bench-oracle --help", "version --help"}) {
    const Outcome o = run_cli(cmd);
    EXPECT_EQ(o.exit_code, 0) << cmd;
    EXPECT_NE(o.out.find("Exit codes: 0"), std::string::npos) << cmd;
  }
}

TEST(Conventions, JunitXmlAndTheSummaryLineAgreeWithTheReport) {
  const fs::path out = scratch() / "junit_run.json", xml = scratch() / "junit_run.xml";
  // The exec example with its planted one-pass variance: failing records with worst elements.
  const std::string exec = "/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/exec_example.py --one-pass {dir}";
  const Outcome o = run_cli("run --exec '" + exec + "' --ops layernorm_forward --dtypes f32 --generators large_mean --cases 2 "
                            "--quiet --summary-json --junit " + xml.string() + " --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const std::string last = o.out.substr(o.out.rfind('\n', o.out.size() - 2) + 1);
  const auto summary = nlohmann::json::parse(last);
  EXPECT_FALSE(summary.at("passed").get<bool>());
  EXPECT_GE(summary.at("failing").get<int64_t>(), 1);
  EXPECT_EQ(summary.at("report"), out.string());
  const std::string check =
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as ET; r = ET.parse(sys.argv[1]).getroot(); "
      "f = r.findall('.//failure'); assert r.tag == 'testsuites' and int(r.get('failures')) == len(f) == int(sys.argv[2]), (r.attrib, len(f)); "
      "assert all('worst element' in x.text and 'replay' in x.text for x in f); print(len(r.findall('.//testcase')))\" " +
      xml.string() + " " + std::to_string(summary.at("failing").get<int64_t>());
  const Outcome parsed = run_shell(check);
  EXPECT_EQ(parsed.exit_code, 0) << parsed.out << parsed.err;
  EXPECT_EQ(std::stoll(parsed.out), summary.at("records").get<int64_t>());
}

// Issue 44: the batch_invariance section (docs/invariance.md) through the CLI.
TEST(Cli, BatchInvarianceSectionPassesSoundKernelsCatchesPlantedOnesAndReplays) {
  const fs::path report = scratch() / "invariance.json";
  const Outcome o = run_cli("run --ops batch_invariance --threads 2 --out " + report.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("planted variants caught 10 of 10"), std::string::npos) << o.out;
  const auto j = load(report);
  const auto& recs = j.at("batch_invariance").at("records");
  int64_t planted = 0, builtin = 0, planted_index = -1;
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    // a planted kernel's checks stop at its first difference
    EXPECT_GE(r.at("calls").get<int64_t>(), r.at("kernel") == "planted" ? 2 : 12) << r.dump();
    if (r.at("kernel") == "planted") {
      ++planted;
      EXPECT_EQ(r.at("verdict"), "flagged") << r.dump();
      EXPECT_EQ(r.at("found"), r.at("expected_verdict")) << r.dump();
      ASSERT_TRUE(r.contains("difference")) << r.dump();
      if (r.at("variant") == "ln_atomic_dgamma") {
        EXPECT_TRUE(r.at("difference").at("row").is_null());
      }
      if (planted_index < 0) planted_index = static_cast<int64_t>(i);
    } else {
      ++builtin;
      EXPECT_EQ(r.at("verdict"), "pass") << r.dump();
      EXPECT_FALSE(r.contains("difference"));
    }
    if (r.at("op") == "layernorm_backward") {
      EXPECT_TRUE(r.at("checks").at("not_applicable").contains("dgamma")) << r.dump();
    }
  }
  EXPECT_EQ(planted, 10);
  EXPECT_GT(builtin, 80);
  const Outcome replay = run_cli("replay --report " + report.string() + " --invariance-record " + std::to_string(planted_index));
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("reproduced"), std::string::npos) << replay.out;
  EXPECT_EQ(run_cli("replay --report " + report.string() + " --invariance-record 100000").exit_code, 2);
  EXPECT_EQ(run_cli("run --ops batch_invariance --invariance off --out " + (scratch() / "off.json").string()).exit_code, 2);
  EXPECT_EQ(run_cli("run --ops batch_invariance --invariance sometimes --out " + (scratch() / "bad.json").string()).exit_code, 2);
}

TEST(Cli, BatchInvarianceCatchesABatchVariantExecKernelByDefaultAndReportOnlyKeepsTheRunGreen) {
  const std::string script = std::string(NORMCHECK_SOURCE_DIR) + "/scripts/exec_example.py";
  const std::string common = " --ops layernorm_forward --dtypes f32 --generators normal --cases 1 --out ";
  const fs::path bad = scratch() / "inv_exec_bad.json", good = scratch() / "inv_exec_good.json", ro = scratch() / "inv_exec_ro.json",
                 xml = scratch() / "inv_exec.xml";
  const Outcome o = run_cli("run --exec '/usr/bin/python3 " + script + " --batch-variant {dir}'" + common + bad.string() + " --junit " + xml.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("batch_variant"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("a batch of 256 rows"), std::string::npos) << o.out;
  const auto j = load(bad);
  ASSERT_EQ(j.at("batch_invariance").at("records").size(), 1u);  // --ops names the forward op only
  const auto& rec = j.at("batch_invariance").at("records").at(0);
  EXPECT_EQ(rec.at("verdict"), "batch_variant");
  EXPECT_EQ(rec.at("expectation"), "must_pass");
  EXPECT_TRUE(j.at("records").at(0).at("verdict") == "pass") << "accurate, yet batch-variant";
  EXPECT_NE(slurp(xml).find("failure type=\"batch_variant\""), std::string::npos);
  const Outcome replay = run_cli("replay --report " + bad.string() + " --invariance-record 0");
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_EQ(run_cli("run --exec '/usr/bin/python3 " + script + " {dir}'" + common + good.string()).exit_code, 0);
  EXPECT_EQ(load(good).at("batch_invariance").at("records").at(0).at("verdict"), "pass");
  EXPECT_EQ(run_cli("run --exec '/usr/bin/python3 " + script + " --batch-variant {dir}' --invariance report_only" + common + ro.string()).exit_code, 0);
  EXPECT_EQ(load(ro).at("batch_invariance").at("records").at(0).at("expectation"), "report_only");
}
