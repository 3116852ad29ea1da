#pragma once
/// (magnitude, error) pairs: each quantity a kernel computes is tracked as mag >= |exact value|
/// and err >= |computed - exact|, through rules that are rigorous with second-order terms
/// (docs/bounds.md section 11.1):
///   product   |fl(a_hat b_hat) - ab| <= |a| e_b + e_a |b| + e_a e_b + u (|a||b| + that) + eta
///   sum       |fl(a_hat + b_hat) - (a + b)| <= e_a + e_b + u (|a| + |b| + e_a + e_b)
///   store     Accum -> Storage adds u_s (mag + err) + eta_s when the store rounds
/// Used by the block bounds (bounds_block.cpp) and the contraction bounds (bounds_contraction.cpp).
#include "core/bounds_model.hpp"

namespace normcheck::bounds_detail {

inline bool reaches(double upper, double limit) { return !(upper < limit); }

/// |exact| <= mag, |computed - exact| <= err; `over`: an intermediate may have overflowed.
struct Em {
  double mag = 0, err = 0;
  bool over = false;
};

/// The rounding rules of one accumulator and storage pair.
struct EmArith {
  Units u;
  double max_s;
  DType storage;

  static Em exact(double v) { return {std::fabs(v), 0, false}; }

  Em mul(const Em& a, const Em& b) const {
    const double mag = a.mag * b.mag, e = a.mag * b.err + a.err * b.mag + a.err * b.err;
    const double err = e + u.ua * (mag + e) + u.eta_a;
    return {mag, err, a.over || b.over || reaches(mag + err, u.max_a)};
  }
  Em add(const Em& a, const Em& b) const {
    const double mag = a.mag + b.mag, e = a.err + b.err;
    const double err = e + u.ua * (mag + e);
    return {mag, err, a.over || b.over || reaches(mag + err, u.max_a)};
  }
  /// Division by the integer k (exact in the accumulator): relative error division_error(k).
  Em div(const Em& a, int64_t k) const {
    const double kk = static_cast<double>(k), mag = a.mag / kk, e = a.err / kk;
    return {mag, e + division_error(k, u) * (mag + e) + u.eta_a, a.over};
  }
  /// An intermediate stored in the storage dtype (an exact conversion when Storage == Accum).
  Em store(const Em& a) const {
    const double err = u.store_rounds ? a.err + u.us * (a.mag + a.err) + u.eta_s : a.err;
    return {a.mag, err, a.over || reaches(a.mag + err, max_s)};
  }
};

}  // namespace normcheck::bounds_detail
