// normcheck merge SHARD... --out REPORT: the shard reports of `run --shard i/N` combined into the
// report of the unsharded run (exit 0 passed, 1 failed or incomplete, 2 bad input).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/commands.hpp"
#include "report/schema_check.hpp"
#include "io/json_input.hpp"
#include "nightly/merge.hpp"
#include "report/ci_output.hpp"
#include "report/report.hpp"

namespace normcheck::cli {
namespace {

/// The shards' failure journals, appended into the merged report's journal.
void merge_journals(const std::vector<std::string>& shards, const std::string& out) {
  const std::string target = out + ".failures.jsonl";
  std::filesystem::remove(target);
  for (const std::string& s : shards) {
    std::ifstream in(s + ".failures.jsonl");
    if (!in) continue;
    std::ofstream(target, std::ios::app) << in.rdbuf();
  }
}

}  // namespace

int merge_command(const MergeOptions& o, const std::string& command_line) {
  nlohmann::json merged;
  try {
    std::vector<nightly::ShardReport> shards;
    for (const std::string& path : o.shards) {
      if (std::filesystem::exists(o.out) && std::filesystem::exists(path) && std::filesystem::equivalent(o.out, path))
        throw std::invalid_argument("--out '" + o.out + "' would overwrite the shard report '" + path + "'");
      shards.push_back({path, read_report_file(path)});
    }
    merged = nightly::merge_shards(std::move(shards), o.out);
    merged["run"]["command_line"] = command_line;
    write_json_atomically(o.out, merged);
  } catch (const std::exception& e) {
    std::string shards;
    for (const std::string& path : o.shards) shards += (shards.empty() ? "" : "' or '") + path;
    std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(shards, e).c_str());
    return kExitBadInput;
  }
  merge_journals(o.shards, o.out);
  const bool passed = merged["run"].value("passed", false);
  if (!o.quiet) std::fputs(failing_records_text(merged, o.verbose ? SIZE_MAX : kExplainedFailures).c_str(), stdout);
  std::printf("merged %zu shards\n", o.shards.size());
  std::fputs(run_result_text(merged, o.out).c_str(), stdout);
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
