#pragma once
/// Arithmetic of the a priori double level (docs/bounds.md section 18.2): the double ball's
/// midpoints computed as plain doubles, operation for operation, with radii from error bounds
/// derived once per row instead of a running radius per operation. Same assumptions as the ball
/// (round-to-nearest binary64, no FMA contraction, gradual underflow).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "oracles/ball.hpp"

namespace normcheck::oracle::a_priori {

using ball_detail::down;
using ball_detail::kEta;
using ball_detail::kU;
using ball_detail::up;

/// gamma_k = k u / (1 - k u), rounded up (k u < 1/2: k below 2^52).
inline double gamma_up(int64_t k) {
  const double ku = static_cast<double>(k) * kU;  // exact: an integer below 2^53 times a power of two
  return up(ku / down(1 - ku));
}

/// 2 gamma_{k-1}^2, rounded up: the second-order term of sum_error for k terms.
inline double sum2_factor(int64_t k) {
  const double g = gamma_up(k > 1 ? k - 1 : 0);
  return up(2 * g * g);
}

/// 1 / (1 - gamma_{k-1}), rounded up: the exact sum of k nonnegative doubles is at most this times
/// their sum in round-to-nearest (each addition loses at most the factor 1 - u, and adding
/// nonnegatives never underflows), so sum |t| <= abs_sum_factor(k) A for Sum2's abs_sum() A.
inline double abs_sum_factor(int64_t k) { return up(1 / down(1 - gamma_up(k > 1 ? k - 1 : 0))); }

/// gamma_k / (1 - gamma_k), rounded up: the relative error c_theta of section 18.2's VJP products
/// against their exact value, as a factor of the exact value's magnitude turned into one of the
/// computed value's (|t| <= (|fl t| + eta-terms) / (1 - gamma_k) when fl t = t (1 + theta) + eta-terms).
inline double gamma_ratio_up(int64_t k) {
  const double g = gamma_up(k);
  return up(g / down(1 - g));
}

/// The smallest E with E >= e + rho' (s + E), rho' = rho / (1 - rho), rounded up: (e + rho' s) / (1 - rho').
/// A row sum whose every term carries the common factor r_m = r (1 + delta), |delta| <= rho', has
/// error e plus rho' times the exact sum's magnitude, at most s = |computed sum| + E (section 18.2, VJP).
/// rho <= 2^-20.
inline double with_common_factor(double e, double rho, double s) {
  const double rho1 = up(rho / down(1 - rho));
  return up(up(e + rho1 * s) / down(1 - rho1));
}

/// Whether every element of v is 0 or has at most 26 significant bits and a magnitude in
/// [2^-500, 2^501): then the product of any two such values is an exact double (at most 52 bits, no
/// underflow or overflow). True for the values of every storage dtype but f64 (section 18.2: the
/// VJP's g = gamma dy is then exact). Branch-free, one pass.
inline bool narrow(const std::vector<double>& v) {
  uint64_t low_bits = 0;  // the low 27 significand bits of every element, or-ed (vectorizes)
  bool out_of_range = false;  // a nonzero magnitude outside [2^-500, 2^501), or NaN
  for (double e : v) {
    uint64_t bits;
    std::memcpy(&bits, &e, sizeof bits);
    low_bits |= bits & ((uint64_t{1} << 27) - 1);
    const double a = std::fabs(e);
    out_of_range |= (a != 0) & !((a >= 0x1p-500) & (a < 0x1p501));
  }
  return low_bits == 0 && !out_of_range;
}

/// Algorithm Sum2 of Ogita, Rump and Oishi (2005), with exactly the operations of BallSum's
/// midpoint (TwoSum of the running sum, the errors summed plainly, then s + c), so its value is the
/// double ball's midpoint bit for bit; and the plain sum of the terms' magnitudes.
class Sum2 {
 public:
  void add(double t) {
    const double m = s_ + t, bb = m - s_, e = (s_ - (m - bb)) + (t - bb);
    s_ = m;
    // Without a branch (whether a TwoSum is exact is data, a coin toss for some rows): adding an
    // exact zero leaves c unchanged, as the ball's skipped addition does (c starts at +0 and a sum
    // that cancels to zero is +0 in round-to-nearest, so c is never -0 and c + (-0) = c).
    c_ += e;
    inexact_ |= e != 0;
    abs_ += std::fabs(t);
  }
  double value() const { return s_ + c_; }
  /// fl of the sum of |t| in order: at least (1 - gamma_{k-1}) sum |t|.
  double abs_sum() const { return abs_; }
  /// A bound of |value() - sum_k t_k| for the k exact double terms added (section 18.2): 0 when every
  /// TwoSum was exact (then c = 0 and the running sum is the exact sum, as the ball's radius 0 says);
  /// else Sum2's bound u |s| + gamma_{k-1}^2 sum |t| (ORO 2005, Prop. 4.5, underflow included), at most
  /// (u + 2u^2) |value| + 2 gamma_{k-1}^2 A with A = abs_sum(). `factor` is sum2_factor(k).
  double error(double factor) const {
    return inexact_ ? up((kU + 2 * kU * kU) * std::fabs(value()) + factor * abs_) : 0.0;
  }

 private:
  double s_ = 0, c_ = 0, abs_ = 0;
  bool inexact_ = false;
};

/// The largest magnitude in v.
inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::fabs(e));
  return m;
}

/// kappa <= 1/2 is what the bounds of section 18.2 assume: rows whose reciprocal RMS or rstd is
/// wider than this (relative) are left to the double ball.
inline constexpr double kMaxRowRelativeRadius = 0x1p-20;

}  // namespace normcheck::oracle::a_priori
