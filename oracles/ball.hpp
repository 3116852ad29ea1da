#pragma once
/// A double-precision mid-rad ball: the real value lies in [mid - rad, mid + rad]. Arithmetic in
/// round-to-nearest binary64 with no FMA contraction (the build passes -ffp-contract=off), no
/// directed rounding: every operation's rounding error and the propagated radii are bounded by a
/// radius computed in round-to-nearest and then inflated by `up` (docs/bounds.md section 18 proves
/// each rule). The cheapest level of the oracle's precision cascade: enough to certify f16, bf16 and
/// f32 outputs of well-conditioned rows; a ball that cannot reach the target (or overflows, or
/// divides by a ball containing 0) hands the case to MPFI.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "oracles/sum_of.hpp"

namespace normcheck::oracle {

namespace ball_detail {

inline constexpr double kU = 0x1p-53;       ///< unit roundoff of binary64
inline constexpr double kEta = 0x1p-1074;   ///< smallest subnormal: twice the absolute error bound of an underflowing rounding
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// An upper bound of a nonnegative real R from its value R_hat computed in round-to-nearest by at
/// most 8 roundings of nonnegative operands (sums, products, quotients by positive lower bounds):
/// R <= (R_hat + 8 eta)(1 - u)^-8 <= fl(fl(R_hat + 8 eta)(1 + 2^-48)). NaN stays NaN (unbounded).
inline double up(double r_hat) { return (r_hat + 8 * kEta) * (1 + 0x1p-48); }

/// A lower bound of a positive real a from fl(a): fl(fl(a)(1 - 2u)) <= a(1 + u)^2 (1 - 2u) <= a.
inline double down(double a_hat) { return a_hat * (1 - 2 * kU); }

/// +-2^k in the normal range (its products and quotients are exact scalings unless they underflow).
inline bool is_power_of_two(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint64_t exponent = (bits >> 52) & 0x7ff;
  return (bits & 0xfffffffffffffULL) == 0 && exponent != 0 && exponent != 0x7ff;
}

/// The significand width of a normal double: 53 minus the trailing zeros of its 53-bit significand
/// (1 for a power of two); 64 for 0, subnormals, inf and NaN (so a sum of widths fails every test).
inline int significant_bits(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint64_t exponent = (bits >> 52) & 0x7ff;
  if (exponent == 0 || exponent == 0x7ff) return 64;
  return 53 - __builtin_ctzll((bits & 0xfffffffffffffULL) | (uint64_t{1} << 52));
}

/// m = fl(ab) equals ab exactly: a = A 2^i, b = B 2^j with odd integers A, B of at most 53 bits
/// together, so ab = AB 2^(i + j) with AB below 2^53; |m| >= 2^-1021 makes |ab| > 2^-1022, hence
/// 2^(i + j) > 2^-1075, i + j >= -1074, and ab is a double; a finite m rules out overflow. Products of two
/// f16, bf16 or f32 values (at most 24 bits each, no underflow: |ab| >= 2^-298) are always exact.
inline bool product_is_exact(double a, double b, double m) {
  return significant_bits(a) + significant_bits(b) <= 53 && std::fabs(m) >= 0x1p-1021 && std::fabs(m) < kInf;
}

}  // namespace ball_detail

struct Ball {
  double mid = 0, rad = 0;
  Ball() = default;
  /// An exact double (inputs of the case are exact in their dtype, hence in binary64).
  explicit Ball(double v) : mid(v), rad(0) {}
  Ball(double m, double r) : mid(m), rad(r) {}

  /// Finite midpoint and radius (an overflow or an invalid operation makes the ball unusable).
  bool bounded() const { return std::isfinite(mid) && rad < ball_detail::kInf; }

  Ball& operator+=(const Ball& o) { return *this = *this + o; }
  Ball& operator-=(const Ball& o) { return *this = *this - o; }
  Ball& operator*=(const Ball& o) { return *this = *this * o; }
  Ball& operator/=(const Ball& o) { return *this = *this / o; }

  /// The rounding error of fl(a + b) exactly, by Knuth's TwoSum (a + b = m + e in round-to-nearest
  /// when nothing overflows): an exact sum of exact balls stays exact (sums of bf16 cotangents often
  /// land on a rounding tie of the dtype, which only a zero radius decides).
  friend Ball operator+(const Ball& a, const Ball& b) {
    using namespace ball_detail;
    const double m = a.mid + b.mid;
    const double bb = m - a.mid, e = (a.mid - (m - bb)) + (b.mid - bb);
    if (!std::isfinite(m)) return {m, kInf};
    if (a.rad == 0 && b.rad == 0 && e == 0) return {m, 0.0};
    return {m, up(a.rad + b.rad + std::fabs(e))};
  }
  friend Ball operator-(const Ball& a) { return {-a.mid, a.rad}; }
  friend Ball operator-(const Ball& a, const Ball& b) { return a + (-b); }

  /// |xy - ab| <= |a| rb + ra |b| + ra rb for x in a, y in b; |fl(ab) - ab| <= u |fl(ab)| + eta / 2.
  /// An exact zero times a bounded ball is exactly zero (as in the double-double ball): the normalized
  /// rows of constant inputs, z = 0 r, stay exact, and so do the outputs built from them. A product of
  /// two exact doubles that fl does not round (product_is_exact: inputs of at most 26 bits, such as
  /// gamma dy) is exact too, so that g gamma - mean(g gamma) cancels to an exact 0 at n = 1.
  friend Ball operator*(const Ball& a, const Ball& b) {
    using namespace ball_detail;
    const double m = a.mid * b.mid;
    const bool exact_zero_factor = (a.mid == 0 && a.rad == 0) || (b.mid == 0 && b.rad == 0);
    if (exact_zero_factor && a.bounded() && b.bounded()) return {m, 0.0};
    if (a.rad == 0 && b.rad == 0 && product_is_exact(a.mid, b.mid, m)) return {m, 0.0};
    return {m, up(std::fabs(a.mid) * b.rad + a.rad * std::fabs(b.mid) + a.rad * b.rad + kU * std::fabs(m) + kEta)};
  }

