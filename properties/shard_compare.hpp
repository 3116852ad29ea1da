#pragma once
/// Comparing a merged sharded report with the unsharded run (the Shards, GNU parallel and Slurm tests).
#include <string>

#include <nlohmann/json.hpp>

namespace {

/// A report without what legitimately differs between runs (times, unit seconds, command line, threads, shard).
nlohmann::json without_run_metadata(nlohmann::json r) {
  for (const char* k : {"start_time", "end_time", "command_line", "threads", "shard", "merged_from", "unit_seconds"}) r["run"].erase(k);
  return r;
}

/// The first difference between two JSON values, as a path (empty: equal).
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& path = "") {
  if (a.type() != b.type()) return path + " (type)";
  if (a.is_object()) {
    for (const auto& [k, v] : a.items()) {
      if (!b.contains(k)) return path + "/" + k + " (missing)";
      if (auto d = first_difference(v, b[k], path + "/" + k); !d.empty()) return d;
    }
    return a.size() == b.size() ? "" : path + " (extra keys)";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return path + " (length)";
    for (size_t i = 0; i < a.size(); ++i)
      if (auto d = first_difference(a[i], b[i], path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    return "";
  }
  return a == b ? "" : path + ": " + a.dump() + " vs " + b.dump();
}

}  // namespace
