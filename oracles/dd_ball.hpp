#pragma once
/// A double-double mid-rad ball: the real value lies in [M - rad, M + rad] with M = hi + lo exactly
/// (|lo| <= half an ULP of hi, so hi is the nearest double of M). The second level of the oracle's
/// precision cascade: a 106-bit midpoint certifies f64 outputs and the cancellations the double ball
/// (oracles/ball.hpp) cannot resolve. Same assumptions as the double ball: binary64 round-to-nearest,
/// no FMA contraction (-ffp-contract=off), gradual underflow, no directed rounding. The high parts are
/// computed by error-free transformations (TwoSum, Dekker's product); the low-order operations'
/// rounding errors and the propagated radii go into a radius rounded up by `up_many`. Every rule is
/// proved in docs/bounds.md section 18.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "oracles/ball.hpp"

namespace normcheck::oracle {

namespace dd_detail {

using ball_detail::kEta;
using ball_detail::kInf;
using ball_detail::kU;

/// An upper bound of a nonnegative real R from its value computed in round-to-nearest by at most 30
/// roundings of nonnegative operands: R <= (R_hat + 15 eta)(1 - u)^-30 <= fl(fl(R_hat + 16 eta)(1 + 2^-46)).
inline double up_many(double r_hat) { return (r_hat + 16 * kEta) * (1 + 0x1p-46); }

/// Knuth's TwoSum: s + e = a + b exactly (no overflow).
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

/// Veltkamp's split: a = h + l exactly with h, l of at most 26 bits (|a| <= 2^995).
inline void split(double a, double& h, double& l) {
  const double c = 134217729.0 * a;  // 2^27 + 1
  h = c - (c - a);
  l = a - h;
}

/// Dekker's product: p + e = a b exactly. Operands above 2^995 (whose split would overflow) are first
/// scaled by 2^-64 and the scaled product's error term scaled back up (exact: powers of two, no
/// underflow). Exact when the scaled product is at least 2^-960 in magnitude (exponent sum above
/// e_min + 52, Boldo 2006) and p is finite; otherwise `exact` is false and e is 0 (the caller then
/// bounds |ab - p| by u|p| + eta/2).
inline void two_prod(double a, double b, double& p, double& e, bool& exact) {
  p = a * b;
  e = 0;
  if (a == 0 || b == 0) {
    exact = true;
    return;
  }
  double as = a, bs = b, back = 1;
  if (std::fabs(as) > 0x1p995) {
    as *= 0x1p-64;
    back *= 0x1p64;
  }
  if (std::fabs(bs) > 0x1p995) {
    bs *= 0x1p-64;
    back *= 0x1p64;
  }
  const double ps = as * bs;  // = p / back exactly when p is finite and normal
  exact = std::isfinite(p) && std::fabs(ps) >= 0x1p-960;
  if (!exact) return;
  double ah, al, bh, bl;
  split(as, ah, al);
  split(bs, bh, bl);
  e = (((ah * bh - ps) + ah * bl + al * bh) + al * bl) * back;
}

/// An exact power of two in the normal range (its products and quotients are exact scalings).
using ball_detail::is_power_of_two;

}  // namespace dd_detail

struct DdBall {
  double hi = 0, lo = 0, rad = 0;
  DdBall() = default;
  /// An exact double (inputs of the case are exact in their dtype, hence in binary64).
  explicit DdBall(double v) : hi(v) {}
  DdBall(double h, double l, double r) : hi(h), lo(l), rad(r) {}

  /// Finite midpoint and radius (an overflow or an invalid operation makes the ball unusable).
  bool bounded() const { return std::isfinite(hi) && std::isfinite(lo) && rad < dd_detail::kInf; }
  /// |M| <= abs_upper() (one rounding of a sum of nonnegatives, inflated).
  double abs_upper() const { return (std::fabs(hi) + std::fabs(lo)) * (1 + 4 * dd_detail::kU); }

  DdBall& operator+=(const DdBall& o) { return *this = *this + o; }
  DdBall& operator-=(const DdBall& o) { return *this = *this - o; }
  DdBall& operator*=(const DdBall& o) { return *this = *this * o; }
  DdBall& operator/=(const DdBall& o) { return *this = *this / o; }

  friend DdBall operator-(const DdBall& a) { return {-a.hi, -a.lo, a.rad}; }

  /// An exact power of two (rad = lo = 0).
  bool exact_power_of_two() const { return rad == 0 && lo == 0 && dd_detail::is_power_of_two(hi); }
  /// This ball times (or divided by) the power of two s: exact when neither part underflows (checked
  /// by scaling back), the radius scaled and rounded up; otherwise an unbounded ball (the cascade
  /// falls through).
  DdBall scaled(double s, bool divide) const {
    const double h = divide ? hi / s : hi * s, l = divide ? lo / s : lo * s;
    const bool exact = (divide ? h * s == hi && l * s == lo : h / s == hi && l / s == lo) && std::isfinite(h);
    if (!exact) return {h, l, dd_detail::kInf};
    const double r = divide ? rad / s : rad * s;
    return {h, l, rad == 0 ? 0.0 : dd_detail::up_many(std::fabs(r))};
  }
  friend DdBall operator-(const DdBall& a, const DdBall& b) { return a + (-b); }

