#pragma once
#include <array>
#include <string_view>

namespace normcheck {

/// The verdicts that fail a must-pass record, in every section ("uncertified" judged no element: it is
/// reported, not failed; "flagged" is a known-weak kernel caught as expected). The one list: the
/// terminal, JUnit, diff, render, inline report inputs and the Python module read it.
/// "nondeterministic" and "batch_variant" are the batch_invariance section's (issue 44): accurate or not,
/// the same row gave other bits on a repeated call or in another batch.
inline constexpr std::array<std::string_view, 5> kFailingVerdicts{"fail", "own_bound_violated", "kernel_failure", "nondeterministic",
                                                                  "batch_variant"};
inline bool is_failing_verdict(std::string_view verdict) {
  for (std::string_view v : kFailingVerdicts)
    if (v == verdict) return true;
  return false;
}

}  // namespace normcheck
