#include "oracles/certify_ball.hpp"

#include "core/float_format.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace normcheck::oracle {

namespace {

/// std::nextafter(x, +-inf) by stepping the bit pattern (no libm call in the per-output path).
double step(double x, bool up) {
  if (!(std::fabs(x) < HUGE_VAL)) return std::nextafter(x, up ? HUGE_VAL : -HUGE_VAL);
  if (x == 0) return up ? 0x1p-1074 : -0x1p-1074;
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (x > 0) == up ? bits + 1 : bits - 1;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}
double step_up(double x) { return step(x, true); }
double step_down(double x) { return step(x, false); }

/// The fast test: hi + lo +- rad lies strictly within a quarter ULP of r = round(hi), hence inside r's
/// rounding interval on both sides (the spacing below a power of two is half the one above). |hi - r|
/// is exact (Sterbenz: hi lies within [r/2, 2r]); the factor (1 + 2^-50) covers the sum's two
/// roundings and its own: (1 - u)^4 (1 + 2^-50) > 1. r = 0 and overflow take the slow path (the sign of zero, the
/// threshold).
bool decided_near(double hi, double lo, double rad, DType dtype, double& r) {
  r = round_to_dtype(hi, dtype);
  if (r == 0 || !(std::fabs(r) < HUGE_VAL)) return false;
  const double quarter = ulp_at(r, *dtype_info(dtype).format) / 4;
  return (std::fabs(hi - r) + std::fabs(lo) + rad) * (1 + 0x1p-50) < quarter;
}

/// The bit pattern of 2^k (k in [-1022, 1023]).
constexpr uint64_t pow2_bits(int k) { return static_cast<uint64_t>(k + 1023) << 52; }

double from_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

CertifiedValue unbounded_certificate() {
  CertifiedValue out;
  out.hi = out.rounded = out.rounded_alt = std::numeric_limits<double>::quiet_NaN();
  out.rad = std::numeric_limits<double>::infinity();
  out.rounding_decided = false;
  return out;
}

/// The real value lies in [lower, upper]: rounding is monotone, so equal roundings of the ends decide it.
void decide_between(double lower, double upper, DType dtype, CertifiedValue& out) {
  const double r_low = round_to_dtype(lower, dtype), r_high = round_to_dtype(upper, dtype);
  out.rounded = r_low;
  out.rounded_alt = r_high;
  out.rounding_decided = r_low == r_high;  // -0 == +0
  out.zero_sign_undecided = r_low == 0 && r_high == 0 && std::signbit(r_low) != std::signbit(r_high);
  if (out.zero_sign_undecided) out.rounded = out.rounded_alt = 0.0;
}

/// f64 outputs of a double-double ball: hi is the nearest double of hi + lo; the ball rounds to hi
/// when hi + [lo_down, lo_up] lies strictly between the midpoints to hi's neighbours (half-spacings
/// are exact doubles outside the subnormal range; ties and the overflow edge stay undecided).
void decide_f64(double hi, double lo_down, double lo_up, CertifiedValue& out) {
  const double below = step_down(hi), above = step_up(hi);
  const double half_below = (hi - below) / 2, half_above = (above - hi) / 2;
  const bool normal = std::fabs(hi) >= 0x1p-1020 || hi == 0;
  const bool in_range = std::isfinite(below) && std::isfinite(above);
  const bool low_inside = lo_down > -half_below, high_inside = lo_up < half_above;
  out.rounded = low_inside ? hi : below;
  out.rounded_alt = high_inside ? hi : above;
  out.rounding_decided = normal && in_range && hi != 0 && low_inside && high_inside;
  if (hi == 0) {  // a value near 0: decided only when exactly 0 (lo_down = lo_up = 0 is handled by the caller)
    out.rounded = lo_down;
    out.rounded_alt = lo_up;
  }
}

/// f64 rounding of the exact value hi + lo (lo != 0, |lo| <= half the spacing, hi = RN(hi + lo)).
void decide_f64_exact(double hi, double lo, CertifiedValue& out) {
  const double toward = step(hi, lo > 0);
  const bool tie = std::fabs(hi) >= 0x1p-1020 && std::isfinite(toward) && std::fabs(lo) == std::fabs(toward - hi) / 2;
  uint64_t bits;
  std::memcpy(&bits, &hi, sizeof bits);
  const bool hi_even = (bits & 1) == 0;
  out.rounded = out.rounded_alt = tie && !hi_even ? toward : hi;
  out.rounding_decided = std::fabs(hi) >= 0x1p-1020;  // half-spacings exact; below, MPFI decides
}

}  // namespace

