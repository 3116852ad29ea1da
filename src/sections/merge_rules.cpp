#include "sections/merge_rules.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/shell_quote.hpp"
#include "io/json_input.hpp"
#include "report/report.hpp"

namespace normcheck::nightly {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument(why); }

int64_t cases_of(const json& record) { return report_count(record, "cases"); }

/// The replay command of a merged record points at the merged report.
void repoint_replay(json& record, const std::string& shard_path, const std::string& out_path) {
  if (!record.contains("worst_case") || !record["worst_case"].is_object()) return;
  json& wc = record["worst_case"];
  if (!wc.contains("replay") || !wc["replay"].is_string()) return;
  std::string cmd = wc["replay"].get<std::string>();
  const std::string from = "--report " + shell_quote(shard_path) + " ", to = "--report " + shell_quote(out_path) + " ";
  if (const auto at = cmd.find(from); at != std::string::npos) cmd.replace(at, from.size(), to);
  wc["replay"] = cmd;
}

/// The replay command of a record that moved to position `index` of the merged section names it there.
void reindex_replay(json& record, size_t index) {
  if (!record.contains("worst_case") || !record["worst_case"].is_object()) return;
  json& wc = record["worst_case"];
  if (!wc.contains("replay") || !wc["replay"].is_string()) return;
  std::string cmd = wc["replay"].get<std::string>();
  const auto space = cmd.rfind(' ');
  if (space == std::string::npos) return;
  wc["replay"] = cmd.substr(0, space + 1) + std::to_string(index);
}

/// Rows aggregated per dtype (comparisons) come from the shard that ran the dtype.
json pick_dtype_rows(const std::vector<const json*>& parts, const std::string& row_key, const std::string& dtype_key) {
  json out = json::array();
  const json& base = parts.front()->at(row_key);
  for (const json* s : parts)
    if (!s->at(row_key).is_array() || s->at(row_key).size() != base.size()) refuse("a shard has other " + row_key + " rows than shard 0");
  for (size_t i = 0; i < base.size(); ++i) {
    const std::string dt = base.at(i).value(dtype_key, "");
    size_t from = 0;
    for (size_t s = 0; s < parts.size(); ++s)
      for (const json& rec : parts[s]->at("records"))
        if (rec.value("storage", "") == dt && cases_of(rec) > 0) from = s;
    out.push_back(parts[from]->at(row_key).at(i));
  }
  return out;
}

}  // namespace

std::vector<const json*> section_parts(const std::vector<ShardReport>& shards, const std::string& key) {
  std::vector<const json*> out;
  for (const ShardReport& s : shards) out.push_back(s.report.contains(key) ? &s.report.at(key) : nullptr);
  return out;
}

void require_every_shard(const std::vector<const json*>& parts, const std::vector<ShardReport>& shards, const std::string& key) {
  for (size_t s = 0; s < parts.size(); ++s)
    if (parts[s] == nullptr || parts[s]->is_null())
      refuse("section '" + key + "' is missing from '" + shards[s].path + "' (interrupted before it): rerun that shard");
    else if (!parts[s]->is_object() || !parts[s]->contains("records") || !parts[s]->at("records").is_array())
      refuse("section '" + key + "' of '" + shards[s].path + "' has no records array");
}

