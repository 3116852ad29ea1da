#pragma once
/// Tolerances as data: which bound judges each (op, variant, storage, accumulator), and which
/// known-weak kernels the harness must catch. Entries and justifications: tolerance_table.cpp.
#include <string_view>
#include <vector>

#include "core/bounds.hpp"
#include "kernels/registry.hpp"

namespace normcheck {

enum class Expectation { must_pass, report_only };

struct ToleranceEntry {
  std::string_view op;        ///< op name, "*" for any
  std::string_view variant;   ///< kernel variant
  std::string_view storage;   ///< dtype name, "*" for any
  std::string_view metric;    ///< what is compared with max_ratio
  std::string_view bound_id;  ///< identifier of the bound in docs/bounds.md
  StatsModel stats;           ///< statistics model the bound assumes
  bool bound_uses_default_accum;  ///< judge with the sound policy's accumulator, not the kernel's
  double max_ratio;           ///< observed error / bound must not exceed this
  Expectation expectation;
  std::string_view justification;
};

/// A known-weak kernel that the harness must flag (at least one failing case) on a generator.
struct FlagExpectation {
  std::string_view variant;
  std::string_view storage;    ///< "*" for any dtype
  std::string_view generator;  ///< "*" for any generator
  std::string_view why;
};

const std::vector<ToleranceEntry>& tolerance_table();
const std::vector<FlagExpectation>& flag_expectations();

/// The entry for a kernel; throws std::logic_error if the table has none (a table defect).
const ToleranceEntry& tolerance_for(const KernelEntry& k);

/// The bound model a tolerance entry implies for kernel k.
BoundModel bound_model_for(const ToleranceEntry& t, const KernelEntry& k);

}  // namespace normcheck
