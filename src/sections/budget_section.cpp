// The port-Hamiltonian norm-budget section ("port_hamiltonian"): random stream cases per dtype,
// the kernel's norms against the certified budget (docs/bounds.md section 14).
#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "report/budget_report.hpp"
#include "sections/merge_rules.hpp"
#include "report/shard_items.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "port_hamiltonian";

[[noreturn]] void refuse(const std::string& why) { throw std::invalid_argument("port_hamiltonian shard_cases: " + why); }

/// A double that survives JSON exactly, infinities and NaN included.
std::string hex(double v) { return fmt::format("{:a}", v); }

double from_hex(const json& j) {
  if (!j.is_string()) refuse("a value is not a hexfloat string");
  const std::string s = j.get<std::string>();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) refuse("'" + s + "' is not a hexfloat");
  return v;
}

uint64_t seed_of(const json& j) {
  const std::string s = j.get<std::string>();
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) refuse("'" + s + "' is not a seed");
  return v;
}

/// A sharded run's cases, each with what it adds to the records: `merge` folds them again in case
/// order, so that merged shards equal the unsharded run bit for bit.
json shard_cases_json(const std::vector<BudgetCaseChecks>& cases) {
  json out = json::array();
  for (const BudgetCaseChecks& c : cases) {
    json checks = json::array();
    for (const BudgetCheck& k : c.checks)
      checks.push_back({{"variant", k.variant}, {"property", k.property}, {"output", k.output}, {"failed", k.failed},
                        {"uncertified", k.uncertified}, {"acc_bytes", nightly::accumulator_bytes(k.acc)},
                        {"max_value", hex(k.max_value)}, {"max_bound", hex(k.max_bound)}, {"max_ratio", hex(k.max_ratio)}});
    out.push_back({{"item", c.item}, {"storage", std::string(dtype_info(c.storage).name)}, {"seed", std::to_string(c.seed)},
                   {"oracle_precision_bits", c.oracle_precision_bits}, {"checks", checks}});
  }
  return out;
}

BudgetCaseChecks shard_case_from_json(const json& j) {
  BudgetCaseChecks c;
  const std::optional<DType> dt = parse_dtype(j.at("storage").get<std::string>());
  if (!dt) refuse("unknown storage '" + j.at("storage").get<std::string>() + "'");
  c.item = j.at("item").get<int64_t>();
  c.storage = *dt;
  c.seed = seed_of(j.at("seed"));
  c.oracle_precision_bits = j.at("oracle_precision_bits").get<int>();
  for (const json& k : j.at("checks")) {
    BudgetCheck b;
    b.variant = k.at("variant").get<std::string>();
    b.property = k.at("property").get<std::string>();
    b.output = k.at("output").get<std::string>();
    b.failed = k.at("failed").get<bool>();
    b.uncertified = k.at("uncertified").get<int64_t>();
    b.acc = nightly::accumulator_from_bytes(k.at("acc_bytes"));
    b.max_value = from_hex(k.at("max_value"));
    b.max_bound = from_hex(k.at("max_bound"));
    b.max_ratio = from_hex(k.at("max_ratio"));
    c.checks.push_back(std::move(b));
  }
  return c;
}

/// The configuration a report's section was run with (no growth table: merge refuses those).
BudgetSuiteConfig config_from_json(const json& j) {
  BudgetSuiteConfig cfg;
  cfg.dtypes = nightly::dtypes_of(j);
  cfg.cases = j.at("cases").get<int>();
  cfg.max_width = j.at("max_width").get<int64_t>();
  cfg.max_depth = j.at("max_depth").get<int64_t>();
  cfg.seed = seed_of(j.at("seed"));
  return cfg;
}

