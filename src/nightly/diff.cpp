#include "nightly/diff.hpp"

#include <cmath>
#include <algorithm>
#include <map>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

#include "io/case_json.hpp"
#include "report/ci_output.hpp"
#include "report/verdicts.hpp"
#include "sections/section.hpp"

namespace normcheck::nightly {
namespace {

std::string identity(const nlohmann::json& r) {
  std::string key;
  for (const char* field : {"op", "kernel", "variant", "form", "kind", "storage", "accum", "property", "output"})
    if (r.contains(field) && r.at(field).is_string()) key += (key.empty() ? "" : " ") + r.at(field).get<std::string>();
  return key;
}

/// A record's metric: a number, or "inf"/"-inf"/"nan" as reports write them; absent is 0. Anything
/// else is a malformed report (a string "5" is not read as +inf).
double number(const nlohmann::json& r, const char* field) {
  if (!r.contains(field) || r.at(field).is_null()) return 0;
  if (const auto x = json_number_value(r.at(field))) return *x;
  throw std::invalid_argument(fmt::format("record '{}': field {} is {}, not a number (or \"inf\", \"nan\")", identity(r), field,
                                          r.at(field).dump()));
}

bool failing(const nlohmann::json& r) { return is_failing_verdict(r.value("verdict", "")); }

/// "verdict a -> b", with the kernel failure's first message when the new verdict is one.
std::string verdict_change(const nlohmann::json& b, const nlohmann::json& n) {
  std::string s = fmt::format("verdict {} -> {}", b.value("verdict", ""), n.value("verdict", ""));
  if (n.value("verdict", "") == "kernel_failure" && n.contains("kernel_failures") && n.at("kernel_failures").is_object())
    s += fmt::format(" ({} cases; first: {})", n.at("kernel_failures").value("cases", int64_t{0}),
                     n.at("kernel_failures").value("first", std::string("?")));
  return s;
}

/// A metric before and after, as "name a -> b" (absent metrics say "-").
std::string before_after(const nlohmann::json& b, const nlohmann::json& n, const char* field, const char* name) {
  const auto shown = [field](const nlohmann::json& r) {
    if (!r.contains(field) || r.at(field).is_null()) return std::string("-");
    const auto x = json_number_value(r.at(field));
    return x ? fmt::format("{:.4g}", *x) : r.at(field).dump();
  };
  return fmt::format("{} {} -> {}", name, shown(b), shown(n));
}

/// What a reader needs to act on a new failure or regression without opening either report.
std::string change_details(const nlohmann::json& b, const nlohmann::json& n) {
  std::string s = before_after(b, n, "max_bound_ratio", "max err/bound") + "; " +
                  before_after(b, n, "max_ulp_normal", "max ULP (normal outputs)") + "; " +
                  before_after(b, n, "max_ulp", "max ULP (all)") + "; " + before_after(b, n, "rms_ulp", "RMS ULP") + "\n";
  return s + record_failure_text(n);
}

/// Growth of a metric beyond a factor and an absolute floor (both must hold).
bool grew(double base, double now, double factor, double floor) { return now > base * factor && now - base > floor; }

RecordChange classify(const std::string& section, const std::string& key, const nlohmann::json& b, const nlohmann::json& n,
                      const DiffThresholds& t) {
  const bool ran_before = b.value("verdict", "") != "not_run", ran_now = n.value("verdict", "") != "not_run";
  if (ran_before && !ran_now) return {section, key, Change::removed, "not run in the new report (interrupted or deselected)"};
  if (!ran_before && ran_now) return {section, key, Change::added, "not run in the base report"};
  if (!failing(b) && failing(n)) return {section, key, Change::new_failure, verdict_change(b, n), change_details(b, n)};
  if (failing(b) && !failing(n)) return {section, key, Change::fixed, verdict_change(b, n)};
  const double bu = number(b, "max_ulp"), nu = number(n, "max_ulp"), br = number(b, "rms_ulp"), nr = number(n, "rms_ulp");
  const double bb = number(b, "max_bound_ratio"), nb = number(n, "max_bound_ratio");
  std::vector<std::string> worse, better;
  if (grew(bu, nu, t.max_ulp_factor, 1.0)) worse.push_back(fmt::format("max_ulp {:.4g} -> {:.4g}", bu, nu));
  if (grew(br, nr, t.rms_ulp_factor, 0.5)) worse.push_back(fmt::format("rms_ulp {:.4g} -> {:.4g}", br, nr));
  // Absolute within the bound, relative beyond it (a known-weak kernel at 1e7 x its bound does not
  // "regress" by 0.1).
  if (nb > bb + t.bound_ratio_increase * std::max(1.0, bb)) worse.push_back(fmt::format("max err/bound {:.4g} -> {:.4g}", bb, nb));
  if (grew(nu, bu, t.max_ulp_factor, 1.0)) better.push_back(fmt::format("max_ulp {:.4g} -> {:.4g}", bu, nu));
  if (grew(nr, br, t.rms_ulp_factor, 0.5)) better.push_back(fmt::format("rms_ulp {:.4g} -> {:.4g}", br, nr));
  if (bb > nb + t.bound_ratio_increase * std::max(1.0, nb)) better.push_back(fmt::format("max err/bound {:.4g} -> {:.4g}", bb, nb));
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : "; ") + e;
    return s;
  };
  if (!worse.empty()) return {section, key, Change::regression, join(worse), change_details(b, n)};
  if (!better.empty()) return {section, key, Change::improvement, join(better)};
  return {section, key, Change::unchanged, ""};
}

