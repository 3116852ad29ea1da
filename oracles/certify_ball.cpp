#include "oracles/certify_ball.hpp"

#include <cmath>
#include <limits>

namespace normcheck::oracle {

CertifiedValue certify_ball(const Ball& b, DType dtype) {
  CertifiedValue out;
  const double lower = std::nextafter(b.mid - b.rad, -HUGE_VAL), upper = std::nextafter(b.mid + b.rad, HUGE_VAL);
  if (!b.bounded() || !std::isfinite(lower) || !std::isfinite(upper)) {
    out.hi = out.rounded = out.rounded_alt = std::numeric_limits<double>::quiet_NaN();
    out.rad = std::numeric_limits<double>::infinity();
    out.rounding_decided = false;
    return out;
  }
  out.hi = b.mid;
  out.rad = b.rad;
  if (b.rad == 0) {  // an exact double: its rounding is decided
    out.rounded = out.rounded_alt = round_to_dtype(b.mid, dtype);
    return out;
  }
  // The real value lies in [lower, upper]: rounding is monotone, so equal roundings of the ends decide it.
  const double r_low = round_to_dtype(lower, dtype), r_high = round_to_dtype(upper, dtype);
  out.rounded = r_low;
  out.rounded_alt = r_high;
  out.rounding_decided = r_low == r_high;  // -0 == +0
  out.zero_sign_undecided = r_low == 0 && r_high == 0 && std::signbit(r_low) != std::signbit(r_high);
  if (out.zero_sign_undecided) out.rounded = out.rounded_alt = 0.0;
  return out;
}

}  // namespace normcheck::oracle