/// The shards' cases folded again in case order into the records of the unsharded run.
json merge_cases(const std::vector<const json*>& parts, const std::vector<nightly::ShardReport>& shards) {
  std::vector<BudgetCaseChecks> cases;
  for (size_t s = 0; s < parts.size(); ++s) {
    const std::string where = "'" + shards[s].path + "'";
    if (!parts[s]->contains("shard_cases")) refuse("missing from " + where + " (a report of another build?)");
    try {
      for (const json& c : parts[s]->at("shard_cases")) cases.push_back(shard_case_from_json(c));
    } catch (const json::exception& e) {
      refuse("malformed in " + where + " (" + e.what() + ")");
    } catch (const std::invalid_argument& e) {  // a bad seed, dtype, hexfloat or accumulator
      throw std::invalid_argument(std::string(e.what()) + " (in " + where + ")");
    }
  }
  std::sort(cases.begin(), cases.end(), [](const BudgetCaseChecks& a, const BudgetCaseChecks& b) { return a.item < b.item; });
  for (size_t i = 1; i < cases.size(); ++i)
    if (cases[i].item == cases[i - 1].item) refuse(fmt::format("case {} ran on two shards: not one run", cases[i].item));
  const BudgetSuiteConfig cfg = config_from_json(parts.front()->at("config"));
  BudgetSuiteResult r;
  for (const BudgetCaseChecks& c : cases) fold_budget_case(r.records, c);
  r.cases_planned = nightly::sum_of(parts, "cases_planned");
  r.cases_done = nightly::sum_of(parts, "cases_done");
  r.interrupted = r.cases_done < r.cases_planned;
  return budget_suite_json(cfg, r);
}

class BudgetRun final : public SectionRun {
 public:
  explicit BudgetRun(BudgetSuiteConfig cfg) : cfg_(std::move(cfg)) {}
  int64_t shard_units() const override { return budget_shard_units(cfg_); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  std::vector<double> unit_costs() const override { return budget_unit_costs(cfg_); }
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string&) override { result_ = run_budget_suite(cfg_); }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && budget_suite_passed(*result_); }
  bool complete() const override { return result_ && !result_->interrupted; }
  void write(json& report, const std::string&) const override {
    if (!result_) return;
    json& j = report[std::string(kKey)] = budget_suite_json(cfg_, *result_);
    if (cfg_.shard.sharded()) j["shard_cases"] = shard_cases_json(result_->shard_cases);
  }

 private:
  BudgetSuiteConfig cfg_;
  std::optional<BudgetSuiteResult> result_;
};

class BudgetSection final : public Section {
 public:
  std::string_view key() const override { return kKey; }
  std::vector<std::string_view> ops() const override { return {kKey}; }

  std::unique_ptr<SectionRun> plan(const PlanInputs& in) const override {
    if (!builtin_only(in, kKey) || !selected_whole_or_named(in, kKey)) return nullptr;
    BudgetSuiteConfig cfg = *suite_budget_config(in.options.suite);
    cfg.dtypes = in.common.dtypes;
    if (in.options.seed) cfg.seed = *in.options.seed;
    cfg.threads = in.options.threads;
    return std::make_unique<BudgetRun>(std::move(cfg));
  }

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& /*out_path: no replay commands*/, json& m) const override {
    const std::vector<const json*> parts = nightly::section_parts(shards, std::string(kKey));
    nightly::require_every_shard(parts, shards, std::string(kKey));
    if (!parts.front()->value("growth", json()).is_null())
      throw std::invalid_argument("cannot merge report section 'port_hamiltonian' with a growth table (a norm-budget report)");
    try {
      m[std::string(kKey)] = merge_cases(parts, shards);
    } catch (const json::exception& e) {
      refuse(std::string("malformed (") + e.what() + ")");
    }
    return m[std::string(kKey)].value("passed", false);
  }

  json suite_row(std::string_view suite) const override {
    const BudgetSuiteConfig b = *suite_budget_config(suite);
    return {{"section", kKey}, {"ops", kKey}, {"kernels", "cayley, dissipation, step"}, {"dtypes", b.dtypes.size()},
            {"generators", 1}, {"cases_per_generator", b.cases}, {"cases", static_cast<int64_t>(b.dtypes.size()) * b.cases},
            {"shapes", fmt::format("width 2-{}, depth 1-{}", b.max_width, b.max_depth)}};
  }
};

}  // namespace

const Section& budget_section() {
  static const BudgetSection s;
  return s;
}

}  // namespace normcheck::sections
