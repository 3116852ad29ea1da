#pragma once
/// An oracle value with its certificate, free of multiprecision types.
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <initializer_list>

#include "core/dtype.hpp"
#include "core/float_format.hpp"

namespace normcheck {

/// A reference value may judge a kernel only if its certified error is below this fraction of
/// an ULP of the output dtype (DESIGN.md section 5).
inline constexpr double kRequiredUlpFraction = 1e-3;

/// The true value v lies in [(hi + lo - rad) 2^scale, (hi + lo + rad) 2^scale]. The power-of-two
/// scale is nonzero only for tiny values (below 2^-900) and huge ones (at or above 2^1000), so
/// that hi, lo and rad never underflow or overflow.
struct CertifiedValue {
  double hi = 0;       ///< round-to-nearest double of the enclosure's midpoint / 2^scale
  double lo = 0;       ///< round-to-nearest double of (midpoint / 2^scale - hi)
  double rad = 0;      ///< certified bound of |v / 2^scale - (hi + lo)|, rounded upward
  int scale = 0;       ///< power-of-two exponent applied to hi, lo and rad
  // The two flags sit beside `scale`, in its padding: 48 bytes, not 56 (the certifiers write millions).
  bool rounding_decided = true;  ///< the whole enclosure rounds to one dtype value
  /// The enclosure straddles 0 and rounds to zero on both sides: the value (0) is decided, its sign
  /// is not. The sign of zero is not judged (docs/bounds.md section 6), so this never escalates.
  bool zero_sign_undecided = false;
  /// The correct rounding of v to the case's dtype (unscaled; +-inf when v overflows the dtype).
  /// Decided when the whole enclosure rounds to one value; otherwise the rounding of its lower end.
  double rounded = 0;
  /// The rounding of the enclosure's upper end: equal to `rounded` when the rounding is decided,
  /// the other candidate when the enclosure straddles a rounding boundary (a tie between two dtype
  /// values, or the overflow threshold) even at the oracle's top precision.
  double rounded_alt = 0;

  CertifiedValue() = default;
  /// A certificate whose rounding is decided: the enclosure hi + lo -+ rad (scale 0) rounds to
  /// `rounded`. Built in place (emplace_back) it stores each field once.
  CertifiedValue(double hi_, double lo_, double rad_, double rounded_)
      : hi(hi_), lo(lo_), rad(rad_), rounded(rounded_), rounded_alt(rounded_) {}

  /// Nearest double to the value (0 for values below 2^-1075, +-inf at or above 2^1024).
  double approx() const { return scale == 0 ? hi : scale_by_pow2(hi, scale); }
  /// Certified radius in units of `unit` (an ULP, say), free of underflow.
  double rad_in(double unit) const { return rad / (scale == 0 ? unit : scale_by_pow2(unit, -scale)); }
  /// True when the enclosure is unbounded or meaningless (an overflow or NaN inside MPFR itself).
  bool unbounded() const { return !std::isfinite(hi) || !(rad < HUGE_VAL); }
};
static_assert(sizeof(CertifiedValue) == 48, "the flags belong in scale's padding");

/// Ziv's stopping rule for an oracle's precision escalation: every radius is within
/// kRequiredUlpFraction of an ULP (`certified`) and every rounding to the dtype is decided.
template <class Result>
bool accepted(const Result& r) {
  return r.certified && r.undecided_roundings == 0;
}

/// Evaluates `levels` in order (increasing precision) and returns the first accepted result, or
/// the last one. Result needs `certified` and `undecided_roundings` members.
/// The same from level `first` on.
template <class Result, class... Params, class... Args>
Result escalate_from_level(size_t first, std::initializer_list<Result (*)(Params...)> levels, const Args&... args) {
  Result r;
  for (auto level = levels.begin() + first; level != levels.end(); ++level) {
    r = (*level)(args...);
    if (accepted(r)) break;
  }
  return r;
}

template <class Result, class... Params, class... Args>
Result escalate_until_accepted(std::initializer_list<Result (*)(Params...)> levels, const Args&... args) {
  return escalate_from_level(0, levels, args...);
}

/// The first level of a precision cascade that starts with the double ball (docs/bounds.md section
/// 18): 1, the double-double ball, for f64 outputs (a 53-bit midpoint cannot reach 1e-3 ULP of a
/// double unless every output is exact), else 0.
inline size_t first_cascade_level(DType output) { return output == DType::f64 ? 1 : 0; }

}  // namespace normcheck
