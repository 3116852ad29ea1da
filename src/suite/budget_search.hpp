#pragma once
/// Worst-case search for the port-Hamiltonian norm budget (issue 20): random restarts, then hill
/// climbing over the initial state x0 and the port signals u_t (every step's), maximizing either the
/// floating-point budget's tightness max_t ||x^_t|| / B^_t (above 1: the budget is violated) or its
/// slack over the exact budget, max_t B^_t / B_t - 1 (docs/port-hamiltonian.md, "Worst-case search").
/// Seeded and single-threaded: reproducible. Every evaluation is a full budget case (the certified
/// oracle included), so a found case carries its checks.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/port_hamiltonian_case.hpp"
#include "suite/budget_case.hpp"

namespace normcheck {

struct BudgetSearchConfig {
  DType dtype = DType::f32;
  int64_t n = 8, depth = 12;
  double h = 0.25;
  uint64_t seed = 1;
  int restarts = 4;
  int iterations = 40;  ///< hill-climbing steps per restart
  std::string objective = "tightness";  ///< "tightness" or "slack"
};

/// The objectives of one evaluated case.
struct BudgetObjectives {
  double tightness = 0;  ///< max_{t >= 1} ||x^_t|| / B^_t (inf when the stream overflows)
  double slack = 0;      ///< max_t B^_t / B_t - 1
  bool failed = false;   ///< a check of the case failed (budget, forward error, oracle)
  double of(const std::string& objective) const { return objective == "slack" ? slack : tightness; }
};

BudgetObjectives budget_objectives(const BudgetCaseResult& r);

/// The search's evaluation of one case: run_budget_case without the explicit-inverse comparison
/// and the entrywise judging (the budget, the stream and its certified oracle only).
BudgetObjectives evaluate_budget_case(const PhCase& c);

struct BudgetSearchResult {
  PhCase best;
  BudgetObjectives value;
  int64_t evaluations = 0;
  double start_value = 0;  ///< the first restart's starting value
};

/// Throws std::invalid_argument for an unknown objective or a shape outside the stream's limits.
BudgetSearchResult search_budget_worst_case(const BudgetSearchConfig& cfg);

/// A corpus entry (hexfloats: exact) and back; the case's parameters are regenerated from its seed.
nlohmann::json budget_corpus_entry(const PhCase& c, const std::string& objective, const BudgetObjectives& v);
PhCase budget_case_of_entry(const nlohmann::json& entry);

}  // namespace normcheck