  /// (a.hi + b.hi) + (a.lo + b.lo) = s + e + t + f exactly by two TwoSums; e + t + f is summed by two
  /// more TwoSums whose errors g1, g2 are dropped into the radius (exactly 0 when nothing was lost).
  [[gnu::always_inline]] friend DdBall operator+(const DdBall& a, const DdBall& b) {
    using namespace dd_detail;
    double s, e, t, f, e2, g1, e3, g2, h, l;
    two_sum(a.hi, b.hi, s, e);
    two_sum(a.lo, b.lo, t, f);
    two_sum(e, t, e2, g1);
    two_sum(e2, f, e3, g2);
    two_sum(s, e3, h, l);
    if (!std::isfinite(h) || !std::isfinite(l)) return {h, l, kInf};
    if (a.rad == 0 && b.rad == 0 && g1 == 0 && g2 == 0) return {h, l, 0.0};
    return {h, l, up_many(a.rad + b.rad + std::fabs(g1) + std::fabs(g2))};
  }

  /// (a.hi + a.lo)(b.hi + b.lo) = p + e + c1 + c2 + c3 with p + e = a.hi b.hi exactly (Dekker); the
  /// cross terms and their sum are rounded (u|result| + eta per product, u|result| per sum).
  [[gnu::always_inline]] friend DdBall operator*(const DdBall& a, const DdBall& b) {
    using namespace dd_detail;
    if (b.exact_power_of_two()) return a.scaled(b.hi, false);
    if (a.exact_power_of_two()) return b.scaled(a.hi, false);
    double p, e;
    bool exact;
    two_prod(a.hi, b.hi, p, e, exact);
    const double c1 = a.hi * b.lo, c2 = a.lo * b.hi, c3 = a.lo * b.lo;
    const double t = c1 + c2, t2 = t + c3, t3 = e + t2;
    double h, l;
    two_sum(p, t3, h, l);
    if (!std::isfinite(h) || !std::isfinite(l)) return {h, l, kInf};
    // c1 = c2 = c3 = 0 and t3 = e exactly; a zero factor (hi = 0 implies lo = 0) gives the midpoint 0 exactly.
    const bool a_zero = a.hi == 0, b_zero = b.hi == 0;
    const bool mid_exact = (exact && a.lo == 0 && b.lo == 0) || a_zero || b_zero;
    const bool nothing_propagated = (a_zero || b.rad == 0) && (b_zero || a.rad == 0) && (a.rad == 0 || b.rad == 0);
    if (mid_exact && nothing_propagated) return {h, l, 0.0};
    const double rounding = mid_exact ? 0.0
                                      : kU * (std::fabs(c1) + std::fabs(c2) + std::fabs(c3) + std::fabs(t) + std::fabs(t2) +
                                              std::fabs(t3)) + 3 * kEta + (exact ? 0.0 : kU * std::fabs(p) + kEta);
    const double propagated = a.abs_upper() * b.rad + a.rad * b.abs_upper() + a.rad * b.rad;
    return {h, l, up_many(propagated + rounding)};
  }

  /// For y in B with |y| >= d > 0: |x/y - Q| = |x - Q y| / |y| <= (|A - Q B| + ra + |Q| rb) / d, where
  /// A - Q B is evaluated as a ball (rigorous). Q is one Newton correction of a.hi / b.hi.
  friend DdBall operator/(const DdBall& a, const DdBall& b) {
    using namespace dd_detail;
    const double d = ball_detail::down(ball_detail::down(std::fabs(b.hi) - std::fabs(b.lo)) - b.rad);
    if (!(d > 0) || !a.bounded() || !b.bounded()) return {a.hi / b.hi, 0.0, kInf};
    if (b.exact_power_of_two()) return a.scaled(b.hi, true);  // a mean over 2^k elements
    const DdBall a_mid(a.hi, a.lo, 0), b_mid(b.hi, b.lo, 0);
    const double q1 = a.hi / b.hi;
    const DdBall r1 = a_mid - DdBall(q1) * b_mid;
    double qh, ql;
    two_sum(q1, r1.hi / b.hi, qh, ql);
    const DdBall q(qh, ql, 0);
    const DdBall residual = a_mid - q * b_mid;
    if (!residual.bounded()) return {qh, ql, kInf};
    if (residual.hi == 0 && residual.lo == 0 && residual.rad == 0 && a.rad == 0 && b.rad == 0) return {qh, ql, 0.0};  // Q B = A exactly
    const double num = up_many(residual.abs_upper() + residual.rad + a.rad + q.abs_upper() * b.rad);
    return {qh, ql, up_many(num / d)};
  }

  /// For x in A, x >= L > 0: |sqrt(x) - S| = |x - S^2| / (sqrt(x) + S) <= (|A - S^2| + ra) / S_low, with
  /// A - S S evaluated as a ball and 0 < S_low <= S. S is one Newton correction of sqrt(a.hi).
  friend DdBall sqrt(const DdBall& a) {
    using namespace dd_detail;
    const double low = ball_detail::down(ball_detail::down(a.hi - std::fabs(a.lo)) - a.rad);
    if (!(low > 0) || !a.bounded()) return {std::sqrt(a.hi), 0.0, kInf};
    const DdBall a_mid(a.hi, a.lo, 0);
    const double s1 = std::sqrt(a.hi);
    const DdBall r1 = a_mid - DdBall(s1) * DdBall(s1);
    double sh, sl;
    two_sum(s1, r1.hi / (2 * s1), sh, sl);
    const DdBall s(sh, sl, 0);
    const DdBall residual = a_mid - s * s;
    const double s_low = ball_detail::down(ball_detail::down(sh - std::fabs(sl)));
    if (!residual.bounded() || !(s_low > 0)) return {sh, sl, kInf};
    if (residual.hi == 0 && residual.lo == 0 && residual.rad == 0 && a.rad == 0) return {sh, sl, 0.0};  // S^2 = A exactly
    const double num = up_many(residual.abs_upper() + residual.rad + a.rad);
    return {sh, sl, up_many(num / s_low)};
  }
};

}  // namespace normcheck::oracle
