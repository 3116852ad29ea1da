#pragma once
/// Arithmetic of the a priori double level (docs/bounds.md section 18.2): the double ball's
/// midpoints computed as plain doubles, operation for operation, with radii from error bounds
/// derived once per row instead of a running radius per operation. Same assumptions as the ball
/// (round-to-nearest binary64, no FMA contraction, gradual underflow).
#include <cmath>
#include <cstdint>

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

/// Algorithm Sum2 of Ogita, Rump and Oishi (2005), with exactly the operations of BallSum's
/// midpoint (TwoSum of the running sum, the errors summed plainly, then s + c), so its value is the
/// double ball's midpoint bit for bit; and the plain sum of the terms' magnitudes.
class Sum2 {
 public:
  void add(double t) {
    const double m = s_ + t, bb = m - s_, e = (s_ - (m - bb)) + (t - bb);
    s_ = m;
    if (e != 0) c_ += e;
    abs_ += std::fabs(t);
  }
  double value() const { return s_ + c_; }
  /// fl of the sum of |t| in order: at least (1 - gamma_{k-1}) sum |t|.
  double abs_sum() const { return abs_; }

 private:
  double s_ = 0, c_ = 0, abs_ = 0;
};

/// A bound of |value - sum_k t_k| for k exact double terms, from Sum2's bound u |s| + gamma_{k-1}^2
/// sum |t| (ORO 2005, Prop. 4.5, underflow included): at most (u + 2u^2) |value| + 2 gamma_{k-1}^2 A
/// with A = abs_sum() (section 18.2). `factor` is sum2_factor(k).
inline double sum2_error(double value, double abs_sum, double factor) {
  return up((kU + 2 * kU * kU) * std::fabs(value) + factor * abs_sum);
}

}  // namespace normcheck::oracle::a_priori
