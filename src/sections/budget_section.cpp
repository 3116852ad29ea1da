// The port-Hamiltonian norm-budget section ("port_hamiltonian"): random stream cases per dtype,
// the kernel's norms against the certified budget (docs/bounds.md section 14).
#include <fmt/format.h>

#include "nightly/merge_rules.hpp"
#include "sections/section_support.hpp"
#include "sections/sections.hpp"
#include "suite/suites.hpp"

namespace normcheck::sections {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "port_hamiltonian";

class BudgetRun final : public SectionRun {
 public:
  explicit BudgetRun(BudgetSuiteConfig cfg) : cfg_(std::move(cfg)) {}
  int64_t shard_units() const override { return static_cast<int64_t>(cfg_.dtypes.size()); }
  void set_shard(const ShardSpec& shard) override { cfg_.shard = shard; }
  double seconds_per_case() const override { return 0.14; }  // measured on the default suite (docs/nightly.md)
  int64_t planned_cases() const override { return normcheck::planned_cases(cfg_); }
  void run(const std::string&) override { result_ = run_budget_suite(cfg_); }
  int64_t cases_done() const override { return result_ ? result_->cases_done : 0; }
  bool passed() const override { return result_ && budget_suite_passed(*result_); }
  bool complete() const override { return result_ && !result_->interrupted; }
  void write(json& report, const std::string&) const override {
    if (result_) report[std::string(kKey)] = budget_suite_json(cfg_, *result_);
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

  bool merge(const std::vector<nightly::ShardReport>& shards, const std::string& out_path, json& m) const override {
    const std::vector<const json*> parts = nightly::section_parts(shards, std::string(kKey));
    nightly::require_every_shard(parts, shards, std::string(kKey));
    if (!parts.front()->value("growth", json()).is_null())
      throw std::invalid_argument("cannot merge report section 'port_hamiltonian' with a growth table (a norm-budget report)");
    m[std::string(kKey)] = nightly::merge_dtype_ordered(parts, shards, out_path);
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