/// The fields of a record that name its group: kernel (with variant / form / kind), dtype, op.
void set_group(RecordChange& c, const nlohmann::json& r) {
  const auto field = [&r](const char* f) { return r.contains(f) && r.at(f).is_string() ? r.at(f).get<std::string>() : std::string(); };
  for (const char* f : {"kernel", "variant", "form", "kind"})
    if (!field(f).empty()) c.kernel += (c.kernel.empty() ? "" : " ") + field(f);
  c.dtype = field("storage");
  c.op = field("op");
}

std::string plural(int64_t k, const char* one, const char* many) { return fmt::format("{} {}", k, k == 1 ? one : many); }

std::string config_value(const nlohmann::json& r, const char* field) {
  if (!r.contains("config") || !r.at("config").contains(field)) return "";
  const auto& v = r.at("config").at(field);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

const char* change_name(Change c) {
  switch (c) {
    case Change::new_failure: return "new_failure";
    case Change::fixed: return "fixed";
    case Change::regression: return "regression";
    case Change::improvement: return "improvement";
    case Change::unchanged: return "unchanged";
    case Change::added: return "added";
    case Change::removed: return "removed";
  }
  return "?";
}

bool DiffResult::regressed() const {
  for (const RecordChange& c : changes)
    if (c.change == Change::new_failure || c.change == Change::regression) return true;
  return false;
}

DiffResult diff_reports(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t, bool force) {
  for (const auto* r : {&base, &now})
    if (!r->is_object() || r->value("tool", "") != "normcheck" || !r->contains("schema_version"))
      throw std::invalid_argument("not a normcheck report (no tool/schema_version)");
  if (base.at("schema_version") != now.at("schema_version"))
    throw std::invalid_argument(fmt::format("schema versions differ ({} vs {}): records are not comparable",
                                            base.at("schema_version").dump(), now.at("schema_version").dump()));
  DiffResult d;
  for (const auto* r : {&base, &now})
    if (r->contains("run") && (*r)["run"].contains("shard") && !(*r)["run"]["shard"].is_null())
      throw std::invalid_argument("a shard report (run --shard) holds a slice of the records: merge the shards first (normcheck merge)");
  if (!now.contains("run") || !now["run"].value("complete", false))
    d.warnings.push_back("the new report is incomplete (interrupted): records it did not finish compare as not run");
  for (const char* field : {"suite", "suite_version", "seed"}) {
    const std::string a = config_value(base, field), b = config_value(now, field);
    if (a == b) continue;
    const std::string msg = fmt::format("{} differs ({} vs {}): the reports judged different cases", field, a, b);
    if (!force) throw std::invalid_argument(msg + " (--force compares them anyway)");
    d.warnings.push_back(msg);
  }
  for (const sections::Section* s : sections::registry()) {
    if (!s->diffed()) continue;
    const std::string section(s->key());
    std::map<std::string, const nlohmann::json*> before, after;
    if (const auto* rb = s->records(base))
      for (const auto& r : *rb) before[identity(r)] = &r;
    if (const auto* ra = s->records(now))
      for (const auto& r : *ra) after[identity(r)] = &r;
    for (const auto& [key, r] : after) {
      const auto it = before.find(key);
      if (it == before.end()) d.changes.push_back({section, key, Change::added, ""});
      else d.changes.push_back(classify(section, key, *it->second, *r, t));
      set_group(d.changes.back(), *r);
    }
    for (const auto& [key, r] : before)
      if (!after.count(key)) {
        d.changes.push_back({section, key, Change::removed, "absent from the new report"});
        set_group(d.changes.back(), *r);
      }
  }
  d.allow_removed = t.allow_removed;
  return d;
}

int64_t DiffResult::count(Change c) const {
  int64_t k = 0;
  for (const RecordChange& r : changes) k += r.change == c;
  return k;
}

int64_t DiffResult::compared() const {
  return static_cast<int64_t>(changes.size()) - count(Change::added) - count(Change::removed);
}

std::vector<std::string> DiffResult::failure_reasons() const {
  std::vector<std::string> why;
  const int64_t failures = count(Change::new_failure), regressions = count(Change::regression);
  if (failures + regressions > 0)
    why.push_back(plural(failures, "new failure", "new failures") + ", " + plural(regressions, "regression", "regressions"));
  for (std::string& r : comparison_failures()) why.push_back(std::move(r));
  return why;
}

std::vector<std::string> DiffResult::comparison_failures() const {
  std::vector<std::string> why;
  const int64_t added = count(Change::added), removed = count(Change::removed);
  if (compared() == 0)
    why.push_back(fmt::format("the reports share no judged record ({} added, {} removed): nothing was compared", added, removed));
  else if (removed > 0 && !allow_removed)
    why.push_back(plural(removed, "record", "records") +
                  " judged in the base report not judged in the new one (removed; --allow-removed accepts that)");
  return why;
}

std::string DiffResult::verdict_line() const {
  const std::vector<std::string> why = failure_reasons();
  if (why.empty()) return "no regression";
  std::string line = regressed() ? "REGRESSED: " : "FAILED: ";
  for (size_t i = 0; i < why.size(); ++i) line += (i ? "; " : "") + why[i];
  return line;
}

int64_t ChangeGroup::changed() const {
  int64_t k = 0;
  for (size_t c = 0; c < counts.size(); ++c) k += c == static_cast<size_t>(Change::unchanged) ? 0 : counts[c];
  return k;
}

std::vector<ChangeGroup> group_changes(const DiffResult& d) {
  std::vector<ChangeGroup> groups;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (const RecordChange& c : d.changes) {
    if (c.change == Change::unchanged) continue;
    const auto key = std::make_tuple(c.kernel, c.dtype, c.op);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({c.kernel, c.dtype, c.op, {}});
    }
    ++groups[it->second].counts[static_cast<size_t>(c.change)];
  }
  const auto bad = [](const ChangeGroup& g) {
    return g.counts[static_cast<size_t>(Change::new_failure)] + g.counts[static_cast<size_t>(Change::regression)];
  };
  std::stable_sort(groups.begin(), groups.end(), [&bad](const ChangeGroup& a, const ChangeGroup& b) {
    if ((bad(a) > 0) != (bad(b) > 0)) return bad(a) > 0;
    return bad(a) != bad(b) ? bad(a) > bad(b) : a.changed() > b.changed();
  });
  return groups;
}

