// The nightly workflow (issue 8): shards merged into exactly the unsharded report, merge's refusals,
// and a nightly run against a baseline catching a regression planted in a kernel.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "nightly/diff.hpp"
#include "properties/cli_harness.hpp"
#include "generators/generators.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"
#include "shard_compare.hpp"

namespace {

nlohmann::json load(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

TEST(Suites, AreListedWithVersionsAndTheNightlySuiteIsTheFullest) {
  const Outcome text = run_cli("suites");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* s : {"quick (version", "default (version", "nightly (version", "rms_block", "qr_contraction", "port_hamiltonian"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s;
  const Outcome json = run_cli("suites --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::map<std::string, int64_t> total;
  for (const auto& s : nlohmann::json::parse(json.out)) {
    EXPECT_GE(s["version"].get<int>(), 1);
    for (const auto& row : s["sections"]) total[s["name"]] += row["cases"].get<int64_t>();
  }
  EXPECT_LT(total["quick"], total["default"]);
  EXPECT_LT(total["default"], total["nightly"]);
  EXPECT_EQ(run_cli("suites --bogus").exit_code, 2);
}

TEST(Suites, TheProductionShapesSuiteRunsLayerNormAndRmsNormOnlyAtItsShape) {
  // `llm`: per-op records only, bf16/f16/f32, normal and large_mean rows, one case each, 2048 x 4096;
  // run here at a small override of its shape (the full suite is documented in docs/performance.md).
  const Outcome json = run_cli("suites --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  bool found = false;
  for (const auto& s : nlohmann::json::parse(json.out)) {
    if (s["name"] != "llm") continue;
    found = true;
    ASSERT_EQ(s["sections"].size(), 1u);
    EXPECT_EQ(s["sections"][0]["section"], "records");
    EXPECT_EQ(s["sections"][0]["cases"].get<int64_t>(), 6);
    EXPECT_EQ(s["sections"][0]["shapes"], "2048 x 4096");
  }
  EXPECT_TRUE(found);
  const fs::path out = scratch() / "llm_small.json";
  const Outcome run = run_cli("run --suite llm --rows 8 --n 512 --threads 2 --out " + out.string());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto j = load(out);
  EXPECT_EQ(j["config"]["suite"], "llm");
  EXPECT_EQ(j["config"]["dtypes"], nlohmann::json({"bf16", "f16", "f32"}));
  EXPECT_EQ(j["config"]["generators"], nlohmann::json({"normal", "large_mean"}));
  EXPECT_EQ(j["run"]["cases_done"].get<int64_t>(), 6);
  for (const char* other : {"rms_block", "qr_contraction", "grouped_norm", "layernorm_jvp", "port_hamiltonian", "axis_audit"})
    EXPECT_TRUE(j[other].is_null()) << other;
  for (const auto& r : j["records"]) {
    EXPECT_EQ(r["worst_case"]["rows"].get<int64_t>(), 8);
    EXPECT_EQ(r["worst_case"]["n"].get<int64_t>(), 512);
  }
}

/// A two-record report whose only record has the given err/bound ratio.
nlohmann::json one_record_report(double ratio) {
  return {{"tool", "normcheck"}, {"schema_version", "1.0.0"}, {"run", {{"complete", true}}},
          {"config", {{"suite", "quick"}, {"suite_version", 1}, {"seed", "1"}}},
          {"records", {{{"op", "layernorm_forward"}, {"kernel", "k"}, {"variant", "v"}, {"storage", "f32"}, {"accum", "f32"},
                        {"property", "accuracy/normal"}, {"output", "y"}, {"verdict", "pass"}, {"max_ulp", 1.0},
                        {"rms_ulp", 0.5}, {"max_bound_ratio", ratio}}}}};
}

TEST(Diff, BoundRatioThresholdIsAbsoluteWithinTheBoundAndRelativeBeyond) {
  const auto change = [](double before, double after) {
    return normcheck::nightly::diff_reports(one_record_report(before), one_record_report(after), {}, false).changes.at(0).change;
  };
  EXPECT_EQ(change(0.5, 0.65), normcheck::nightly::Change::regression);   // +0.15 > 0.1
  EXPECT_EQ(change(0.5, 0.55), normcheck::nightly::Change::unchanged);
  EXPECT_EQ(change(2.0, 2.3), normcheck::nightly::Change::regression);    // +15 % > 10 %
  EXPECT_EQ(change(2.383e7, 2.383e7 + 1), normcheck::nightly::Change::unchanged);  // noise on a known-weak kernel
  EXPECT_EQ(change(2.0e7, 3.0e7), normcheck::nightly::Change::regression);
  EXPECT_EQ(change(0.9, 0.5), normcheck::nightly::Change::improvement);
}

TEST(Diff, ARecordThatStartsViolatingItsOwnBoundIsANewFailureAndExitsOne) {
  auto base = one_record_report(0.5), now = one_record_report(0.5);
  now["records"][0]["verdict"] = "own_bound_violated";
  EXPECT_EQ(normcheck::nightly::diff_reports(base, now, {}, false).changes.at(0).change, normcheck::nightly::Change::new_failure);
  const fs::path a = scratch() / "own_base.json", b = scratch() / "own_now.json";
  std::ofstream(a) << base.dump();
  std::ofstream(b) << now.dump();
  const fs::path out = scratch() / "own_diff.json";
  const Outcome o = run_cli("diff " + a.string() + " " + b.string() + " --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("new_failure"), std::string::npos) << o.out;
  EXPECT_EQ(load(out).at("counts").at("new_failure"), 1);
}

const std::string kSmallRun = "run --quiet --suite quick --dtypes f32,bf16 ";

TEST(Shards, MergedShardsEqualTheUnshardedRunRecordForRecord) {
  const fs::path dir = scratch() / "shards", merged = dir / "report.json", single = dir / "single.json";
  fs::create_directories(dir);
  // The single run writes to the merged report's path (replay commands name it), then moves aside.
  ASSERT_LE(run_cli(kSmallRun + "--threads 2 --out " + merged.string()).exit_code, 1);
  fs::rename(merged, single);
  std::string shards;
  for (int i = 0; i < 4; ++i) {
    const fs::path s = dir / ("shard" + std::to_string(i) + ".json");
    const Outcome o = run_cli(kSmallRun + "--threads 1 --shard " + std::to_string(i) + "/4 --out " + s.string());
    ASSERT_LE(o.exit_code, 1) << o.err;
    const auto j = load(s);
    EXPECT_EQ(j["run"]["shard"]["index"], i);
    EXPECT_LT(j["run"]["cases_planned"].get<int64_t>(), load(single)["run"]["cases_planned"].get<int64_t>());
    shards += s.string() + " ";
  }
  const Outcome m = run_cli("merge " + shards + "--out " + merged.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const nlohmann::json a = without_run_metadata(load(single)), b = without_run_metadata(load(merged));
  EXPECT_EQ(first_difference(a, b), "");
  EXPECT_GT(a["records"].size(), 100u);
  EXPECT_GT(a["rms_block"]["records"].size(), 10u);
  // The port-Hamiltonian budget records carry their ratio to the budget (what diff and render read).
  double budget_ratio = 0;
  for (const auto& r : a["port_hamiltonian"]["records"])
    if (r["property"] == "fp_budget" && r["max_bound_ratio"].is_number()) budget_ratio = std::max(budget_ratio, r["max_bound_ratio"].get<double>());
  EXPECT_GT(budget_ratio, 0.0);
  EXPECT_LE(budget_ratio, 1.0);
  EXPECT_EQ(load(merged)["run"]["merged_from"].size(), 4u);
}

TEST(Shards, MoreShardsThanDtypeUnitsStillMergeBitForBit) {
  // 11 shards (more than the 8 dtype units of the other sections with two dtypes): most per-op
  // records span several shards and are folded case by case by `merge`; shards run in reverse
  // order and are merged in a shuffled argument order.
  const fs::path dir = scratch() / "shards11", merged = dir / "report.json", single = dir / "single.json";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_LE(run_cli(kSmallRun + "--threads 2 --out " + merged.string()).exit_code, 1);
  fs::rename(merged, single);
  std::string shards;
  for (int i = 10; i >= 0; --i) {
    const fs::path s = dir / ("shard" + std::to_string(i) + ".json");
    ASSERT_LE(run_cli(kSmallRun + "--threads 1 --shard " + std::to_string(i) + "/11 --out " + s.string()).exit_code, 1);
    shards = (i % 2 ? shards + s.string() + " " : s.string() + " " + shards);
  }
  const Outcome m = run_cli("merge " + shards + "--out " + merged.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(first_difference(without_run_metadata(load(single)), without_run_metadata(load(merged))), "");
  EXPECT_FALSE(load(merged).contains("shard_items"));
  int64_t spanning = 0;  // per-op records whose cases ran on more than one shard
  std::map<size_t, std::set<int>> shards_of_record;
  std::map<int64_t, std::set<int>> shards_of_case;  // a case's LayerNorm and RMSNorm units are two shard units
  for (int i = 0; i < 11; ++i) {
    const nlohmann::json shard = load(dir / ("shard" + std::to_string(i) + ".json"));
    for (const auto& item : shard.at("shard_items")) {
      shards_of_case[item.at("item").get<int64_t>()].insert(i);
      for (const auto& p : item.at("partials")) shards_of_record[p.at("record").get<size_t>()].insert(i);
    }
  }
  for (const auto& [record, on] : shards_of_record) spanning += on.size() > 1;
  EXPECT_GT(spanning, 100);
  int64_t split_cases = 0;
  for (const auto& [item, on] : shards_of_case) split_cases += on.size() > 1;
  EXPECT_GT(split_cases, 10) << "cases whose two families ran on two shards and were joined by merge";
}

TEST(Shards, MergeRefusesACaseWhoseFamiliesTwoShardsBothRan) {
  // Two shards that both claim a case's LayerNorm kernels (an edited or mismatched shard): merge
  // refuses with one line instead of folding the case twice.
  const fs::path dir = scratch() / "family_twice";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string opts = "run --quiet --suite quick --ops layernorm_forward rmsnorm_forward --dtypes f32 ";
  for (int i = 0; i < 2; ++i)
    ASSERT_LE(run_cli(opts + "--shard " + std::to_string(i) + "/2 --out " + (dir / ("s" + std::to_string(i) + ".json")).string()).exit_code, 1);
  nlohmann::json s0 = load(dir / "s0.json"), s1 = load(dir / "s1.json");
  nlohmann::json* ln = nullptr;  // a LayerNorm part in shard 0
  for (auto& item : s0.at("shard_items"))
    if (item.at("families").at(0).get<bool>()) ln = &item;
  ASSERT_NE(ln, nullptr);
  nlohmann::json copy = *ln;
  copy["families"] = {true, false};
  s1["shard_items"].push_back(copy);
  std::ofstream(dir / "s1.json") << s1.dump();
  const Outcome m = run_cli("merge " + (dir / "s0.json").string() + " " + (dir / "s1.json").string() + " --out " + (dir / "m.json").string());
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("cover the LayerNorm kernels twice"), std::string::npos) << m.err;
  EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << m.err;
  EXPECT_FALSE(fs::exists(dir / "m.json"));
}

TEST(Shards, MergeRefusesCraftedCountsInsteadOfOverflowing) {
  // Issue 48 M3: the counts in shard_items are untrusted bytes. An accumulator whose element count
  // is 2^63 - 1, or a run that claims 2^63 - 1 cases in each of two shards, once overflowed signed
  // sums (negative counts, exit 0); now merge refuses with one line and writes nothing.
  const fs::path dir = scratch() / "crafted_counts";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string opts = "run --quiet --suite quick --ops layernorm_forward rmsnorm_forward --dtypes f32 ";
  for (int i = 0; i < 2; ++i)
    ASSERT_LE(run_cli(opts + "--shard " + std::to_string(i) + "/2 --out " + (dir / ("s" + std::to_string(i) + ".json")).string()).exit_code, 1);
  const nlohmann::json s0 = load(dir / "s0.json"), s1 = load(dir / "s1.json");
  const auto refused = [&](const nlohmann::json& a, const nlohmann::json& b, const char* why) {
    std::ofstream(dir / "a.json") << a.dump();
    std::ofstream(dir / "b.json") << b.dump();
    fs::remove(dir / "m.json");
    const Outcome m = run_cli("merge " + (dir / "a.json").string() + " " + (dir / "b.json").string() + " --out " + (dir / "m.json").string());
    EXPECT_EQ(m.exit_code, 2) << why << "\n" << m.out << m.err;
    EXPECT_NE(m.err.find(why), std::string::npos) << m.err;
    EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << m.err;
    EXPECT_FALSE(fs::exists(dir / "m.json")) << why;
  };
  // The untouched shards merge (the attacks below are what makes merge refuse).
  {
    const Outcome m = run_cli("merge " + (dir / "s0.json").string() + " " + (dir / "s1.json").string() + " --out " + (dir / "m.json").string());
    ASSERT_LE(m.exit_code, 1) << m.err;
  }
  // (a) The first 8 bytes of an accumulator are its element count (little-endian): make it 2^63 - 1
  // (ff ff ff ff ff ff ff 7f), keeping byte 8 (zero in the original: chars 8..11 encode bytes 6..8).
  nlohmann::json a = s0;
  std::string& acc = a.at("shard_items").at(0).at("partials").at(0).at("acc").get_ref<std::string&>();
  ASSERT_EQ(acc.substr(8, 4), "AAAA") << acc.substr(0, 16);
  acc.replace(0, 12, "/////////38A");
  refused(a, s1, "count");
  // (b) a section's cases planned and done (summed over shards): 2^63 - 1 in each shard.
  for (int i = 0; i < 2; ++i)
    ASSERT_LE(run_cli("run --quiet --suite quick --ops grouped_norm --dtypes f32 --shard " + std::to_string(i) + "/2 --out " +
                      (dir / ("g" + std::to_string(i) + ".json")).string()).exit_code, 1);
  nlohmann::json g0 = load(dir / "g0.json"), g1 = load(dir / "g1.json");
  for (nlohmann::json* s : {&g0, &g1}) {
    ASSERT_TRUE(s->at("grouped_norm").contains("cases_planned"));
    (*s)["grouped_norm"]["cases_planned"] = (*s)["grouped_norm"]["cases_done"] = INT64_MAX;
  }
  refused(g0, g1, "cases_");
  // (c) a part's row count beyond 2^53.
  nlohmann::json c = s0;
  c.at("shard_items").at(0)["n"] = int64_t{1} << 62;
  refused(c, s1, "n 4611686018427387904 is not a count");
  // (c') no case has 0 rows: merged, rows 0 wrote a worst case that failed the report's schema
  // (found by fuzz_shard_merge).
  c = s0;
  c.at("shard_items").at(0)["rows"] = 0;
  refused(c, s1, "rows 0 is not a case's extent");
  // (d) a shard index of 2^32 was narrowed to int: shard 0 (issue 48, low).
  nlohmann::json d = s0;
  d.at("run").at("shard")["index"] = int64_t{1} << 32;
  refused(d, s1, "malformed run.shard");
  // (e) an error statistic no run can produce: max_ulp (bytes 144..151, after the 18 counts) of -1.0
  // (00 .. 00 f0 bf; byte 152 zeroed). Merged, it once wrote a report that failed its own schema
  // (found by fuzz_shard_merge as -7.9e77).
  nlohmann::json e = s0;
  std::string& acc_e = e.at("shard_items").at(0).at("partials").at(0).at("acc").get_ref<std::string&>();
  acc_e.replace(192, 12, "AAAAAAAA8L8A");
  refused(e, s1, "impossible errors");
  // (f) a worst element at index 2^62 (its first 8 bytes; byte 8 zeroed): outside every case,
  // merged it wrote element.col < 0, which the schema refuses (found by fuzz_shard_merge).
  nlohmann::json f = s0;
  f.at("shard_items").at(0).at("partials").at(0).at("worst").get_ref<std::string&>().replace(0, 12, "AAAAAAAAAEAA");
  refused(f, s1, "a worst element outside its case");
}

TEST(Shards, TheGnuParallelRecipeAsDocumentedEqualsTheUnshardedRun) {
  if (!fs::exists("/usr/bin/parallel")) GTEST_SKIP() << "GNU parallel is not installed (scripts/setup.sh installs Debian's parallel)";
  const fs::path root = scratch() / "parallel_recipe", out = root / "shards";
  fs::create_directories(out);
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  const std::string recipe = doc_block_after("docs/nightly.md", "### With GNU parallel on one machine");
  ASSERT_NE(recipe.find("parallel -j"), std::string::npos) << recipe;
  std::ofstream(root / "recipe.sh") << recipe;
  // The unsharded run writes where the merged report will be (replay commands name it), then moves aside.
  ASSERT_EQ(run_shell("cd " + root.string() + " && build/normcheck run --suite quick --threads 2 --quiet --out shards/merged.json").exit_code, 0);
  fs::rename(out / "merged.json", root / "single.json");
  const auto started = std::chrono::steady_clock::now();
  const Outcome o = run_shell("cd " + root.string() + " && SUITE=quick OUT=shards bash recipe.sh");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  std::printf("GNU parallel recipe, quick suite, 4 shards: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fs::exists(out / ("s" + std::to_string(i) + ".json"))) << i;
  const nlohmann::json a = without_run_metadata(load(root / "single.json")), b = without_run_metadata(load(out / "merged.json"));
  EXPECT_EQ(first_difference(a, b), "");
  EXPECT_EQ(load(out / "merged.json")["run"]["merged_from"].size(), 4u);
}

TEST(Shards, MergeAndDiffRefuseShardsThatAreNotOneRun) {
  const fs::path dir = scratch() / "bad_shards";
  fs::create_directories(dir);
  const std::string opts = "run --quiet --suite quick --ops layernorm_forward --dtypes f32 --kernels two_pass ";
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(run_cli(opts + "--shard " + std::to_string(i) + "/2 --out " + (dir / ("s" + std::to_string(i) + ".json")).string()).exit_code, 0);
  ASSERT_EQ(run_cli(opts + "--seed 7 --shard 1/2 --out " + (dir / "seed7.json").string()).exit_code, 0);
  ASSERT_EQ(run_cli(opts + "--out " + (dir / "whole.json").string()).exit_code, 0);
  std::ofstream(dir / "garbage.json") << "{ not json";
  const auto s = [&](const char* name) { return (dir / name).string() + " "; };
  const auto refused = [&](const std::string& args, const char* why) {
    const Outcome o = run_cli("merge " + args + "--out " + (dir / "m.json").string());
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_NE(o.err.find(why), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  };
  refused(s("s0.json"), "every shard of the run");                     // one shard of two missing
  refused(s("s0.json") + s("s0.json"), "missing or given twice");
  refused(s("s0.json") + s("seed7.json"), "configuration");
  refused(s("whole.json"), "not a shard report");
  refused(s("s0.json") + s("garbage.json"), "not valid JSON");
  EXPECT_FALSE(fs::exists(dir / "m.json"));
  const Outcome over = run_cli("merge " + s("s0.json") + s("s1.json") + "--out " + (dir / "s0.json").string());
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.err.find("would overwrite the shard report"), std::string::npos) << over.err;
  EXPECT_EQ(load(dir / "s0.json")["run"]["shard"]["index"], 0);  // untouched
  EXPECT_EQ(run_cli("merge " + s("s1.json") + s("s0.json") + "--out " + (dir / "m.json").string()).exit_code, 0);
  for (const char* bad : {"2/2", "0/0", "a/b", "1", "-1/2", "1/2/3"})
    EXPECT_EQ(run_cli(opts + "--shard " + bad + " --out " + (dir / "x.json").string()).exit_code, 2) << bad;
  // A shard holds a slice of the records: diff refuses it rather than calling the rest "removed".
  const Outcome d = run_cli("diff " + s("whole.json") + s("s0.json"));
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("merge the shards first"), std::string::npos) << d.err;
}

TEST(Shards, PortHamiltonianCasesSpreadOverShardsFoldAgainBitForBit) {
  // The port-Hamiltonian section is cut into one unit per case: records of a dtype span shards, and
  // merge folds their cases again in case order (accumulators, worst seed, maxima).
  const fs::path dir = scratch() / "ph_shards", merged = dir / "report.json", single = dir / "single.json";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string opts = "run --quiet --suite default --ops port_hamiltonian --dtypes f16,f32 ";
  ASSERT_LE(run_cli(opts + "--threads 2 --out " + single.string()).exit_code, 1);
  std::string shards;
  std::map<std::string, std::set<int>> shards_of_dtype;
  for (int i = 0; i < 4; ++i) {
    const fs::path s = dir / ("s" + std::to_string(i) + ".json");
    ASSERT_LE(run_cli(opts + "--threads 1 --shard " + std::to_string(i) + "/4 --out " + s.string()).exit_code, 1);
    const nlohmann::json shard = load(s);  // not a range-for over a temporary's member: that dangles
    for (const auto& c : shard.at("port_hamiltonian").at("shard_cases")) shards_of_dtype[c.at("storage").get<std::string>()].insert(i);
    shards += s.string() + " ";
  }
  EXPECT_GT(shards_of_dtype["f16"].size() + shards_of_dtype["f32"].size(), 2u);  // some dtype's cases ran on two shards
  const Outcome m = run_cli("merge " + shards + "--out " + merged.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const nlohmann::json a = load(single), b = load(merged);
  EXPECT_EQ(first_difference(a.at("port_hamiltonian"), b.at("port_hamiltonian")), "");
  EXPECT_FALSE(b.at("port_hamiltonian").contains("shard_cases"));
  EXPECT_EQ(a.at("port_hamiltonian").at("cases_done"), 6);
}

TEST(Shards, MeasuredUnitSecondsBalanceTheShardsAndEveryShardMustBalanceAlike) {
  const fs::path dir = scratch() / "measured_balance", merged = dir / "report.json", single = dir / "single.json";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_LE(run_cli(kSmallRun + "--threads 2 --out " + merged.string()).exit_code, 1);
  fs::rename(merged, single);
  const nlohmann::json seconds = load(single).at("run").at("unit_seconds");
  ASSERT_GT(seconds.size(), 100u);
  for (const auto& s : seconds) ASSERT_TRUE(s.is_number()) << "an unsharded run measures every unit";
  std::string shards;
  std::set<std::string> digests;
  for (int i = 0; i < 3; ++i) {
    const fs::path s = dir / ("s" + std::to_string(i) + ".json");
    const Outcome o = run_cli(kSmallRun + "--threads 1 --shard " + std::to_string(i) + "/3 --balance-from " + single.string() + " --out " + s.string());
    ASSERT_LE(o.exit_code, 1) << o.err;
    EXPECT_EQ(load(s).at("run").at("shard").at("balanced_by"), "measured");
    digests.insert(load(s).at("run").at("shard").at("owner_digest").get<std::string>());
    shards += s.string() + " ";
  }
  EXPECT_EQ(digests.size(), 1u);
  const Outcome m = run_cli("merge " + shards + "--out " + merged.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(first_difference(without_run_metadata(load(single)), without_run_metadata(load(merged))), "");
  const nlohmann::json merged_seconds = load(merged).at("run").at("unit_seconds");
  ASSERT_EQ(merged_seconds.size(), seconds.size());
  for (const auto& s : merged_seconds) EXPECT_TRUE(s.is_number()) << "every unit ran on exactly one shard";
  // A shard balanced by the estimates assigns the units differently: merge refuses the mixture.
  const fs::path estimated = dir / "estimated1.json";
  ASSERT_LE(run_cli(kSmallRun + "--threads 1 --shard 1/3 --out " + estimated.string()).exit_code, 1);
  EXPECT_EQ(load(estimated).at("run").at("shard").at("balanced_by"), "estimates");
  ASSERT_NE(load(estimated).at("run").at("shard").at("owner_digest"), *digests.begin());
  const Outcome mixed = run_cli("merge " + (dir / "s0.json").string() + " " + estimated.string() + " " + (dir / "s2.json").string() +
                                " --out " + (dir / "mixed.json").string());
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("assigns the shard units differently"), std::string::npos) << mixed.err;
  // Bad --balance-from: another selection, no shard, not a report: one error line, exit 2.
  const fs::path other = dir / "other.json";
  ASSERT_LE(run_cli("run --quiet --suite quick --dtypes f32 --ops layernorm_forward --out " + other.string()).exit_code, 1);
  std::ofstream(dir / "garbage.json") << "{ not json";
  std::ofstream(dir / "tool_number.json") << R"({"tool": 3, "run": {}})";
  nlohmann::json interrupted = load(single);
  interrupted["run"]["complete"] = false;
  std::ofstream(dir / "interrupted.json") << interrupted.dump();
  const auto refused = [&](const std::string& args, const char* why) {
    const Outcome o = run_cli(kSmallRun + args + " --out " + (dir / "x.json").string());
    EXPECT_EQ(o.exit_code, 2) << args;
    EXPECT_NE(o.err.find(why), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  };
  refused("--shard 0/3 --balance-from " + other.string(), "this run has");
  refused("--balance-from " + single.string(), "needs --shard");
  refused("--shard 0/3 --balance-from " + (dir / "garbage.json").string(), "garbage.json");
  refused("--shard 0/3 --balance-from " + (dir / "absent.json").string(), "cannot open");
  refused("--shard 0/3 --balance-from " + (dir / "tool_number.json").string(), "not a normcheck report");
  refused("--shard 0/3 --balance-from " + (dir / "interrupted.json").string(), "interrupted run");
  EXPECT_FALSE(fs::exists(dir / "x.json"));
}

TEST(Shards, TheCommittedBaselinesCarryTheUnitSecondsTheirSuitesShardsBalanceBy) {
  // docs/nightly.md's --balance-from command as printed (from the source folder, its report written
  // to scratch), and the quick suite's baseline likewise: a baseline remade after the units changed
  // fails here, as diff against it does.
  std::ifstream doc(std::string(NORMCHECK_SOURCE_DIR) + "/docs/nightly.md");
  std::string command;
  for (std::string line; std::getline(doc, line);)
    if (line.find("--balance-from reports/baseline/nightly.json") != std::string::npos) command = line.substr(line.find("./build/normcheck"));
  ASSERT_FALSE(command.empty());
  const fs::path out = scratch() / "baseline_balanced";
  fs::remove_all(out);
  fs::create_directories(out);
  command.replace(command.find("--out s3.json"), 13, "--quiet --out " + (out / "s3.json").string());
  command.replace(0, std::string("./build/normcheck").size(), NORMCHECK_BINARY);
  for (const std::string& c : {command, std::string(NORMCHECK_BINARY) + " run --quiet --suite quick --shard 1/4 --balance-from reports/baseline/quick.json --out " +
                                            (out / "q1.json").string()}) {
    const Outcome o = run_shell("cd " + std::string(NORMCHECK_SOURCE_DIR) + " && " + c);
    EXPECT_LE(o.exit_code, 1) << c << "\n" << o.err;
  }
  EXPECT_EQ(load(out / "s3.json").at("run").at("shard").at("balanced_by"), "measured");
  EXPECT_EQ(load(out / "q1.json").at("run").at("shard").at("balanced_by"), "measured");
}

TEST(Shards, TheBalanceScriptRunsEveryShardAndReportsTheRatioByEstimatesAndByMeasuredSeconds) {
  // docs/nightly.md's shard_balance.py command, on the quick suite with 3 shards (times are printed,
  // not asserted: the ratio is a measurement of this machine).
  const fs::path dir = scratch() / "balance_script";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string script = "/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/shard_balance.py --suite quick --shards 3 --binary " +
                             std::string(NORMCHECK_BINARY);
  ASSERT_LE(run_cli("run --quiet --suite quick --threads 2 --out " + (dir / "quick.json").string()).exit_code, 1);
  // The measured balance runs every shard twice (--repeats 2: the least time counts).
  for (const std::string& balance : {std::string(), " --repeats 2 --balance-from " + (dir / "quick.json").string()}) {
    const Outcome o = run_shell("cd / && " + script + balance + " --json " + (dir / "b.json").string());
    ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
    const nlohmann::json by = load(dir / "b.json").at("rows").at(0).at("balanced_by");
    EXPECT_EQ(by, nlohmann::json::array({balance.empty() ? "estimates" : "measured"})) << balance;
    std::printf("%s", o.out.c_str());
    EXPECT_NE(o.out.find("| 3 | "), std::string::npos) << o.out;
    const nlohmann::json row = load(dir / "b.json").at("rows").at(0);
    ASSERT_EQ(row.at("cpu_seconds").size(), 3u);
    for (const auto& cpu : row.at("cpu_seconds")) EXPECT_GT(cpu.get<double>(), 0.0);  // every shard process was timed
    EXPECT_GT(row.at("cases_min").get<int64_t>(), 0);
    EXPECT_EQ(load(dir / "b.json").at("repeats"), balance.empty() ? 1 : 2);
  }
  const Outcome bad = run_shell("cd / && " + script + " --balance-from " + (dir / "absent.json").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("cannot open"), std::string::npos) << bad.err;
}

/// scripts/nightly with an exec-protocol kernel: the same kernel name, once sound, once with the
/// one-pass variance planted.
Outcome nightly_with(const fs::path& baseline, const fs::path& outdir, const std::string& kernel_flags) {
  const std::string src = NORMCHECK_SOURCE_DIR;
  return run_shell("NORMCHECK=" + std::string(NORMCHECK_BINARY) + " " + src + "/scripts/nightly --baseline " + baseline.string() + " --outdir " + outdir.string() +
                     " --suite quick --threads 2 -- --exec \"/usr/bin/python3 " + src + "/scripts/exec_example.py " +
                     kernel_flags + " {dir}\" --exec-name numpy_ln --ops layernorm_forward --dtypes f32 --cases 2 "
                     "--generators normal,large_mean");
}

TEST(Nightly, CatchesARegressionPlantedInAKernelAndKeepsEverythingInADatedFolder) {
  const fs::path dir = scratch() / "nightly", base_dir = dir / "base", baseline = dir / "baseline.json";
  fs::create_directories(dir);
  const Outcome first = nightly_with(dir / "no_baseline.json", base_dir, "");
  EXPECT_EQ(first.exit_code, 2) << first.err;  // a missing baseline is bad input
  // The accepted baseline: a run of the sound kernel, made into a baseline by the script.
  const Outcome run = run_cli("run --quiet --suite quick --exec \"/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) +
                              "/scripts/exec_example.py {dir}\" --exec-name numpy_ln --ops layernorm_forward --dtypes f32 "
                              "--cases 2 --generators normal,large_mean --out " + (dir / "accepted.json").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(std::system(("/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/make_baseline.py " +
                         (dir / "accepted.json").string() + " " + baseline.string()).c_str()), 0);
  const Outcome same = nightly_with(baseline, dir / "same", "");
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  const Outcome planted = nightly_with(baseline, dir / "planted", "--one-pass");
  EXPECT_EQ(planted.exit_code, 1) << planted.out << planted.err;
  ASSERT_TRUE(fs::exists(dir / "planted"));
  fs::path dated;  // the dated folder (history.sqlite lies beside it)
  for (const auto& e : fs::directory_iterator(dir / "planted"))
    if (e.is_directory()) dated = e.path();
  ASSERT_FALSE(dated.empty());
  EXPECT_EQ(dated.filename().string().size(), std::string("2026-11-30T101010Z").size()) << dated;
  for (const char* f : {"baseline.json", "report.json", "diff.json", "diff.txt"}) EXPECT_TRUE(fs::exists(dated / f)) << f;
  const auto diff = load(dated / "diff.json");
  EXPECT_GE(diff["counts"]["new_failure"].get<int>() + diff["counts"]["regression"].get<int>(), 1) << diff.dump();
  EXPECT_NE(slurp(dated / "diff.txt").find("numpy_ln"), std::string::npos);
  EXPECT_NE(slurp(dated / "diff.txt").find("large_mean"), std::string::npos);
  // Each night went into the history of its outdir, and the HTML shows the trends (issue 21 item 3).
  EXPECT_TRUE(fs::exists(dir / "planted" / "history.sqlite"));
  const Outcome history = run_cli("history show --db " + (dir / "planted" / "history.sqlite").string());
  EXPECT_EQ(history.exit_code, 0) << history.err;
  EXPECT_EQ(std::count(history.out.begin(), history.out.end(), '\n'), 2) << history.out;  // header and one run
  EXPECT_NE(history.out.find("numpy_ln"), std::string::npos) << history.out;  // the kernel that night judged
  EXPECT_NE(slurp(dated / "report.html").find("id=\"trends\""), std::string::npos);
}

TEST(Interruption, CtrlCWritesAValidIncompleteReportThatKeepsEveryFailureFoundSoFar) {
  const fs::path report = scratch() / "ctrl_c.json", journal = scratch() / "ctrl_c.json.failures.jsonl";
  // A known-weak kernel on the input that breaks it: nearly every case fails; SIGINT after 4 s.
  const std::string cmd = "timeout --preserve-status -s INT 4 " + std::string(NORMCHECK_BINARY) +
                          " run --quiet --ops layernorm_forward --kernels one_pass --dtypes f32 --generators large_mean "
                          "--cases 100000 --max-elements 4096 --threads 2 --out " + report.string() + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);  // a report was written and says FAILED, not a crash
  ASSERT_TRUE(fs::exists(report));
  const auto j = load(report);
  EXPECT_FALSE(j["run"]["complete"].get<bool>());
  EXPECT_FALSE(j["run"]["passed"].get<bool>());
  const int64_t done = j["run"]["cases_done"].get<int64_t>();
  EXPECT_GT(done, 0);
  EXPECT_LT(done, j["run"]["cases_planned"].get<int64_t>());
  int64_t failed = 0, cases = 0;
  for (const auto& r : j["records"]) failed += r["failed_cases"].get<int64_t>(), cases = std::max(cases, r["cases"].get<int64_t>());
  EXPECT_EQ(cases, done);  // every finished case reached the records
  EXPECT_GT(failed, 0);
  // Every failing judgement is in the journal. A known-weak kernel's expected failures carry
  // generator, seed and digest, not the inputs: they regenerate to the digest (nothing is lost).
  ASSERT_TRUE(fs::exists(journal));
  const std::string lines = slurp(journal);
  EXPECT_GE(std::count(lines.begin(), lines.end(), '\n'), failed);
  const auto first = nlohmann::json::parse(lines.substr(0, lines.find('\n')));
  const auto& c = first.at("case");
  EXPECT_FALSE(c.at("inputs_inline").get<bool>());
  EXPECT_FALSE(c.contains("x"));
  normcheck::gen::ShapeRequest shape;
  shape.max_elements = 4096;
  const normcheck::LayerNormCase again = normcheck::gen::make_layernorm_case(
      c.at("generator").get<std::string>(), normcheck::DType::f32, std::stoull(c.at("case_seed").get<std::string>()), shape);
  EXPECT_EQ(std::to_string(normcheck::case_digest(again)), c.at("digest").get<std::string>());
  const std::string schema = std::string(NORMCHECK_SOURCE_DIR) + "/reports/schema/report.v1.schema.json";
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0) GTEST_SKIP() << "python3-jsonschema absent";
  EXPECT_EQ(std::system(("/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                         "json.load(open(sys.argv[2])))\" " + report.string() + " " + schema).c_str()), 0);
}

}  // namespace

namespace {

TEST(Nightly, AQuickRunDiffsCleanAgainstTheCommittedQuickBaseline) {
  // Issue 21 item 4: a quick run compares with a committed baseline out of the box (it used to stop at
  // "suite differs" against the nightly one). A suite change bumps the suite version: then this test
  // says so, and the baseline is remade with scripts/make_baseline.py (docs/nightly.md).
  const fs::path baseline = fs::path(NORMCHECK_SOURCE_DIR) / "reports/baseline/quick.json", now = scratch() / "quick_now.json";
  ASSERT_EQ(run_cli("run --suite quick --threads 2 -q --out " + now.string()).exit_code, 0);
  const Outcome d = run_cli("diff " + baseline.string() + " " + now.string() + " --out " + (scratch() / "quick_diff.json").string());
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  const auto counts = load(scratch() / "quick_diff.json").at("counts");
  EXPECT_EQ(counts.at("new_failure"), 0);
  EXPECT_EQ(counts.at("regression"), 0);
  EXPECT_EQ(counts.at("removed"), 0);
  EXPECT_GT(counts.at("unchanged").get<int64_t>(), 2000);
  // And it is the quick suite's baseline: diffing it against the nightly one is refused.
  const Outcome other = run_cli("diff " + (fs::path(NORMCHECK_SOURCE_DIR) / "reports/baseline/nightly.json").string() + " " + now.string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("suite differs"), std::string::npos) << other.err;
}

}  // namespace

TEST(Shards, TheBalanceReadsEveryCaseShapeWithoutGeneratingItAndGetsTheRunsShape) {
  // The shard balance estimates each per-op case's cost from its shape; the shape read without
  // generating the values is the shape the run judges, for every case of the default suite.
  const normcheck::RunConfig cfg = *normcheck::suite_config("default");
  int64_t checked = 0;
  for (const normcheck::WorkItem& w : normcheck::per_op_items(cfg)) {
    const normcheck::LayerNormCase c = normcheck::suite_case(cfg, w);
    EXPECT_EQ(normcheck::suite_case_shape(cfg, w), std::make_pair(c.rows, c.n)) << cfg.generators[w.generator_index] << " case " << w.case_index;
    ++checked;
  }
  EXPECT_EQ(checked, normcheck::planned_cases(cfg));
}
