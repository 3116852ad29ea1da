#pragma once
/// The port-Hamiltonian budget section (issue 9): random stream cases per dtype (widths and depths
/// log-uniform) judged against the certified oracle with the bounds of docs/bounds.md section 14,
/// and the growth table at width 32 (one standard case per dtype, which also gives the depth at
/// which the floating-point budget's slack exceeds 1 %).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "suite/budget_case.hpp"
#include "suite/growth_table.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

struct BudgetSuiteConfig {
  std::vector<DType> dtypes;
  int cases = 2;              ///< random stream cases per dtype
  int64_t max_width = 48, max_depth = 120;  ///< random widths in [2, max_width], depths in [1, max_depth]
  uint64_t seed = 20261130;
  int threads = 1;
  ShardSpec shard;            ///< one unit per case (the growth case too)
  std::optional<GrowthConfig> growth;  ///< the growth table (and standard budget case) when set
};

/// One (dtype, variant, property) over every case.
struct BudgetRecord {
  DType storage;
  std::string variant, property, output;
  int64_t cases = 0, failed_cases = 0, uncertified = 0;
  ErrorAccumulator acc;
  double max_value = 0, max_bound = 0, max_ratio = 0;
  int oracle_precision_bits = 0;
  uint64_t worst_seed = 0;
  bool failed() const { return failed_cases > 0; }
};

/// Per dtype, from the standard growth case: defects, slack depth, budget at full depth.
struct BudgetSummary {
  DType storage;
  double defect = 0, defect_bound = 0;  ///< max over steps, cayley_solve
  double inverse_defect = 0, inverse_defect_bound = 0;  ///< cayley_explicit_inverse
  int64_t slack_depth = -1;             ///< first depth with slack > 1 %; -1: none up to the depth
  double final_slack = 0;               ///< B^_L / B_L - 1
  bool budget_ok = true;
  double grad_final_slack = 0;          ///< G^_0 / ||g_L|| - 1: the gradient budget over the exact one (||g_L||)
  bool grad_budget_ok = true;
};

/// What a random case adds to the records (a sharded run's report carries these per case, and
/// `merge` folds them again in case order: docs/nightly.md, "Even shards").
struct BudgetCaseChecks {
  int64_t item = 0;  ///< position in the suite's dtype-major case order
  DType storage = DType::f64;
  uint64_t seed = 0;
  int oracle_precision_bits = 0;
  std::vector<BudgetCheck> checks;
};

struct BudgetSuiteResult {
  std::vector<BudgetRecord> records;
  std::vector<BudgetCaseChecks> shard_cases;  ///< a sharded run's cases, in case order
  std::vector<GrowthRow> growth;
  std::vector<BudgetSummary> summaries;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
};

/// The i-th random case of dtype dt.
PhCase budget_case_at(const BudgetSuiteConfig& cfg, DType dt, int64_t index);

BudgetSuiteResult run_budget_suite(const BudgetSuiteConfig& cfg);

/// Adds a case's checks to the records (records appear in the order their first check does).
void fold_budget_case(std::vector<BudgetRecord>& records, const BudgetCaseChecks& c);
bool budget_suite_passed(const BudgetSuiteResult& r);

/// Cases the config's shard plans; its shard units (one per case).
int64_t planned_cases(const BudgetSuiteConfig& cfg);
int64_t budget_shard_units(const BudgetSuiteConfig& cfg);

/// Estimated CPU seconds of each shard unit: a fixed cost per case, one per step and squared width,
/// one per cubed width (fitted on the measured unit seconds of the default suite's 12 cases, within
/// a factor 2 of each: docs/nightly.md "Even shards").
inline constexpr double kBudgetCaseSeconds = 3e-3, kBudgetStepWidthSeconds = 1.1e-5, kBudgetWidthCubedSeconds = 1e-6;
std::vector<double> budget_unit_costs(const BudgetSuiteConfig& cfg);

}  // namespace normcheck
