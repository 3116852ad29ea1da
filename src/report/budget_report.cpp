#include "report/budget_report.hpp"

#include <algorithm>
#include <cmath>

#include "bounds/tolerance_table.hpp"
#include "io/case_json.hpp"
#include "report/report.hpp"

namespace normcheck {
namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

nlohmann::json budget_suite_json(const BudgetSuiteConfig& cfg, const BudgetSuiteResult& r) {
  nlohmann::json records = nlohmann::json::array(), dtypes = nlohmann::json::array(), summaries = nlohmann::json::array();
  for (const BudgetRecord& rec : r.records) {
    const BudgetToleranceEntry& t = budget_tolerance_for(rec.variant, rec.property);
    const std::string accum(dtype_info(dtype_info(rec.storage).default_accum).name);
    nlohmann::json j = {{"op", "port_hamiltonian"},
                        {"kernel", rec.variant},
                        {"variant", rec.variant},
                        {"storage", std::string(dtype_info(rec.storage).name)},
                        {"accum", accum},
                        {"property", rec.property},
                        {"output", rec.output},
                        {"verdict", rec.cases == 0 ? "not_run" : (rec.failed() ? "fail" : "pass")},
                        {"cases", rec.cases},
                        {"failed_cases", rec.failed_cases},
                        {"uncertified_elements_oracle", rec.uncertified},
                        {"max_value", num(rec.max_value)},
                        {"max_bound", num(rec.max_bound)},
                        {"max_ratio", num(rec.max_ratio)},
                        {"tolerance", t.max_ratio},
                        {"expectation", expectation_name(t.expectation)},
                        {"justification", std::string(t.justification)},
                        {"oracle_precision_bits", rec.oracle_precision_bits},
                        {"worst_case_seed", std::to_string(rec.worst_seed)}};
    j.update(accumulator_json(rec.acc));
    // Budget checks have no per-element errors: their ratio to the bound is max_ratio (diff and render read this).
    j["max_bound_ratio"] = json_number(std::max({0.0, rec.acc.max_bound_ratio(), rec.max_ratio}));
    records.push_back(j);
  }
  for (const BudgetSummary& s : r.summaries)
    summaries.push_back({{"storage", std::string(dtype_info(s.storage).name)},
                         {"orthogonality_defect", num(s.defect)},
                         {"orthogonality_defect_bound", num(s.defect_bound)},
                         {"explicit_inverse_defect", num(s.inverse_defect)},
                         {"explicit_inverse_defect_bound", num(s.inverse_defect_bound)},
                         {"slack_exceeds_1pct_depth", s.slack_depth < 0 ? nlohmann::json() : nlohmann::json(s.slack_depth)},
                         {"final_slack", num(s.final_slack)},
                         {"fp_budget_holds", s.budget_ok},
                         {"grad_final_slack", num(s.grad_final_slack)},
                         {"fp_grad_budget_holds", s.grad_budget_ok}});
  for (DType d : cfg.dtypes) dtypes.push_back(std::string(dtype_info(d).name));
  nlohmann::json growth;
  if (cfg.growth) {
    const GrowthConfig& g = *cfg.growth;
    growth = {{"width", g.width},
              {"depths", g.depths},
              {"h", g.h},
              {"gain", g.gain},
              {"eps", g.eps},
              {"seed", std::to_string(g.seed)},
              {"init", "x0 ~ N(0,1); residual branch f(x) = W2 relu(W1 x), W1 ~ N(0, 2/n) (He), W2 ~ N(0, gain^2/n); "
                       "port-Hamiltonian S_ij ~ N(0, 1/n) (i<j, skew), theta ~ N(0, 1.5^2), v ~ N(0,1), "
                       "B ~ N(0, 1/m), u ~ N(0,1), m = min(n, 8); all rounded to the dtype"},
              {"rows", growth_rows_json(g, r.growth)},
              {"budget", summaries}};
  }
  return {{"config", {{"dtypes", dtypes}, {"cases", cfg.cases}, {"max_width", cfg.max_width}, {"max_depth", cfg.max_depth},
                      {"seed", std::to_string(cfg.seed)}}},
          {"passed", budget_suite_passed(r)},
          {"cases_planned", r.cases_planned},
          {"cases_done", r.cases_done},
          {"records", records},
          {"growth", growth}};
}

}  // namespace normcheck
