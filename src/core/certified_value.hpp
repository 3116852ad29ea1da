#pragma once
/// An oracle value with its certificate, free of multiprecision types.
#include <cmath>

namespace normcheck {

/// A reference value may judge a kernel only if its certified error is below this fraction of
/// an ULP of the output dtype (DESIGN.md section 5).
inline constexpr double kRequiredUlpFraction = 1e-3;

/// The true value v lies in [(hi + lo - rad) 2^scale, (hi + lo + rad) 2^scale]. The power-of-two
/// scale is nonzero only for tiny values (below 2^-900), so that hi, lo and rad never underflow.
struct CertifiedValue {
  double hi = 0;       ///< round-to-nearest double of the enclosure's midpoint / 2^scale
  double lo = 0;       ///< round-to-nearest double of (midpoint / 2^scale - hi)
  double rad = 0;      ///< certified bound of |v / 2^scale - (hi + lo)|, rounded upward
  int scale = 0;       ///< power-of-two exponent applied to hi, lo and rad
  double rounded = 0;  ///< the midpoint correctly rounded to the case's dtype (unscaled)
  bool rounding_certain = true;  ///< the whole enclosure rounds to `rounded`

  /// Nearest double to the value (may underflow for tiny values).
  double approx() const { return std::ldexp(hi, scale); }
  /// Certified radius in units of `unit` (an ULP, say), free of underflow.
  double rad_in(double unit) const { return rad / std::ldexp(unit, -scale); }
};

}  // namespace normcheck