CertifiedValue certify_dd_ball(const DdBall& b, DType dtype) {
  if (!b.bounded()) return unbounded_certificate();
  CertifiedValue out;
  out.hi = b.hi;
  out.lo = b.lo;
  out.rad = b.rad;
  if (b.rad == 0 && b.lo == 0) {  // an exact double: its rounding is decided
    out.rounded = out.rounded_alt = round_to_dtype(b.hi, dtype);
    return out;
  }
  // lo -+ rad as doubles one step outside the real offsets (a rounding moves by at most half a step).
  const double lo_down = step_down(b.lo - b.rad), lo_up = step_up(b.lo + b.rad);
  if (dtype == DType::f64 && b.rad == 0) {  // exactly hi + lo, |lo| <= half a spacing: a tie goes to the even neighbour
    decide_f64_exact(b.hi, b.lo, out);
    return out;
  }
  if (dtype == DType::f64) {
    decide_f64(b.hi, lo_down, lo_up, out);
    return out;
  }
  double r;
  int ulp_exp;
  const double off = (std::fabs(b.lo) + b.rad) * (1 + 0x1p-50);  // >= |lo| + rad: two roundings, (1 - u)^2 (1 + 2^-50) > 1
  if (decided_by_bits(b.hi, off, *dtype_info(dtype).format, r, ulp_exp) || decided_near(b.hi, b.lo, b.rad, dtype, r)) {
    out.rounded = out.rounded_alt = r;
    return out;
  }
  const double lower = step_down(b.hi + lo_down), upper = step_up(b.hi + lo_up);
  if (!std::isfinite(lower) || !std::isfinite(upper)) return unbounded_certificate();
  decide_between(lower, upper, dtype, out);
  return out;
}

void certify_balls_by_bits(const Ball* balls, size_t count, const FloatFormat& f, std::vector<CertifiedValue>& out, bool* decided,
                           double& max_err_ulps) {
  // decided_by_bits with e in [emin, emax]: k = 53 - p is fixed, so are half, its half and the mask.
  const int k = 53 - f.precision;
  const uint64_t half = uint64_t{1} << (k - 1), quarter = half / 2, mask = (uint64_t{1} << k) - 1;
  const uint64_t sign = uint64_t{1} << 63, e_low = static_cast<uint64_t>(f.emin + 1023), e_high = static_cast<uint64_t>(f.emax + 1023);
  const uint64_t e_span = e_high - e_low;
  double max_err = max_err_ulps;
  for (size_t i = 0; i < count; ++i) {
    const double hi = balls[i].mid, rad = balls[i].rad;
    uint64_t bits;
    std::memcpy(&bits, &hi, sizeof bits);
    const uint64_t e_field = (bits >> 52) & 0x7ff;
    bool ok = e_field - e_low <= e_span;  // emin <= e <= emax (unsigned wrap-around below emin)
    double rad_ulps = 0;
    if (ok) {
      // Branch-free: which side of half the low bits lie on is a coin toss, a mispredicted branch per output.
      const uint64_t low = bits & mask, abs_bits = bits & ~sign;
      const uint64_t above = low > half;
      const uint64_t r_abs = (abs_bits & ~mask) + (above << k);
      const int64_t diff = static_cast<int64_t>(low) - static_cast<int64_t>(half), diff_sign = diff >> 63;
      const uint64_t dist = std::min(static_cast<uint64_t>((diff ^ diff_sign) - diff_sign), quarter);  // |low - half|
      const int e = static_cast<int>(e_field) - 1023;
      ok = ((r_abs >> 52) <= e_high) &  // r beyond the largest finite value: declined
           (rad < static_cast<double>(dist) * from_bits(pow2_bits(e - 52)));  // NaN rad: not decided
      if (__builtin_expect(ok, 1)) {
        const double r = from_bits(r_abs | (bits & sign));
        out.emplace_back(hi, 0.0, rad, r);  // in place, each field stored once (a copied temporary stalls on its flags' bytes)
        rad_ulps = rad * from_bits(pow2_bits(f.precision - 1 - e));  // 1 / ULP of the target at hi
        max_err = std::max(max_err, rad_ulps);
      }
    }
    if (!ok) {  // every other case: certify_by_bits in full (zero, subnormal range, the overflow edge), then the caller
      ok = certify_by_bits(hi, 0, rad, f, out.emplace_back(), rad_ulps);
      if (ok) {
        max_err = std::max(max_err, rad_ulps);
      }
    }
    decided[i] = ok;
  }
  max_err_ulps = max_err;
}

CertifiedValue certify_ball(const Ball& b, DType dtype) {
  CertifiedValue out;
  out.hi = b.mid;
  out.rad = b.rad;
  double r;
  int ulp_exp;
  if (b.rad != 0 && decided_by_bits(b.mid, b.rad, *dtype_info(dtype).format, r, ulp_exp)) {  // bounded: m finite, rad below m's spacing
    out.rounded = out.rounded_alt = r;
    return out;
  }
  const double lower = step_down(b.mid - b.rad), upper = step_up(b.mid + b.rad);
  if (!b.bounded() || !std::isfinite(lower) || !std::isfinite(upper)) return unbounded_certificate();
  if (b.rad == 0) {  // an exact double: its rounding is decided
    out.rounded = out.rounded_alt = round_to_dtype(b.mid, dtype);
    return out;
  }
  if (decided_near(b.mid, 0.0, b.rad, dtype, r)) {
    out.rounded = out.rounded_alt = r;
    return out;
  }
  decide_between(lower, upper, dtype, out);
  return out;
}

}  // namespace normcheck::oracle