std::string change_groups_text(const DiffResult& d) {
  const std::vector<ChangeGroup> groups = group_changes(d);
  if (groups.empty()) return "";
  std::string s = fmt::format("changed records by kernel x dtype x op ({} groups):\n", groups.size());
  for (const ChangeGroup& g : groups) {
    std::string counts;
    for (Change c : {Change::new_failure, Change::regression, Change::removed, Change::fixed, Change::improvement, Change::added})
      if (const int64_t k = g.counts[static_cast<size_t>(c)]; k > 0) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", k, change_name(c));
    s += fmt::format("  {:>6} changed  {} {} {}: {}\n", g.changed(), g.kernel.empty() ? "-" : g.kernel, g.dtype.empty() ? "-" : g.dtype,
                     g.op.empty() ? "-" : g.op, counts);
  }
  return s;
}

nlohmann::json diff_json(const DiffResult& d, const DiffThresholds& t) {
  nlohmann::json changes = nlohmann::json::array(), counts = nlohmann::json::object();
  for (const char* c : {"new_failure", "fixed", "regression", "improvement", "unchanged", "added", "removed"}) counts[c] = 0;
  for (const RecordChange& c : d.changes) {
    counts[change_name(c.change)] = counts[change_name(c.change)].get<int>() + 1;
    if (c.change != Change::unchanged)
      changes.push_back({{"section", c.section}, {"record", c.key}, {"change", change_name(c.change)}, {"why", c.why},
                         {"details", c.details}});
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const ChangeGroup& g : group_changes(d)) {
    nlohmann::json row = {{"kernel", g.kernel}, {"dtype", g.dtype}, {"op", g.op}};
    for (size_t c = 0; c < g.counts.size(); ++c)
      if (c != static_cast<size_t>(Change::unchanged)) row[change_name(static_cast<Change>(c))] = g.counts[c];
    groups.push_back(row);
  }
  return {{"format", "normcheck-diff-v1"},
          {"regressed", d.regressed()},
          {"passed", d.passed()},
          {"compared", d.compared()},
          {"verdict", d.verdict_line()},
          {"reasons", d.failure_reasons()},
          {"thresholds", {{"max_ulp_factor", t.max_ulp_factor}, {"rms_ulp_factor", t.rms_ulp_factor},
                          {"bound_ratio_increase", t.bound_ratio_increase}, {"allow_removed", t.allow_removed}}},
          {"counts", counts},
          {"groups", groups},
          {"warnings", d.warnings},
          {"changes", changes}};
}

std::string record_identity(const nlohmann::json& record) { return identity(record); }

Change compare_records(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t) {
  return classify("", "", base, now, t).change;
}

RecordChange classify_records(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t) {
  return classify("", "", base, now, t);
}

}  // namespace normcheck::nightly
