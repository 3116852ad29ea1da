// The Slurm job-array recipe of docs/nightly.md run for real (issue 21): a single-node cluster on this
// machine (scripts/slurm_local.sh), the documented sbatch file and submit/merge lines written out
// exactly as printed, the quick suite as a 4-task array, and the merged report equal to an unsharded
// run record for record. Skipped, saying why, only without root or without slurm-wlm and munge.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "shard_compare.hpp"

namespace {

/// Stops the cluster however the test ends.
struct LocalCluster {
  fs::path dir;
  ~LocalCluster() { run_shell("bash " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/slurm_local.sh stop " + dir.string()); }
};

TEST(Slurm, TheJobArrayRecipeAsDocumentedEqualsTheUnshardedRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "the local Slurm cluster needs root (slurmd runs jobs as their user)";
  for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"})
    if (!fs::exists(tool)) GTEST_SKIP() << tool << " is not installed (scripts/setup.sh installs Debian's slurm-wlm and munge)";
  const fs::path root = scratch() / "slurm_recipe", cluster = scratch() / "slurm_cluster";
  fs::create_directories(root / "shards");
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  LocalCluster stop_at_end{cluster};
  const Outcome started = run_shell("bash " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/slurm_local.sh start " + cluster.string());
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  const std::string conf = started.out.substr(0, started.out.find('\n'));
  ASSERT_EQ(conf.rfind("SLURM_CONF=", 0), 0u) << started.out;
  // The two documented blocks, as printed.
  const std::string sbatch_file = doc_block_after("docs/nightly.md", "`shards.sbatch`, one array task per shard:");
  const std::string submit = doc_block_after("docs/nightly.md", "submitted from the repository root, then merged");
  ASSERT_NE(sbatch_file.find("#SBATCH --job-name=normcheck-shards --array=0-3"), std::string::npos) << sbatch_file;
  ASSERT_NE(submit.find("sbatch --wait shards.sbatch"), std::string::npos) << submit;
  std::ofstream(root / "shards.sbatch") << sbatch_file;
  std::ofstream(root / "submit.sh") << submit;
  // The unsharded run writes where the merged report will be (replay commands name it), then moves aside.
  ASSERT_EQ(run_shell("cd " + root.string() + " && build/normcheck run --suite quick --threads 2 --quiet --out shards/merged.json").exit_code, 0);
  fs::rename(root / "shards/merged.json", root / "single.json");
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = run_shell("cd " + root.string() + " && env " + conf + " SUITE=quick OUT=shards timeout 600 bash submit.sh");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("Slurm job array (quick suite, 4 tasks, single node) submitted, run and merged in %.1f s\n", seconds);
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err << slurp(cluster / "slurmctld.log").substr(0, 3000);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(fs::exists(root / "shards" / ("s" + std::to_string(i) + ".json"))) << i;
  const nlohmann::json single = nlohmann::json::parse(slurp(root / "single.json"));
  const nlohmann::json merged = nlohmann::json::parse(slurp(root / "shards/merged.json"));
  EXPECT_EQ(first_difference(without_run_metadata(single), without_run_metadata(merged)), "");
  EXPECT_EQ(merged.at("run").at("merged_from").size(), 4u);
}

}  // namespace
