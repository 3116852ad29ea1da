#pragma once
/// The port-Hamiltonian budget section of the report, written from its suite's result.
#include <string>

#include <nlohmann/json.hpp>

#include "suite/budget_suite.hpp"

namespace normcheck {

nlohmann::json budget_suite_json(const BudgetSuiteConfig& cfg, const BudgetSuiteResult& r);

}  // namespace normcheck
