// The worst-case search of the port-Hamiltonian norm budget (issue 20): its committed corpus
// (properties/corpus/budget_worst.json, written by `normcheck search-budget`) replays exactly and
// holds, a planted step kernel fails on it, and the search is reproducible and climbs.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "suite/budget_search.hpp"

using namespace normcheck;

namespace {

nlohmann::json committed_corpus() {
  std::ifstream f(std::string(NORMCHECK_SOURCE_DIR) + "/properties/corpus/budget_worst.json");
  return nlohmann::json::parse(f);
}

}  // namespace

TEST(BudgetSearch, TheCommittedWorstCasesReplayExactlyAndTheBudgetHolds) {
  const nlohmann::json corpus = committed_corpus();
  ASSERT_EQ(corpus.at("format"), "normcheck-budget-corpus-v1");
  ASSERT_GE(corpus.at("entries").size(), 8u);  // tightness and slack in four dtypes
  for (const auto& e : corpus.at("entries")) {
    const PhCase c = budget_case_of_entry(e);
    const BudgetCaseResult r = run_budget_case(c);  // the full case: every check, the explicit inverse and entrywise judging too
    const BudgetObjectives v = budget_objectives(r);
    const std::string what = e.at("dtype").get<std::string>() + " " + e.at("objective").get<std::string>();
    EXPECT_FALSE(r.failed()) << what;
    EXPECT_LE(v.tightness, 1.0) << what;  // ||x^_t|| <= B^_t at every step: the floating-point budget holds
    EXPECT_EQ(v.tightness, e.at("tightness").get<double>()) << what;  // deterministic: the recorded values exactly
    EXPECT_EQ(v.slack, e.at("slack").get<double>()) << what;
    EXPECT_FALSE(e.at("failed").get<bool>()) << what;
  }
}

TEST(BudgetSearch, APlantedResidualLeakFailsOnTheWorstCases) {
  // The stream kernel that adds x_t back (x_{t+1} = Lambda C x_t + h B u_t + x_t: a residual path the
  // budget does not allow) breaks the budget on the tightest cases of every dtype.
  int failed = 0, tight = 0;
  const nlohmann::json corpus = committed_corpus();
  for (const auto& e : corpus.at("entries")) {
    if (e.at("objective").get<std::string>() != "tightness") continue;
    ++tight;
    BudgetCaseOptions o;
    o.step = "ph_step_residual_leak";
    failed += run_budget_case(budget_case_of_entry(e), o).failed();
  }
  EXPECT_EQ(tight, 4);
  EXPECT_EQ(failed, tight);
}

TEST(BudgetSearch, TheSearchIsReproducibleAndClimbs) {
  const BudgetSearchConfig cfg{DType::f32, 6, 8, 0.25, 7, 2, 25, "tightness"};
  const BudgetSearchResult a = search_budget_worst_case(cfg), b = search_budget_worst_case(cfg);
  EXPECT_EQ(a.best.x0, b.best.x0);
  EXPECT_EQ(a.best.u, b.best.u);
  EXPECT_EQ(a.value.tightness, b.value.tightness);
  EXPECT_EQ(a.evaluations, 2 * 26);
  EXPECT_GE(a.value.tightness, a.start_value);
  EXPECT_GT(a.value.tightness, 0.5);
  EXPECT_THROW(search_budget_worst_case({DType::f32, 6, 8, 0.25, 7, 2, 25, "loudness"}), std::invalid_argument);
}

TEST(BudgetSearch, AMalformedCorpusEntryIsRefused) {
  nlohmann::json e = committed_corpus().at("entries").at(0);
  e["u"].erase(0);
  EXPECT_THROW(budget_case_of_entry(e), std::invalid_argument);
  e = committed_corpus().at("entries").at(0);
  e["x0"][0] = "0x1.0000000000001p+0";  // not a value of the entry's dtype (f16)
  EXPECT_THROW(budget_case_of_entry(e), std::invalid_argument);
}

TEST(BudgetSearch, TheCommandInDocsWritesTheCommittedCorpus) {
  // docs/port-hamiltonian.md's command, run as printed from a scratch folder (its --out redirected
  // there and ./build/normcheck meaning this build): the corpus it writes is the committed one.
  const std::string doc_command =
      "./build/normcheck search-budget --dtypes f16,bf16,f32,f64 --restarts 4 --iterations 150 --out properties/corpus/budget_worst.json";
  std::ifstream d(std::string(NORMCHECK_SOURCE_DIR) + "/docs/port-hamiltonian.md");
  const std::string doc((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
  ASSERT_NE(doc.find(doc_command), std::string::npos) << "the documented command changed: update this test";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("nc_budget_search_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "build");
  std::filesystem::create_directories(dir / "properties/corpus");
  std::filesystem::create_symlink(NORMCHECK_BINARY, dir / "build/normcheck");
  const std::string shell = "cd '" + dir.string() + "' && " + doc_command + " > /dev/null";
  ASSERT_EQ(std::system(shell.c_str()), 0);
  std::ifstream f(dir / "properties/corpus/budget_worst.json");
  EXPECT_EQ(nlohmann::json::parse(f), committed_corpus());
  std::filesystem::remove_all(dir);
}
