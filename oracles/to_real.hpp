#pragma once
/// Lifting the case's exact doubles to the oracle's Real, for the formulas that convert an input
/// once per case instead of at each use (issue 17 item 2: the same values, the conversions exact).
#include <vector>

namespace normcheck::oracle {

/// Lifts exact doubles to Real.
template <class Real>
std::vector<Real> to_real(const std::vector<double>& v) {
  std::vector<Real> out;
  out.reserve(v.size());
  for (double d : v) out.emplace_back(d);
  return out;
}

}  // namespace normcheck::oracle
