#include "nightly/merge.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "report/report.hpp"
#include "suite/runner.hpp"

namespace normcheck::nightly {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(why); }

int64_t cases_of(const json& record) { return record.value("cases", int64_t{0}); }

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
    if (!shard.contains("index") || !shard.at("index").is_number_integer() || !shard.contains("count") ||
        !shard.at("count").is_number_integer())
      refuse("'" + s.path + "' has a malformed run.shard (index and count must be integers)");
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
    for (const auto& [key, value] : r.items())
      if (value.is_object() && value.contains("config") &&
          (!first.contains(key) || !first.at(key).is_object() || first.at(key).value("config", json()) != value.at("config")))
        refuse("section '" + key + "' of '" + shards[i].path + "' has another configuration than shard 0");
  }
}

/// The replay command of a merged record points at the merged report.
void repoint_replay(json& record, const std::string& shard_path, const std::string& out_path) {
  if (!record.contains("worst_case") || !record["worst_case"].is_object()) return;
  json& wc = record["worst_case"];
  if (!wc.contains("replay")) return;
  std::string cmd = wc["replay"].get<std::string>();
  const std::string from = "--report " + shard_path + " ", to = "--report " + out_path + " ";
  if (const auto at = cmd.find(from); at != std::string::npos) cmd.replace(at, from.size(), to);
  wc["replay"] = cmd;
}

/// Records planned identically by every shard: each comes from the one shard that ran it.
json pick_records(const std::vector<const json*>& sections, const std::vector<ShardReport>& shards, const std::string& out_path) {
  const json& base = *sections.front();
  for (size_t s = 0; s < sections.size(); ++s)
    if (sections[s] == nullptr || !sections[s]->is_array() || sections[s]->size() != base.size())
      refuse("'" + shards[s].path + "' plans other records than shard 0");
  json out = json::array();
  for (size_t i = 0; i < base.size(); ++i) {
    size_t from = 0;
    int ran = 0;
    for (size_t s = 0; s < sections.size(); ++s)
      if (cases_of(sections[s]->at(i)) > 0) from = s, ++ran;
    if (ran > 1) refuse("record " + std::to_string(i) + " was run by more than one shard");
    json r = (*sections[from])[i];
    repoint_replay(r, shards[from].path, out_path);
    out.push_back(std::move(r));
  }
  return out;
}

/// Rows aggregated per dtype (comparisons) come from the shard that ran the dtype.
json pick_dtype_rows(const std::vector<const json*>& sections, const std::string& row_key, const std::string& dtype_key) {
  json out = json::array();
  const json& base = sections.front()->at(row_key);
  for (const json* s : sections)
    if (!s->at(row_key).is_array() || s->at(row_key).size() != base.size()) refuse("a shard has other " + row_key + " rows than shard 0");
  for (size_t i = 0; i < base.size(); ++i) {
    const std::string dt = base.at(i).value(dtype_key, "");
    size_t from = 0;
    for (size_t s = 0; s < sections.size(); ++s)
      for (const json& rec : sections[s]->at("records"))
        if (rec.value("storage", "") == dt && cases_of(rec) > 0) from = s;
    out.push_back(sections[from]->at(row_key).at(i));
  }
  return out;
}

std::vector<DType> dtypes_of(const json& config) {
  std::vector<DType> out;
  for (const json& d : config.at("dtypes")) {
    const auto dt = parse_dtype(d.get<std::string>());
    if (!dt) refuse("unknown dtype '" + d.get<std::string>() + "' in a report configuration");
    out.push_back(*dt);
  }
  return out;
}

/// Flag checks span the generators of a dtype: recomputed from the merged records.
std::vector<FlagCheck> recompute_flags(const json& records, const std::vector<DType>& dtypes) {
  std::vector<std::string> generators;  // FlagView holds views: keep the strings alive
  generators.reserve(records.size());
  std::vector<FlagView> views;
  for (const json& r : records) {
    const std::string prop = r.value("property", "");
    generators.push_back(prop.substr(prop.find('/') + 1));
    const auto dt = parse_dtype(r.value("storage", ""));
    if (!dt) refuse("a record has an unknown storage dtype");
    views.push_back({r.at("variant").get_ref<const std::string&>(), *dt, generators.back(), cases_of(r), r.value("failed_cases", int64_t{0}) > 0});
  }
  return evaluate_flags(dtypes, views);
}

bool all_caught(const std::vector<FlagCheck>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](const FlagCheck& f) { return f.caught(); });
}

template <class Get>
int64_t sum_over(const std::vector<const json*>& sections, Get get) {
  int64_t n = 0;
  for (const json* s : sections) n += get(*s);
  return n;
}

bool all_true(const std::vector<const json*>& sections, const char* key) {
  return std::all_of(sections.begin(), sections.end(), [&](const json* s) { return (*s).value(key, false); });
}

/// A dtype-sliced suite section (rms_block, qr_contraction): records, comparison and counts.
json merge_suite_section(const std::vector<const json*>& sections, const std::vector<ShardReport>& shards,
                         const std::string& out_path, bool has_flags) {
  json m = *sections.front();
  std::vector<const json*> records;
  for (const json* s : sections) records.push_back(&s->at("records"));
  m["records"] = pick_records(records, shards, out_path);
  m["comparison"] = pick_dtype_rows(sections, "comparison", "dtype");
  m["cases_planned"] = sum_over(sections, [](const json& s) { return s.value("cases_planned", int64_t{0}); });
  m["cases_done"] = sum_over(sections, [](const json& s) { return s.value("cases_done", int64_t{0}); });
  const bool complete = m["cases_planned"] == m["cases_done"];
  if (has_flags) {
    const std::vector<FlagCheck> flags = recompute_flags(m["records"], dtypes_of(m["config"]));
    m["flag_checks"] = flag_checks_json(flags);
    m["records_passed"] = all_true(sections, "records_passed");
    m["passed"] = m["records_passed"].get<bool>() && all_caught(flags) && complete;
  } else {
    m["passed"] = all_true(sections, "passed");
  }
  return m;
}

