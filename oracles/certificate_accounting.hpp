#pragma once
/// Ziv's rule per output: an output is accepted when its enclosure is bounded, its radius is within
/// kRequiredUlpFraction of an ULP of the dtype at its value, and its rounding to the dtype is decided.
/// The accounting every oracle result keeps over its outputs (max error in ULPs, count of undecided
/// roundings), shared by the certification of each level and the cascade's row splicing.
#include <algorithm>
#include <cmath>

#include "core/certified_value.hpp"
#include "core/float_format.hpp"

namespace normcheck::oracle {

/// The certified radius of `cv` in ULPs of the dtype of `fmt` (infinite when unbounded).
inline double radius_in_ulps(const CertifiedValue& cv, const FloatFormat& fmt) {
  return cv.unbounded() ? HUGE_VAL : cv.rad_in(ulp_at(cv.approx(), fmt));
}

inline bool element_accepted(const CertifiedValue& cv, const FloatFormat& fmt) {
  return cv.rounding_decided && radius_in_ulps(cv, fmt) <= kRequiredUlpFraction;
}

/// Folds one output into a result's max_err_ulps and undecided_roundings.
template <class Result>
void account_element(const CertifiedValue& cv, const FloatFormat& fmt, Result& out) {
  out.max_err_ulps = std::max(out.max_err_ulps, radius_in_ulps(cv, fmt));
  if (!cv.rounding_decided) ++out.undecided_roundings;
}

}  // namespace normcheck::oracle
