#pragma once
/// The certificate of a double ball (oracles/ball.hpp) or double-double ball (oracles/dd_ball.hpp):
/// its midpoint and radius, and its rounding to the dtype decided first on the bits of the midpoint
/// (rule C, inline) and otherwise by Ziv's test on doubles just outside the ball.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/certified_value.hpp"
#include "core/float_format.hpp"
#include "core/dtype.hpp"
#include "oracles/ball.hpp"
#include "oracles/dd_ball.hpp"

namespace normcheck::oracle {

/// Rule C of docs/bounds.md section 18, on the bits of m (f16, bf16 and f32 targets): m a normal
/// double of binade e <= emax, where the target's spacing is 2^k double ULPs of m (k = 53 - precision
/// in the target's normal binades, k = 53 - precision + emin - e in its subnormal range, at most 52:
/// m at least the target's smallest subnormal). Its k low mantissa bits `low` against half = 2^(k-1) give
/// r = round(m) (truncate, or add 2^k: a carry into the exponent is the next binade's power of two),
/// and the boundary between r and the neighbour across m lies |low - half| ULPs of m away; every other
/// rounding boundary lies at least half/2 ULPs away (half/2 below a power of two, where the spacing
/// halves). So no boundary lies within min(|low - half|, half/2) ULPs of m, an exact double (an integer
/// below 2^52 times a power of two), and every value within off of m rounds to r. On success r is set
/// and ulp_exp = max(e, emin) - (precision - 1), the exponent of the target's ULP at m. m on a boundary
/// (low = half: the distance is 0, never decided here), r beyond the largest finite value
/// (2^(emax + 1)), m beyond emax, below the target's smallest subnormal, 0, a subnormal double, inf
/// or NaN, and binary64 targets take the slower tests (certify_by_bits decides exact zeros itself).
inline bool decided_by_bits(double m, double off, const FloatFormat& f, double& r, int& ulp_exp) {
  uint64_t bits;
  std::memcpy(&bits, &m, sizeof bits);
  const int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // -1023: 0 or subnormal; 1024: inf or NaN
  const int k = 53 - f.precision + std::max(0, f.emin - e);      // the target's subnormals: a fixed spacing
  if (e < -1022 || e > f.emax || f.precision >= 53 || k > 52) return false;
  const uint64_t half = uint64_t{1} << (k - 1), mask = (uint64_t{1} << k) - 1, low = bits & mask;
  const uint64_t r_bits = (bits & ~mask) + (low > half ? uint64_t{1} << k : 0);
  if (static_cast<int>((r_bits >> 52) & 0x7ff) - 1023 > f.emax) return false;  // r = 2^(emax + 1): overflows the target
  const uint64_t dist = std::min(low > half ? low - half : half - low, half / 2);
  const double unit = float_format_detail::pow2(e - 52);  // normal: k <= 52 gives e >= emin - precision + 1 >= -149
  if (!(off < static_cast<double>(dist) * unit)) return false;  // NaN or infinite off: not decided here
  std::memcpy(&r, &r_bits, sizeof r);
  ulp_exp = std::max(e, f.emin) - (f.precision - 1);
  return true;
}

/// Rule C for binary64 targets (the double-double ball): hi + lo -+ off rounds to hi when off (a bound
/// of |lo| + rad) is below the distance from hi to its rounding boundaries: half a spacing above and
/// below, a quarter below a power of two. Only for binades e in [-960, 1022], where that distance and
/// the ULP's inverse are normal doubles and hi's neighbours are finite; ulp_exp = e - 52.
inline bool decided_f64_by_bits(double hi, double off, double& r, int& ulp_exp) {
  uint64_t bits;
  std::memcpy(&bits, &hi, sizeof bits);
  const int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  if (e < -960 || e > 1022) return false;
  const bool power_of_two = (bits & ((uint64_t{1} << 52) - 1)) == 0;
  if (!(off < float_format_detail::pow2(e - (power_of_two ? 54 : 53)))) return false;
  r = hi;
  ulp_exp = e - 52;
  return true;
}

/// out = the decided certificate (hi, lo, rad, scale 0, rounding r), field by field: assigning a
/// whole CertifiedValue{} built on the stack reloaded its two flags as one 16-bit word just after
/// storing them as bytes (a store-forwarding stall: a third of the double ball's certification).
inline void set_decided(CertifiedValue& out, double hi, double lo, double rad, double r) {
  out.hi = hi;
  out.lo = lo;
  out.rad = rad;
  out.scale = 0;
  out.rounded = out.rounded_alt = r;
  out.rounding_decided = true;
  out.zero_sign_undecided = false;
}

/// The certificate of a ball with midpoint hi + lo and radius rad (lo = 0 for the double ball) when
/// rule C decides it, with its radius in ULPs of the target: the same
/// certificate as certify_ball / certify_dd_ball and the same radius as radius_in_ulps (rad times
/// the exact power of two 1 / ULP), without their calls. False: use those.
inline bool certify_by_bits(double hi, double lo, double rad, const FloatFormat& f, CertifiedValue& out, double& rad_ulps) {
  if (hi == 0 && lo == 0 && rad == 0) {  // an exact zero: rounds to itself, radius 0
    set_decided(out, hi, 0, 0, hi);
    rad_ulps = 0;
    return true;
  }
  if (hi == 0 && lo == 0 && f.precision < 53) {  // [-rad, rad] with rad below half the smallest subnormal: the value
    if (!(rad < float_format_detail::pow2(f.emin - f.precision))) return false;  // rounds to 0, its sign undecided (not judged)
    set_decided(out, hi, 0, rad, 0.0);
    out.zero_sign_undecided = true;
    rad_ulps = rad * float_format_detail::pow2(f.precision - 1 - f.emin);  // 1 / ulp(0), the smallest subnormal's inverse
    return true;
  }
  const double off = lo == 0 ? rad : (std::fabs(lo) + rad) * (1 + 0x1p-50);  // >= |lo| + rad: (1 - u)^2 (1 + 2^-50) > 1
  double r;
  int ulp_exp;
  const bool decided = f.precision == 53 ? decided_f64_by_bits(hi, off, r, ulp_exp) : decided_by_bits(hi, off, f, r, ulp_exp);
  if (!decided) return false;
  set_decided(out, hi, lo, rad, r);
  rad_ulps = rad * float_format_detail::pow2(-ulp_exp);  // ulp_exp in [emin - precision + 1, emax - precision + 1]
  return true;
}

/// The certificates of a run of double balls for one target of at most 24 bits (f16, bf16, f32),
/// appended to out: exactly what certify_by_bits gives, with rule C's common case inline (a normal
/// midpoint in the target's normal binades, the format's constants hoisted out of the loop).
/// `decided[i]` says whether rule C decided ball i (its radius in ULPs is then folded into
/// max_err_ulps); the others are left for certify_ball.
void certify_balls_by_bits(const Ball* balls, size_t count, const FloatFormat& f, std::vector<CertifiedValue>& out, bool* decided,
                           double& max_err_ulps);

/// hi = mid, lo = 0, rad = rad, scale 0; rounded / rounded_alt from the doubles one step outside
/// mid -+ rad (below and above the real endpoints whatever the rounding of mid -+ rad); an
/// unbounded ball (overflow, NaN, a division by a ball containing 0) gives an unbounded certificate.
CertifiedValue certify_ball(const Ball& b, DType dtype);

/// hi, lo, rad of the double-double ball, scale 0. For f16, bf16 and f32 the rounding is decided as
/// for the double ball, on doubles just outside hi + (lo -+ rad); for f64 when hi + lo -+ rad lie
/// strictly inside hi's rounding interval (hi -+ half the spacing to its neighbours).
CertifiedValue certify_dd_ball(const DdBall& b, DType dtype);

}  // namespace normcheck::oracle
