// The Section interface (src/sections/section.hpp): one registry that run, merge, diff, render,
// suites and replay all read, so that a section is its own files plus one registration.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "properties/cli_harness.hpp"
#include "sections/section.hpp"

namespace {

using normcheck::sections::registry;
using normcheck::sections::Section;

nlohmann::json load(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

TEST(Sections, KeysOpsAndReplayOptionsAreUniqueAndFoundByName) {
  std::set<std::string> keys, ops, options;
  for (const Section* s : registry()) {
    EXPECT_TRUE(keys.insert(std::string(s->key())).second) << s->key();
    EXPECT_EQ(normcheck::sections::section_by_key(s->key()), s);
    EXPECT_FALSE(s->ops().empty()) << s->key();
    for (std::string_view op : s->ops()) {
      EXPECT_TRUE(ops.insert(std::string(op)).second) << op;
      EXPECT_EQ(normcheck::sections::section_by_op(op), s) << op;
    }
    if (!s->replay_option().empty()) {
      EXPECT_TRUE(options.insert(std::string(s->replay_option())).second) << s->replay_option();
    }
  }
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_EQ(normcheck::sections::section_by_key("no_such_section"), nullptr);
  EXPECT_EQ(normcheck::sections::section_by_op("no_such_op"), nullptr);
}

TEST(Sections, ARunReportHasEveryRegisteredSectionAndNothingElse) {
  const fs::path out = scratch() / "sections_run.json";
  const Outcome o = run_cli("run --suite quick --dtypes f32 --cases 1 --block-cases 1 --contraction-cases 1 --grouped-cases 1 --out " +
                            out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const nlohmann::json r = load(out);
  const std::set<std::string> header = {"schema_version", "tool", "run", "config", "records_passed", "flag_checks"};
  for (const auto& [key, value] : r.items()) {
    if (!header.count(key)) {
      EXPECT_NE(normcheck::sections::section_by_key(key), nullptr) << "report member '" << key << "' has no section";
    }
  }
  for (const Section* s : registry()) {
    EXPECT_NE(s->records(r), nullptr) << s->key() << ": a whole run writes every section";
    if (s->key() != "records") {
      EXPECT_TRUE(r.at(std::string(s->key())).is_object()) << s->key();
    }
  }
  // --ops narrows the run to one section: the others are null, and the report says so
  const fs::path one = scratch() / "sections_one.json";
  ASSERT_EQ(run_cli("run --suite quick --dtypes f32 --ops grouped_norm --grouped-cases 1 --out " + one.string()).exit_code, 0);
  const nlohmann::json g = load(one);
  for (const Section* s : registry()) {
    if (s->key() != "records") {
      EXPECT_EQ(g.at(std::string(s->key())).is_null(), s->key() != "grouped_norm") << s->key();
    }
  }
  EXPECT_TRUE(g.at("records").empty());
}

TEST(Sections, SuitesAndReplayListWhatTheRegistryHolds) {
  const Outcome suites = run_cli("suites --json");
  ASSERT_EQ(suites.exit_code, 0) << suites.err;
  const nlohmann::json all = nlohmann::json::parse(suites.out);
  for (const auto& suite : all) {
    // Every section a suite runs, in registry order: all of them, except in a suite of one family (llm).
    const auto& listed = suite.at("sections");
    if (suite.at("name") != "llm") {
      ASSERT_EQ(listed.size(), registry().size());
    }
    size_t next = 0;
    for (const auto& row : listed) {
      while (next < registry().size() && registry()[next]->key() != row.at("section").get<std::string>()) ++next;
      EXPECT_LT(next, registry().size()) << suite.at("name") << ": " << row.at("section") << " out of registry order";
      ++next;
    }
  }
  const Outcome replay = run_cli("replay --report nowhere.json");
  EXPECT_EQ(replay.exit_code, 2);
  for (const Section* s : registry()) {
    if (!s->replay_option().empty()) {
      EXPECT_NE(replay.err.find("--" + std::string(s->replay_option())), std::string::npos) << replay.err;
    }
  }
}

TEST(Sections, MergeRefusesAReportMemberNoSectionKnows) {
  const fs::path a = scratch() / "sections_s0.json", b = scratch() / "sections_s1.json";
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(run_cli("run --suite quick --dtypes f32 --ops axis_audit --shard " + std::to_string(i) + "/2 --out " + (i ? b : a).string()).exit_code, 0);
  nlohmann::json j = load(b);
  j["future_section"] = {{"records", nlohmann::json::array()}, {"passed", true}};
  std::ofstream(b) << j.dump();
  const Outcome o = run_cli("merge " + a.string() + " " + b.string() + " --out " + (scratch() / "sections_m.json").string());
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("cannot merge report section 'future_section'"), std::string::npos) << o.err;
}

}  // namespace
