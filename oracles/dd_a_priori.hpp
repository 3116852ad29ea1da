#pragma once
/// Arithmetic of the a priori double-double level (docs/bounds.md section 18.3): double-double
/// midpoints (hi + lo, |lo| <= u |hi|) computed without a running radius, each operation's error
/// bounded once, in the proof, by a constant times the magnitude of its result or operands; the
/// oracle turns those constants into per-row radius formulas. Same assumptions as the balls
/// (round-to-nearest binary64, no FMA contraction, gradual underflow). Dekker's product is exact
/// only when its result is 0 or at least 2^-960 in magnitude and its operands are below 2^995: the
/// caller checks the magnitudes (a `tame` test on the row) and every product that may fail it.
#include <cmath>
#include <cstdint>

#include "oracles/a_priori.hpp"
#include "oracles/dd_ball.hpp"

namespace normcheck::oracle::dd_a_priori {

using ball_detail::kEta;
using ball_detail::kInf;
using ball_detail::kU;
using ball_detail::up;

/// A double-double hi + lo with |lo| <= u |hi| (what TwoSum returns).
struct Dd {
  double h = 0, l = 0;
};

/// TwoSum: the exact sum as a normalized double-double.
inline Dd two_sum(double a, double b) {
  Dd r;
  dd_detail::two_sum(a, b, r.h, r.l);
  return r;
}

/// Dekker's product ab = h + l, exact when |ab| is 0 or at least 2^-960 and |a|, |b| <= 2^995
/// (checked by `exact_product`); no scaling branches.
inline Dd two_prod(double a, double b) {
  double ah, al, bh, bl;
  dd_detail::split(a, ah, al);
  dd_detail::split(b, bh, bl);
  Dd r;
  r.h = a * b;
  r.l = ((ah * bh - r.h) + ah * bl + al * bh) + al * bl;
  return r;
}

/// Whether two_prod's product p = fl(ab) was exact (operands below 2^995 being the caller's check).
inline bool exact_product(double p) { return p == 0 || std::fabs(p) >= 0x1p-960; }

/// A times the double b (rule M1): |result - A b| <= 4 u^2 |result.h| + 2 eta when the product of
/// the high parts is exact.
inline Dd mul(const Dd& a, double b) {
  const Dd p = two_prod(a.h, b);
  return two_sum(p.h, p.l + a.l * b);
}

/// A times B (rule M2, a.l b.l dropped): |result - A B| <= 9 u^2 |result.h| + 2 eta when the
/// product of the high parts is exact.
inline Dd mul(const Dd& a, const Dd& b) {
  const Dd p = two_prod(a.h, b.h);
  return two_sum(p.h, p.l + (a.h * b.l + a.l * b.h));
}

/// A + B (rule A1): |result - (A + B)| <= 4 u^2 (|a.h| + |b.h|).
inline Dd add(const Dd& a, const Dd& b) {
  const Dd s = two_sum(a.h, b.h);
  return two_sum(s.h, s.l + (a.l + b.l));
}

inline Dd neg(const Dd& a) { return {-a.h, -a.l}; }

/// The sum of K double-doubles W_k: TwoSum of the high parts, their errors and the low parts summed
/// plainly (rule S2). |value() - sum W_k| <= error(): u^2 (1 + u)(1 + gamma_K)^2 (K + 1)^2 f_K A
/// with A = abs_sum(), the plain sum of |W_k.h|.
class DdSum {
 public:
  void add(const Dd& w) {
    const Dd s = two_sum(s_, w.h);
    s_ = s.h;
    c_ += s.l + w.l;
    abs_ += std::fabs(w.h);
  }
  Dd value() const { return two_sum(s_, c_); }
  double abs_sum() const { return abs_; }
  /// The bound's factor for K terms (computed once per row or column length).
  static double factor(int64_t k) {
    const double k1 = static_cast<double>(k + 1), g = 1 + a_priori::gamma_up(k);
    return up(up(k1 * k1 * kU * kU * (1 + kU)) * up(g * g) * a_priori::abs_sum_factor(k));
  }
  double error(double factor) const { return up(factor * abs_); }

 private:
  double s_ = 0, c_ = 0, abs_ = 0;
};

/// Nonzero magnitudes of the row's inputs (x, gain, cotangent) and its reciprocal RMS within
/// [2^-120, 2^120]: then every product of at most six of them is 0 or within [2^-720, 2^720], so
/// Dekker's products of those are exact and no split overflows.
inline bool tame(double v) {
  const double a = std::fabs(v);
  return a == 0 || (a >= 0x1p-120 && a <= 0x1p120);
}

}  // namespace normcheck::oracle::dd_a_priori
