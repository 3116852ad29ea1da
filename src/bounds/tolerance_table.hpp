#pragma once
/// Tolerances as data: the bound each kernel must satisfy (its own, rigorous one), the bound that
/// gives the verdict (the same for sound kernels; the sound contract of the dtype for known-weak
/// ones, so that the harness flags them), and the weak kernels the harness must catch.
#include <optional>
#include <string_view>
#include <vector>

#include "bounds/bounds.hpp"
#include "bounds/bounds_block.hpp"
#include "kernels/registry.hpp"

namespace normcheck {

enum class Expectation { must_pass, report_only };

struct ToleranceEntry {
  std::string_view variant;   ///< kernel variant
  std::string_view metric;    ///< what is compared with max_ratio
  StatsModel stats;           ///< the variant's own statistics model
  SumOrder order;             ///< the variant's own summation order
  bool judged_by_contract;    ///< verdict by the dtype's sound contract (two-pass, default accum)
  double max_ratio;           ///< observed error / bound must not exceed this
  Expectation expectation;    ///< of the verdict bound; the own bound must always hold
  std::string_view justification;
  uint8_t rms_flags = 0;      ///< RmsFlags of the variant's own arithmetic (RMSNorm only)
};

/// A known-weak kernel that the harness must flag (at least one failing case) on a generator.
struct FlagExpectation {
  std::string_view variant;
  std::string_view storage;    ///< "*" for any dtype
  std::string_view generator;  ///< "*" for any generator
  std::string_view why;
  std::string_view op = "*";   ///< "*" for any op, else the op whose records show the defect (op_name)
  /// With generator "*": generators (space-separated) where the defect shows on fewer than 60 % (block bf16:
  /// 50 %) of the nightly suite's cases; they and the mixed corpus are no witnesses (docs/bounds.md 4.4).
  std::string_view blind = "";
  /// The per-case catch rate over the witness generators, measured on the nightly suite, rounded down.
  double catch_rate = 0.5;
};

/// A sound harness misses a flag expectation on all its witness cases with at most this probability once
/// it has required_witness_cases of them; fewer make a miss "not required" rather than a harness failure.
inline constexpr double kFlagMissProbability = 1e-6;

/// ceil(log(1e-6) / log(1 - catch_rate)), catch_rate capped at 0.95: 5 to 20 cases.
int64_t required_witness_cases(const FlagExpectation& f);

/// Tolerance of a Linear o RMSNorm block variant: the bound (docs/bounds.md section 11) that
/// gives its verdict. Sound variants are judged by their own bound; a defect by the bound of the
/// form it claims to implement.
struct BlockToleranceEntry {
  std::string_view variant;
  BlockForm bound;
  double max_ratio;
  Expectation expectation;
  std::string_view justification;
};

/// Tolerance of a port-Hamiltonian check (issue 9): observed / bound must not exceed max_ratio
/// (for "slack", the slack threshold itself). Each entry points at docs/bounds.md section 14.
struct BudgetToleranceEntry {
  std::string_view variant;   ///< kernel variant or "stream"/"oracle"
  std::string_view property;  ///< what is compared
  double max_ratio;
  Expectation expectation;
  std::string_view justification;
};

const std::vector<ToleranceEntry>& tolerance_table();
const std::vector<BudgetToleranceEntry>& budget_tolerance_table();
/// The entry for (variant, property); throws std::logic_error if the table has none.
const BudgetToleranceEntry& budget_tolerance_for(std::string_view variant, std::string_view property);
const std::vector<BlockToleranceEntry>& block_tolerance_table();
const std::vector<FlagExpectation>& flag_expectations();

/// The contracts an external LayerNorm kernel can be judged by (docs/bounds.md section 2.7.5): "auto"
/// (the default: the two-pass contract, and where a kernel fails it the Welford class's, reported as
/// such), "two_pass" (LN-TWOPASS-SEQ alone), "welford" (LN-WELFORDMERGE-ANY alone).
bool is_contract_name(std::string_view name);

/// The looser sound class's bound an external LayerNorm kernel with contract "auto" is measured
/// against where it fails the two-pass contract: LN-WELFORDMERGE-ANY; none for every other kernel.
std::optional<BoundModel> looser_contract_model(const KernelEntry& k);

/// The entry for a kernel; throws std::logic_error if the table has none (a table defect).
const ToleranceEntry& tolerance_for(const KernelEntry& k);

/// The entry for a block variant; throws std::logic_error if the table has none.
const BlockToleranceEntry& block_tolerance_for(std::string_view variant);

/// The kernel's own bound: its statistics model, summation order, storage and accumulator.
BoundModel own_bound_model(const ToleranceEntry& t, const KernelEntry& k);

/// The bound that gives the verdict: the own bound, or the dtype's sound contract.
BoundModel verdict_bound_model(const ToleranceEntry& t, const KernelEntry& k);

}  // namespace normcheck