json pick_records(const std::vector<const json*>& records, const std::vector<ShardReport>& shards, const std::string& out_path) {
  const json& base = *records.front();
  for (size_t s = 0; s < records.size(); ++s)
    if (records[s] == nullptr || !records[s]->is_array() || records[s]->size() != base.size())
      refuse("'" + shards[s].path + "' plans other records than shard 0");
  json out = json::array();
  for (size_t i = 0; i < base.size(); ++i) {
    size_t from = 0;
    int ran = 0;
    for (size_t s = 0; s < records.size(); ++s)
      if (cases_of(records[s]->at(i)) > 0) from = s, ++ran;
    if (ran > 1) refuse("record " + std::to_string(i) + " was run by more than one shard");
    json r = (*records[from])[i];
    repoint_replay(r, shards[from].path, out_path);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<DType> dtypes_of(const json& config) {
  std::vector<DType> out;
  if (!config.is_object() || !config.contains("dtypes") || !config.at("dtypes").is_array())
    refuse("a report configuration has no dtypes array");
  for (const json& d : config.at("dtypes")) {
    const auto dt = d.is_string() ? parse_dtype(d.get<std::string>()) : std::nullopt;
    if (!dt) refuse("unknown dtype '" + (d.is_string() ? d.get<std::string>() : d.dump()) + "' in a report configuration");
    out.push_back(*dt);
  }
  return out;
}

std::vector<FlagCheck> recompute_flags(const json& records, const std::vector<DType>& dtypes) {
  std::vector<std::string> generators, ops;  // FlagView holds views: keep the strings alive
  generators.reserve(records.size());
  ops.reserve(records.size());
  std::vector<FlagView> views;
  for (const json& r : records) {
    const std::string prop = r.value("property", "");
    generators.push_back(prop.substr(prop.find('/') + 1));
    const auto dt = parse_dtype(r.value("storage", ""));
    if (!dt) refuse("a record has an unknown storage dtype");
    if (!r.contains("variant") || !r.at("variant").is_string()) refuse("a record has no variant");
    ops.push_back(r.value("op", std::string("linear_rmsnorm")));  // block records name no op
    views.push_back({r.at("variant").get_ref<const std::string&>(), *dt, generators.back(), cases_of(r),
                     report_count(r, "failed_cases") > 0, ops.back()});
  }
  return evaluate_flags(dtypes, views);
}

int64_t sum_of(const std::vector<const json*>& parts, const char* key) {
  int64_t n = 0;
  for (const json* s : parts) n = add_report_counts(n, report_count(*s, key));
  return n;
}

bool all_true(const std::vector<const json*>& parts, const char* key) {
  return std::all_of(parts.begin(), parts.end(), [&](const json* s) { return s->value(key, false); });
}

json merge_suite_section(const std::vector<const json*>& parts, const std::vector<ShardReport>& shards, const std::string& out_path,
                         bool has_flags, ComparisonFromRecords comparison) {
  json m = *parts.front();
  std::vector<const json*> records;
  for (const json* s : parts) records.push_back(&s->at("records"));
  m["records"] = pick_records(records, shards, out_path);
  if (comparison) {
    m["comparison"] = comparison(m["records"]);
    for (json& r : m["records"])  // what only shard reports carry, for this fold
      for (const char* key : {"acc_bytes", "worst_cancellation"}) r.erase(key);
  } else {
    m["comparison"] = pick_dtype_rows(parts, "comparison", "dtype");
  }
  m["cases_planned"] = sum_of(parts, "cases_planned");
  m["cases_done"] = sum_of(parts, "cases_done");
  const bool complete = m["cases_planned"] == m["cases_done"];
  if (has_flags) {
    const std::vector<FlagCheck> flags = recompute_flags(m["records"], dtypes_of(m["config"]));
    m["flag_checks"] = flag_checks_json(flags);
    m["records_passed"] = all_true(parts, "records_passed");
    m["passed"] = m["records_passed"].get<bool>() && all_flags_met(flags) && complete;
  } else {
    m["passed"] = all_true(parts, "passed");
  }
  return m;
}

json merge_dtype_ordered(const std::vector<const json*>& parts, const std::vector<ShardReport>& shards, const std::string& out_path) {
  json m = *parts.front();
  const std::vector<DType> dtypes = dtypes_of(m["config"]);
  std::vector<std::pair<size_t, json>> records;  // (dtype position, record)
  for (size_t s = 0; s < parts.size(); ++s)
    for (const json& r : parts[s]->at("records")) {
      const auto dt = parse_dtype(r.value("storage", ""));
      if (!dt) refuse("a record has an unknown storage dtype '" + r.value("storage", "") + "'");
      records.emplace_back(dtype_position(dtypes, *dt), r);
      repoint_replay(records.back().second, shards[s].path, out_path);
    }
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json merged = json::array();
  for (auto& [pos, r] : records) {
    reindex_replay(r, merged.size());
    merged.push_back(std::move(r));
  }
  m["records"] = merged;
  m["cases_planned"] = sum_of(parts, "cases_planned");
  m["cases_done"] = sum_of(parts, "cases_done");
  m["passed"] = all_true(parts, "passed");
  return m;
}

json pick_whole(const std::vector<const json*>& parts, const std::string& key) {
  json out;
  for (const json* s : parts)
    if (s != nullptr && !s->is_null()) {
      if (!out.is_null()) refuse("section '" + key + "' was run by more than one shard");
      out = *s;
    }
  return out;
}

}  // namespace normcheck::nightly
