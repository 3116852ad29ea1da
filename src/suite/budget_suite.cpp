#include "suite/budget_suite.hpp"

#include <algorithm>
#include <cmath>

#include "bounds/tolerance_table.hpp"
#include "core/rng.hpp"
#include "io/case_json.hpp"

namespace normcheck {
namespace {

struct ItemResult {
  std::vector<BudgetCaseResult> cases;  ///< one random case, or the standard growth case
  std::vector<GrowthRow> growth;
};

BudgetCaseChecks checks_of(int64_t item, const BudgetCaseResult& c) {
  return {item, c.c.dtype, c.c.seed, c.oracle_precision_bits, std::vector<BudgetCheck>(c.checks.begin(), c.checks.end())};
}

BudgetSummary summary_of(const BudgetCaseResult& c) {
  BudgetSummary s;
  s.storage = c.c.dtype;
  for (const BudgetCheck& k : c.checks) {
    if (k.variant == "cayley_solve" && k.property == "orthogonality_defect") {
      s.defect = k.max_value;
      s.defect_bound = k.max_bound;
    }
    if (k.variant == "cayley_explicit_inverse" && k.property == "orthogonality_defect") {
      s.inverse_defect = k.max_value;
      s.inverse_defect_bound = k.max_bound;
    }
    if (k.variant == "stream" && k.property == "fp_budget") s.budget_ok = !k.failed;
    if (k.variant == "stream_vjp" && k.property == "fp_grad_budget") s.grad_budget_ok = !k.failed;
  }
  s.slack_depth = c.slack_depth;
  s.final_slack = c.fp_budget.back() / c.exact_budget.back() - 1;
  if (!c.grad_fp_budget.empty()) s.grad_final_slack = c.grad_fp_budget.front() / c.grad_oracle_norms.back() - 1;
  return s;
}

/// The random cases of a dtype, and its growth case when configured.
size_t cases_per_dtype(const BudgetSuiteConfig& cfg) { return static_cast<size_t>(cfg.cases) + (cfg.growth ? 1 : 0); }

/// One shard unit per case.
DtypeSlice case_slice(const BudgetSuiteConfig& cfg) { return {cfg.shard, cfg.dtypes.size() * cases_per_dtype(cfg), 1}; }

}  // namespace

void fold_budget_case(std::vector<BudgetRecord>& records, const BudgetCaseChecks& c) {
  for (const BudgetCheck& k : c.checks) {
    auto rec = std::find_if(records.begin(), records.end(), [&](const BudgetRecord& r) {
      return r.storage == c.storage && r.variant == k.variant && r.property == k.property;
    });
    if (rec == records.end()) {
      BudgetRecord fresh;
      fresh.storage = c.storage;
      fresh.variant = k.variant;
      fresh.property = k.property;
      fresh.output = k.output;
      rec = records.insert(records.end(), std::move(fresh));
    }
    ++rec->cases;
    if (k.failed) ++rec->failed_cases;
    rec->uncertified += k.uncertified;
    rec->acc.merge(k.acc);
    rec->max_value = std::max(rec->max_value, k.max_value);
    rec->max_bound = std::max(rec->max_bound, k.max_bound);
    if (k.max_ratio >= rec->max_ratio) rec->worst_seed = c.seed;
    rec->max_ratio = std::max(rec->max_ratio, k.max_ratio);
    rec->oracle_precision_bits = std::max(rec->oracle_precision_bits, c.oracle_precision_bits);
  }
}

int64_t planned_cases(const BudgetSuiteConfig& cfg) { return case_slice(cfg).planned(); }
int64_t budget_shard_units(const BudgetSuiteConfig& cfg) { return static_cast<int64_t>(case_slice(cfg).total()); }

namespace {

struct DrawnCase {
  uint64_t seed;
  int64_t width, depth;
  double h;
};

/// The i-th random case's seed and shape, drawn without building its tensors.
DrawnCase draw_budget_case(const BudgetSuiteConfig& cfg, DType dt, int64_t index) {
  const uint64_t seed = derive_seed(cfg.seed, 0x9420, static_cast<uint64_t>(dt), static_cast<uint64_t>(index));
  Rng rng(seed);
  const int64_t n = rng.log_range(2, cfg.max_width), depth = rng.log_range(1, cfg.max_depth);
  const double h = std::ldexp(1.0, static_cast<int>(rng.range(-4, 1))) * (1 + rng.uniform());
  return {seed, n, depth, h};
}

}  // namespace

PhCase budget_case_at(const BudgetSuiteConfig& cfg, DType dt, int64_t index) {
  const DrawnCase d = draw_budget_case(cfg, dt, index);
  return make_ph_case(dt, d.width, d.depth, d.h, d.seed);
}

std::vector<double> budget_unit_costs(const BudgetSuiteConfig& cfg) {
  std::vector<double> costs;
  const auto per_dtype = static_cast<int64_t>(cases_per_dtype(cfg));
  for (DType dt : cfg.dtypes)
    for (int64_t i = 0; i < per_dtype; ++i) {
      if (i >= cfg.cases) {
        costs.push_back(1.0);  // the growth case: only the budget command plans it, never sharded
        continue;
      }
      const DrawnCase d = draw_budget_case(cfg, dt, i);
      const auto w = static_cast<double>(d.width), depth = static_cast<double>(d.depth);
      costs.push_back(kBudgetCaseSeconds + kBudgetStepWidthSeconds * depth * w * w + kBudgetWidthCubedSeconds * w * w * w);
    }
  return costs;
}

BudgetSuiteResult run_budget_suite(const BudgetSuiteConfig& cfg) {
  BudgetSuiteResult result;
  const DtypeSlice slice = case_slice(cfg);
  const size_t per_dtype = cases_per_dtype(cfg), total = slice.total();
  result.cases_planned = slice.planned();
  const auto done = run_slice_items<ItemResult>(slice, cfg.threads, [&](size_t i) {
    const DType dt = cfg.dtypes[i / per_dtype];
    const auto index = static_cast<int64_t>(i % per_dtype);
    ItemResult r;
    r.cases.emplace_back();
    if (index < cfg.cases) r.cases.back() = run_budget_case(budget_case_at(cfg, dt, index));
    else r.growth = run_growth(*cfg.growth, dt, r.cases.back());
    count_finished(r.cases.back().failed());
    return r;
  });
  for (size_t i = 0; i < total; ++i) {
    if (!done[i]) continue;
    ++result.cases_done;
    const BudgetCaseChecks checks = checks_of(static_cast<int64_t>(i), done[i]->cases.back());
    fold_budget_case(result.records, checks);
    if (cfg.shard.sharded()) result.shard_cases.push_back(checks);
    if (!done[i]->growth.empty()) {
      result.growth.insert(result.growth.end(), done[i]->growth.begin(), done[i]->growth.end());
      result.summaries.push_back(summary_of(done[i]->cases.back()));
    }
  }
  result.interrupted = result.cases_done < result.cases_planned;
  return result;
}

bool budget_suite_passed(const BudgetSuiteResult& r) {
  for (const BudgetRecord& rec : r.records)
    if (rec.failed()) return false;
  return !r.interrupted;
}

}  // namespace normcheck