/// Records created as cases arrive (grouped_norm, port_hamiltonian): concatenated in dtype order.
json merge_dtype_ordered(const std::vector<const json*>& sections) {
  json m = *sections.front();
  const std::vector<DType> dtypes = dtypes_of(m["config"]);
  std::vector<std::pair<size_t, json>> records;  // (dtype position, record)
  for (const json* s : sections)
    for (const json& r : s->at("records")) {
      const auto dt = parse_dtype(r.value("storage", ""));
      if (!dt) refuse("a record has an unknown storage dtype '" + r.value("storage", "") + "'");
      records.emplace_back(dtype_position(dtypes, *dt), r);
    }
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json merged = json::array();
  for (auto& [pos, r] : records) merged.push_back(std::move(r));
  m["records"] = merged;
  m["cases_planned"] = sum_over(sections, [](const json& s) { return s.value("cases_planned", int64_t{0}); });
  m["cases_done"] = sum_over(sections, [](const json& s) { return s.value("cases_done", int64_t{0}); });
  m["passed"] = all_true(sections, "passed");
  return m;
}

/// A section one shard runs whole (axis_audit): taken from that shard.
json pick_whole(const std::vector<const json*>& sections, const std::string& name) {
  json out;
  for (const json* s : sections)
    if (!s->is_null()) {
      if (!out.is_null()) refuse("section '" + name + "' was run by more than one shard");
      out = *s;
    }
  return out;
}

}  // namespace

json merge_shards(std::vector<ShardReport> shards, const std::string& out_path) {
  check_and_sort(shards);
  json m = shards.front().report;
  const auto section = [&](const std::string& key) {
    std::vector<const json*> out;
    for (const ShardReport& s : shards) out.push_back(s.report.contains(key) ? &s.report.at(key) : nullptr);
    return out;
  };
  // The per-op section (top-level records).
  std::vector<const json*> top;
  for (const ShardReport& s : shards) top.push_back(&s.report);
  for (const ShardReport& s : shards)
    if (!s.report.contains("records") || !s.report["records"].is_array()) refuse("'" + s.path + "' has no records array");
  m["records"] = pick_records(section("records"), shards, out_path);
  const std::vector<FlagCheck> flags = recompute_flags(m["records"], dtypes_of(m["config"]));
  m["flag_checks"] = flag_checks_json(flags);
  m["records_passed"] = all_true(top, "records_passed");
  json& run = m["run"];
  run["cases_planned"] = sum_over(top, [](const json& r) { return r.at("run").value("cases_planned", int64_t{0}); });
  run["cases_done"] = sum_over(top, [](const json& r) { return r.at("run").value("cases_done", int64_t{0}); });
  bool passed = m["records_passed"].get<bool>() && all_caught(flags) && run["cases_planned"] == run["cases_done"];
  bool complete = true;
  for (const ShardReport& s : shards) {
    const json& sr = s.report.at("run");
    complete = complete && sr.value("complete", false);
    run["start_time"] = std::min(run.value("start_time", ""), sr.value("start_time", ""));
    run["end_time"] = std::max(run.value("end_time", ""), sr.value("end_time", ""));
    if (run.contains("oracle") && sr.contains("oracle")) {
      json& bits = run["oracle"]["max_precision_bits_used"];
      bits = std::max(bits.is_number() ? bits.get<int>() : 0, sr.at("oracle").value("max_precision_bits_used", 0));
    }
  }
  std::set<std::string> keys;  // sections present in any shard (a shard interrupted early has them null)
  for (const ShardReport& s : shards)
    for (const auto& [key, value] : s.report.items())
      if (value.is_object() && key != "run" && key != "config") keys.insert(key);
  for (const std::string& key : keys) {
    const std::vector<const json*> parts = section(key);
    for (size_t s = 0; s < parts.size(); ++s)
      if (key != "axis_audit" && (parts[s] == nullptr || parts[s]->is_null()))
        refuse("section '" + key + "' is missing from '" + shards[s].path + "' (interrupted before it): rerun that shard");
    if (key == "rms_block") m[key] = merge_suite_section(parts, shards, out_path, true);
    else if (key == "qr_contraction") m[key] = merge_suite_section(parts, shards, out_path, false);
    else if (key == "grouped_norm") m[key] = merge_dtype_ordered(parts);
    else if (key == "port_hamiltonian" && parts.front()->value("growth", json()).is_null()) m[key] = merge_dtype_ordered(parts);
    else if (key == "axis_audit") m[key] = pick_whole(parts, key);
    else refuse("cannot merge report section '" + key + "'");
  }
  for (const std::string& key : keys) passed = passed && m[key].value("passed", false);
  run["complete"] = complete;
  run["passed"] = passed && complete;
  run["shard"] = nullptr;
  json from = json::array();
  for (const ShardReport& s : shards) from.push_back(s.path);
  run["merged_from"] = from;
  return m;
}

}  // namespace normcheck::nightly
