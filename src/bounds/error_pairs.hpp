#pragma once
/// (magnitude, error) pairs: each quantity a kernel computes is tracked as mag >= |exact value|
/// and err >= |computed - exact|, through rules that are rigorous with second-order terms
/// (docs/bounds.md section 11.1):
///   product   |fl(a_hat b_hat) - ab| <= |a| e_b + e_a |b| + e_a e_b + u (|a||b| + that) + eta
///   sum       |fl(a_hat + b_hat) - (a + b)| <= e_a + e_b + u (|a| + |b| + e_a + e_b)
///   store     Accum -> Storage adds u_s (mag + err) + eta_s when the store rounds
/// Used by the block bounds (bounds_block.cpp) and the contraction bounds (bounds_contraction.cpp).
#include "bounds/bounds_model.hpp"

namespace normcheck::bounds_detail {

inline bool reaches(double upper, double limit) { return !(upper < limit); }

/// |exact| <= mag, |computed - exact| <= err; `over`: an intermediate may have overflowed. `hat`
/// bounds |computed| in every regime, also where err is void: the envelope (section 15).
struct Em {
  double mag = 0, err = 0;
  bool over = false;
  double hat = 0;
};

/// The rounding rules of one accumulator and storage pair.
struct EmArith {
  Units u;
  double max_s;
  DType storage;

  static Em exact(double v) { return {std::fabs(v), 0, false, std::fabs(v)}; }

  Em mul(const Em& a, const Em& b) const {
    // Products rounded up where they underflow (product_up): a pair's bounds are multiplied again later.
    const double mag = mul_up(a.mag, b.mag), e = mul_up(a.mag, b.err) + mul_up(a.err, b.mag) + mul_up(a.err, b.err);
    const double err = e + relative_rounding(mag + e, u) + u.eta_a;
    return {mag, err, a.over || b.over || reaches(mag + err, u.max_a), product_hat(a.hat, b.hat, u)};
  }
  Em add(const Em& a, const Em& b) const {
    const double mag = a.mag + b.mag, e = a.err + b.err;
    const double err = e + relative_rounding(mag + e, u);  // a sum below the normal range is exact
    return {mag, err, a.over || b.over || reaches(mag + err, u.max_a), (a.hat + b.hat) * (1 + u.ua)};
  }
  /// Division by the integer k (exact in the accumulator): relative error division_error(k).
  Em div(const Em& a, int64_t k) const {
    const double kk = static_cast<double>(k), mag = quotient_up(a.mag, kk), e = quotient_up(a.err, kk);
    return {mag, e + mul_up(division_error(k, u), mag + e) + u.eta_a, a.over, mean_hat(a.hat, k, u)};
  }
  /// An intermediate stored in the storage dtype (an exact conversion when Storage == Accum).
  Em store(const Em& a) const {
    const double err = u.store_rounds ? a.err + mul_up(u.us, a.mag + a.err) + u.eta_s : a.err;
    return {a.mag, err, a.over || reaches(a.mag + err, max_s), stored_hat(a.hat, u)};
  }
};

/// A tensor bound of n elements: bounds 0, regimes 0, no envelope yet (radius +inf).
inline TensorBound sized_tensor_bound(size_t n) {
  return {std::vector<double>(n, 0.0), std::vector<uint8_t>(n, 0), std::vector<double>(n, 0.0),
          std::vector<double>(n, kInf)};
}

/// Element k's envelope from its tracked pair: |computed| <= hat, then the final store.
inline void set_envelope(TensorBound& t, size_t k, const Em& v, const Units& u) {
  t.env_radius[k] = std::isfinite(v.hat) ? stored_hat(v.hat, u) : kInf;
}

/// Element k of an output from its tracked pair: the regime, the bound with the final store to the
/// dtype (void when an intermediate or the result may overflow), the envelope.
inline void finish_element(TensorBound& t, size_t k, const Em& v, const CertifiedValue& ref, const EmArith& a) {
  const double exact = upper_abs(ref);
  const bool over = v.over || reaches(exact + v.err, a.max_s);
  t.regime[k] = output_regime(exact, v.mag, a.storage) | (over ? kRegimeOverflow : 0);
  t.bound[k] = over ? kInf : with_store(exact, v.err, a.u);
  set_envelope(t, k, v, a.u);
}

}  // namespace normcheck::bounds_detail
