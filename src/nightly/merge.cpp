#include "nightly/merge.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "io/json_input.hpp"
#include "report/report.hpp"
#include "nightly/unit_costs.hpp"
#include "sections/section.hpp"
#include "suite/work_items.hpp"

namespace normcheck::nightly {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(why); }

/// Checks that the shards belong to one run and returns them in shard order.
void check_and_sort(std::vector<ShardReport>& shards) {
  if (shards.empty()) refuse("merge needs at least one shard report");
  for (const ShardReport& s : shards) {
    const json& r = s.report;
    if (!r.is_object() || r.value("tool", "") != "normcheck" || !r.contains("run") || !r.contains("config"))
      refuse("'" + s.path + "' is not a normcheck report");
    if (r.value("schema_version", "") != kReportSchemaVersion)
      refuse("'" + s.path + "' has schema version " + r.value("schema_version", "?") + ", expected " + kReportSchemaVersion);
    const json& shard = r.at("run").value("shard", json());
    if (!shard.is_object()) refuse("'" + s.path + "' is not a shard report (run without --shard)");
    if (!shard.contains("index") || !json_integer_in(shard.at("index"), 0, kMaxShards - 1) || !shard.contains("count") ||
        !json_integer_in(shard.at("count"), 1, kMaxShards))  // never narrowed: shard 4294967296 is not shard 0
      refuse("'" + s.path + "' has a malformed run.shard (index and count must be integers, 0 <= index < count <= " +
             std::to_string(kMaxShards) + ")");
    if (shard.value("count", 0) != static_cast<int>(shards.size()))
      refuse("'" + s.path + "' is shard " + std::to_string(shard.value("index", -1)) + " of " + std::to_string(shard.value("count", 0)) +
             ", but " + std::to_string(shards.size()) + " report(s) were given: merge needs every shard of the run");
  }
  std::sort(shards.begin(), shards.end(), [](const ShardReport& a, const ShardReport& b) {
    return a.report.at("run").at("shard").at("index").get<int>() < b.report.at("run").at("shard").at("index").get<int>();
  });
  const json& first = shards.front().report;
  for (size_t i = 0; i < shards.size(); ++i) {
    const json& r = shards[i].report;
    if (r.at("run").at("shard").at("index").get<int>() != static_cast<int>(i))
      refuse("shard " + std::to_string(i) + " of " + std::to_string(shards.size()) + " is missing or given twice");
    if (r.at("run").value("git_revision", "") != first.at("run").value("git_revision", ""))
      refuse("'" + shards[i].path + "' comes from another git revision (" + r.at("run").value("git_revision", "") + ")");
    if (r.at("config") != first.at("config")) refuse("'" + shards[i].path + "' has another configuration than shard 0");
    if (r.at("run").at("shard").value("owner_digest", json()) != first.at("run").at("shard").value("owner_digest", json()))
      refuse("'" + shards[i].path + "' assigns the shard units differently from shard 0 (give every shard the same --balance-from report, or none)");
    for (const auto& [key, value] : r.items())
      if (value.is_object() && value.contains("config") &&
          (!first.contains(key) || !first.at(key).is_object() || first.at(key).value("config", json()) != value.at("config")))
        refuse("section '" + key + "' of '" + shards[i].path + "' has another configuration than shard 0");
  }
}

}  // namespace

json merge_shards(std::vector<ShardReport> shards, const std::string& out_path) {
  check_and_sort(shards);
  json m = shards.front().report;
  std::set<std::string> present;  // sections present in any shard (a shard interrupted early has them null)
  for (const ShardReport& s : shards)
    for (const auto& [key, value] : s.report.items())
      if (value.is_object() && key != "run" && key != "config") present.insert(key);
  for (const std::string& key : present)
    if (sections::section_by_key(key) == nullptr) refuse("cannot merge report section '" + key + "'");
  bool passed = true;
  for (const sections::Section* s : sections::registry())
    if (s->key() == "records" || present.count(std::string(s->key())) > 0) passed = s->merge(shards, out_path, m) && passed;
  bool complete = true;
  json& run = m["run"];
  for (const ShardReport& s : shards) {
    const json& sr = s.report.at("run");
    complete = complete && sr.value("complete", false);
    run["start_time"] = std::min(run.value("start_time", ""), sr.value("start_time", ""));
    run["end_time"] = std::max(run.value("end_time", ""), sr.value("end_time", ""));
  }
  run["complete"] = complete;
  run["passed"] = passed && complete;
  std::vector<const json*> runs;
  for (const ShardReport& s : shards) runs.push_back(&s.report.at("run"));
  run["unit_seconds"] = merged_unit_seconds(runs);
  run["shard"] = nullptr;
  json from = json::array();
  for (const ShardReport& s : shards) from.push_back(s.path);
  run["merged_from"] = from;
  return m;
}

}  // namespace normcheck::nightly