  /// An exact power of two b (rad 0): x / b = a / b + (x - a) / b, exact scalings when a / b does not
  /// underflow (checked by scaling back); the radius ra / |b| is rounded up if it underflows.
  /// Otherwise, for |b.mid| > b.rad: |x/y - a/b| <= (ra + |a/b| rb) / (|b| - rb); |a/b| <= q = fl(fl(|fl(a/b)|(1 + 4u))
  /// + 2 eta); |fl(a/b) - a/b| <= u |fl(a/b)| + eta / 2. The numerator's two roundings may underflow
  /// (eta / 2 each) before the division by d < 1: 2 eta is added before dividing. A divisor ball
  /// containing 0 gives an unbounded ball.
  friend Ball operator/(const Ball& a, const Ball& b) {
    using namespace ball_detail;
    const double m = a.mid / b.mid;
    if (b.rad == 0 && is_power_of_two(b.mid) && m * b.mid == a.mid && a.bounded()) {  // a mean over 2^k elements:
      const double bm = std::fabs(b.mid), r = a.rad / bm;  // an exact scaling (checked by scaling back), and the
      return {m, r * bm == a.rad ? r : up(r)};             // radius too unless it underflows (then rounded up)
    }
    const double d = down(std::fabs(b.mid) - b.rad);  // 0 < d <= |b| - rb
    if (!(d > 0)) return {m, kInf};
    const double q = std::fabs(m) * (1 + 4 * kU) + 2 * kEta;  // >= |a/b|
    return {m, up((a.rad + q * b.rad + 2 * kEta) / d + kU * std::fabs(m) + kEta)};
  }

  /// For a.mid - a.rad > 0: |sqrt(x) - sqrt(a)| = |x - a| / (sqrt(x) + sqrt(a)) <= ra / (2 sqrt(L)) with
  /// L <= a - ra; |fl(sqrt(a)) - sqrt(a)| <= u fl(sqrt(a)). A ball reaching 0 or below is unbounded.
  friend Ball sqrt(const Ball& a) {
    using namespace ball_detail;
    const double m = std::sqrt(a.mid);
    if (a.rad == 0) return {m, up(kU * m)};
    const double low = down(a.mid - a.rad);
    if (!(low > 0)) return {m, kInf};
    const double s = down(std::sqrt(low));  // <= sqrt(L)
    return {m, up(a.rad / (2 * s) + kU * m)};
  }
};

/// A compensated sum of balls (docs/bounds.md section 18, rule S): the running sum s of the
/// midpoints and c, the sum of their exact TwoSum errors (Neumaier; Ogita, Rump and Oishi's Sum2),
/// so that sum(mid) = s + c exactly up to c's own roundings, which are again exact TwoSum errors
/// collected in crad. The radius is sum(rad) + crad + the error of the final s + c: about u |sum|
/// instead of the plain ball's sum_k |fl(s_k) - s_k| (up to n u |partial sums|).
class BallSum {
 public:
  BallSum() = default;
  BallSum& operator+=(const Ball& x) {
    using namespace ball_detail;
    double m = 0;
    const double e = two_sum(s_, x.mid, m);  // s + mid = m + e exactly
    s_ = m;
    over_ |= !std::isfinite(m);
    // Without branches: whether a TwoSum is exact, or a term exact, is data (a coin toss on f32
    // rows). Adding e = 0 leaves c unchanged (c starts at +0 and a cancelling sum is +0 in
    // round-to-nearest, so c is never -0), and the radii take the selected values.
    double cn = 0;
    const double ec = two_sum(c_, e, cn);  // c + e = cn + ec exactly: c's rounding, collected in crad
    c_ = cn;
    const double crad_grown = up(crad_ + std::fabs(ec)), rad_grown = up(rad_ + x.rad);
    crad_ = ec != 0 ? crad_grown : crad_;
    rad_ = x.rad != 0 ? rad_grown : rad_;
    return *this;
  }
  /// The sum: s + c = m + e exactly, |c - sum of the TwoSum errors| <= crad.
  Ball value() const {
    using namespace ball_detail;
    double m = 0;
    const double e = two_sum(s_, c_, m);
    if (over_ || !std::isfinite(m)) return {m, kInf};
    if (rad_ == 0 && crad_ == 0 && e == 0) return {m, 0.0};
    return {m, up(rad_ + crad_ + std::fabs(e))};
  }

 private:
  /// out = fl(a + b); returns a + b - out exactly (Knuth's TwoSum, round-to-nearest, no overflow).
  static double two_sum(double a, double b, double& out) {
    const double m = a + b, bb = m - a;
    out = m;
    return (a - (m - bb)) + (b - bb);
  }
  double s_ = 0, c_ = 0, rad_ = 0, crad_ = 0;
  bool over_ = false;
};

template <>
struct SumOf<Ball> {
  using type = BallSum;
};
inline Ball total(const BallSum& s) { return s.value(); }

}  // namespace normcheck::oracle
