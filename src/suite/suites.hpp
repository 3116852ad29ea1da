#pragma once
/// Named suites, defined as data.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suite/block_suite.hpp"
#include "suite/budget_suite.hpp"
#include "suite/contraction_suite.hpp"
#include "suite/grouped_suite.hpp"
#include "suite/jvp_suite.hpp"
#include "suite/runner.hpp"

namespace normcheck {

struct SuiteDef {
  std::string_view name;
  int version;  ///< bumped whenever the suite's cases change: reports of other versions are not compared
  std::string_view description;
  int cases_per_generator;
  int64_t max_elements;
  uint64_t seed;
  int block_cases_per_generator;  ///< Linear o RMSNorm block cases per block generator and dtype
  int contraction_cases_per_generator;  ///< QR-contraction cases per contraction generator and dtype
  int grouped_cases_per_layout;  ///< batch/group/instance norm cases per kind, layout and dtype
  int budget_cases_per_dtype;    ///< port-Hamiltonian stream cases per dtype (issue 9)
  int jvp_cases_per_generator;   ///< LayerNorm JVP cases per row generator and dtype (issue 15)
  std::vector<std::string_view> ops = {};         ///< what --ops selects when not given (empty: every section)
  std::vector<DType> dtypes = {};                 ///< empty: every dtype
  std::vector<std::string_view> generators = {};  ///< per-op row generators (empty: all, the corpus first)
  int64_t rows = 0, n = 0;                        ///< a fixed shape (0: the generator picks under max_elements)
};

/// The suite named `name`, or null.
const SuiteDef* find_suite(std::string_view name);

const std::vector<SuiteDef>& suites();

/// The run configuration of a named suite (all ops, dtypes, variants, generators); nullopt if unknown.
std::optional<RunConfig> suite_config(std::string_view name);

/// The LayerNorm JVP suite of a named suite (both built-in JVP kernels, every dtype and row generator).
std::optional<JvpSuiteConfig> suite_jvp_config(std::string_view name);

/// The block suite of a named suite (every block variant, dtype and block generator).
std::optional<BlockSuiteConfig> suite_block_config(std::string_view name);

/// The QR-contraction suite of a named suite (every dtype and contraction generator).
std::optional<ContractionSuiteConfig> suite_contraction_config(std::string_view name);

/// The grouped-normalization suite of a named suite.
std::optional<GroupedSuiteConfig> suite_grouped_config(std::string_view name);

/// The port-Hamiltonian budget section of a named suite (random stream cases, no growth table).
std::optional<BudgetSuiteConfig> suite_budget_config(std::string_view name);

}  // namespace normcheck
