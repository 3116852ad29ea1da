#include "nightly/unit_costs.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "io/json_input.hpp"

namespace normcheck::nightly {

using nlohmann::json;

json unit_seconds_json(const std::vector<std::optional<double>>& seconds) {
  json out = json::array();
  for (const std::optional<double>& s : seconds) out.push_back(s ? json(std::round(*s * 1e6) / 1e6) : json());
  return out;
}

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw std::invalid_argument("--balance-from '" + printable(path) + "': " + why);
}

/// The report's `run` member, parsed without building the rest (a nightly report is megabytes).
json run_member(const std::string& path) {
  const json::parser_callback_t keep_run = [](int depth, json::parse_event_t event, json& parsed) {
    return !(depth == 1 && event == json::parse_event_t::key && parsed != "run" && parsed != "tool");
  };
  json top;
  try {
    top = read_json_file(path, keep_run);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string("--balance-from: ") + e.what());
  }
  if (!top.is_object() || !top.contains("tool") || top.at("tool") != "normcheck" || !top.contains("run") || !top.at("run").is_object())
    refuse(path, "not a normcheck report");
  if (top.at("run").value("complete", json()) != json(true))
    refuse(path, "is an interrupted run (run.complete is not true): its partly run units would skew the balance");
  return top.at("run");
}

}  // namespace

std::vector<std::optional<double>> unit_seconds_from_report(const std::string& path, int64_t units) {
  const json run = run_member(path);
  const json& seconds = run.value("unit_seconds", json());
  if (!seconds.is_array()) refuse(path, "has no run.unit_seconds (written by normcheck run since the measured balance)");
  if (static_cast<int64_t>(seconds.size()) != units)
    refuse(path, fmt::format("measured {} shard units, this run has {}: balance from a report of the same suite and options",
                             seconds.size(), units));
  std::vector<std::optional<double>> out;
  for (const json& s : seconds) {
    if (s.is_null()) {
      out.emplace_back();
      continue;
    }
    if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() < 0)
      refuse(path, "run.unit_seconds holds " + s.dump() + " (seconds must be finite numbers >= 0, or null)");
    out.emplace_back(s.get<double>());
  }
  return out;
}

std::vector<double> measured_or_estimated(const std::vector<double>& estimates, const std::vector<std::optional<double>>& measured) {
  std::vector<double> out = estimates;
  for (size_t u = 0; u < out.size() && u < measured.size(); ++u)
    if (measured[u]) out[u] = *measured[u];
  return out;
}

std::string owner_digest(const std::vector<int>& owner) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int shard : owner)
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (static_cast<uint32_t>(shard) >> (8 * byte)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  return fmt::format("{:016x}", h);
}

json merged_unit_seconds(const std::vector<const json*>& runs) {
  json out;
  for (const json* run : runs) {
    const json& s = run->value("unit_seconds", json());
    if (!s.is_array()) return json();
    if (out.is_null()) out = json::array_t(s.size());
    if (s.size() != out.size()) throw std::invalid_argument("the shards' run.unit_seconds differ in length: not one run");
    for (size_t u = 0; u < s.size(); ++u) {
      if (s[u].is_null()) continue;
      if (!out[u].is_null()) throw std::invalid_argument(fmt::format("shard unit {} ran on two shards: not one run", u));
      out[u] = s[u];
    }
  }
  return out;
}

}  // namespace normcheck::nightly
