#pragma once
/// Shared body of the per-precision oracle TUs: evaluates the textbook oracle on an MPFI type and
/// packages the enclosures. Include only from one TU per interval type.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "core/float_format.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"
#include "oracles/ball.hpp"
#include "oracles/certificate_accounting.hpp"
#include "oracles/certify_ball.hpp"
#include "oracles/certify_interval.hpp"
#include "oracles/layernorm.hpp"
#include "oracles/lean_interval.hpp"
#include "oracles/rmsnorm.hpp"

namespace normcheck::oracle::detail {

/// The mpfi_t of a Boost MPFI number or of a LeanInterval.
template <class Interval>
mpfi_srcptr interval_data(const Interval& e) {
  return e.backend().data();
}
template <mpfr_prec_t Bits>
mpfi_srcptr interval_data(const LeanInterval<Bits>& e) {
  return e.data();
}

/// The certificate of one value of the oracle's Real type: an MPFI interval, a double or double-double ball.
template <class Interval>
CertifiedValue certify_element(const Interval& e, DType dtype) {
  return certify_interval(interval_data(e), dtype);
}
inline CertifiedValue certify_element(const Ball& b, DType dtype) { return certify_ball(b, dtype); }
inline CertifiedValue certify_element(const DdBall& b, DType dtype) { return certify_dd_ball(b, dtype); }

/// Midpoint (hi + lo) and radius of a ball of either level.
inline void ball_parts(const Ball& b, double& hi, double& lo, double& rad) {
  hi = b.mid;
  lo = 0;
  rad = b.rad;
}
inline void ball_parts(const DdBall& b, double& hi, double& lo, double& rad) {
  hi = b.hi;
  lo = b.lo;
  rad = b.rad;
}

/// Certifies the `count` outputs at v, appends their certificates to r and folds them into out's
/// accounting. Balls go through rule C's inline test first (certify_by_bits: the same certificate and
/// radius in ULPs as the general path, which takes the outputs it cannot decide). The a priori level
/// certifies row by row, while the row's balls are still in cache.
template <class Interval>
void certify_into(const Interval* v, size_t count, DType dtype, std::vector<CertifiedValue>& r, CertifiedLayerNorm& out) {
  const FloatFormat& fmt = *dtype_info(dtype).format;
  if constexpr (std::is_same_v<Interval, Ball>) {
    if (fmt.precision < 53) {  // the run certifier, then certify_ball for what rule C leaves
      const size_t first = r.size();
      bool on_stack[256];  // short rows (the a priori level certifies row by row) allocate nothing
      const std::unique_ptr<bool[]> on_heap(count > 256 ? new bool[count] : nullptr);
      bool* decided = count > 256 ? on_heap.get() : on_stack;
      certify_balls_by_bits(v, count, fmt, r, decided, out.max_err_ulps);
      for (size_t i = 0; i < count; ++i)
        if (!decided[i]) {
          r[first + i] = certify_ball(v[i], dtype);
          account_element(r[first + i], fmt, out);
        }
      return;
    }
  }
  // The maxima of the decided outputs are kept in registers (the compiler cannot prove that out does
  // not alias the vectors written) and folded into out around each general-path output.
  double max_err = out.max_err_ulps;
  for (size_t i = 0; i < count; ++i) {
    const Interval& e = v[i];
    if constexpr (std::is_same_v<Interval, Ball> || std::is_same_v<Interval, DdBall>) {
      double hi, lo, rad, rad_ulps;
      ball_parts(e, hi, lo, rad);
      CertifiedValue& cv = r.emplace_back();
      if (certify_by_bits(hi, lo, rad, fmt, cv, rad_ulps)) {  // decided: account it as account_element would
        max_err = std::max(max_err, rad_ulps);
        continue;
      }
      r.pop_back();
    }
    r.push_back(certify_element(e, dtype));
    out.max_err_ulps = max_err;
    account_element(r.back(), fmt, out);
    max_err = out.max_err_ulps;
  }
  out.max_err_ulps = max_err;
}

/// The certificates of every output of v (certify_into).
template <class Interval>
std::vector<CertifiedValue> certify_all(const std::vector<Interval>& v, DType dtype, CertifiedLayerNorm& out) {
  std::vector<CertifiedValue> r;
  r.reserve(v.size());
  certify_into(v.data(), v.size(), dtype, r, out);
  return r;
}

/// Nearest doubles of the enclosures and certified bounds of their distance to the exact values.
template <class Interval>
void mids(const std::vector<Interval>& v, std::vector<double>& mid, std::vector<double>& rad) {
  mid.clear();
  rad.clear();
  for (const auto& e : v) {
    const CertifiedValue cv = certify_element(e, DType::f64);
    mid.push_back(cv.approx());
    // |exact - approx| <= (rad + |lo|) 2^scale + the rounding of approx: approx is hi scaled by a power
    // of two, exact unless it lands below the normal range (then off by at most 2^-1075). No term in
    // |approx| (issue 42: an ULP of the mean made d's bound, hence the variance's, void at n = 1).
    const double scaled = scale_by_pow2(cv.rad + std::fabs(cv.lo), cv.scale);
    rad.push_back(scaled * (1 + 0x1p-50) + 0x1p-1074);
  }
}

template <class Interval>
CertifiedLayerNorm evaluate(const LayerNormCase& c, bool with_vjp, int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  std::vector<Interval> z, y;
  LayerNormStats<Interval> stats;
  layernorm_normalize(c, z, stats);  // once, for the forward and the VJP
  layernorm_affine(c, z, y);
  out.y = certify_all(y, c.dtype, out);
  mids(stats.mean, out.mean, out.mean_rad);
  mids(stats.var, out.var, out.var_rad);
  mids(stats.rstd, out.rstd, out.rstd_rad);
  if (with_vjp) {
    std::vector<Interval> dx, dg, db;
    layernorm_vjp_normalized(c, z, stats, to_real<Interval>(c.dy), dx, dg, db);
    out.dx = certify_all(dx, c.dtype, out);
    out.dgamma = certify_all(dg, c.dtype, out);
    out.dbeta = certify_all(db, c.dtype, out);
  }
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// dgamma and dbeta of the columns `cols` only (the cascade's column fall-through): the row
/// statistics over whole rows, z only where needed; y and dx stay empty.
template <class Interval>
CertifiedLayerNorm evaluate_columns(const LayerNormCase& c, const std::vector<int64_t>& cols, int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  LayerNormStats<Interval> stats;
  layernorm_row_stats(c, stats);
  std::vector<Interval> dg, db;
  layernorm_param_grads_columns(c, stats, cols, dg, db);
  out.dgamma = certify_all(dg, c.dtype, out);
  out.dbeta = certify_all(db, c.dtype, out);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// y at `ys` and dx at `dxs` only (the cascade's element fall-through; row-major indices into c, ascending):
/// out.y and out.dx hold their certificates in that order, mean, var and rstd every row's; the
/// columns stay empty.
template <class Interval>
CertifiedLayerNorm evaluate_outputs(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs,
                                    int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  std::vector<Interval> y, dx;
  LayerNormStats<Interval> stats;
  layernorm_outputs_at(c, ys, dxs, y, dx, stats);
  out.y = certify_all(y, c.dtype, out);
  out.dx = certify_all(dx, c.dtype, out);
  mids(stats.mean, out.mean, out.mean_rad);
  mids(stats.var, out.var, out.var_rad);
  mids(stats.rstd, out.rstd, out.rstd_rad);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// Certifies a JVP's du (collects the max error over its elements).
template <class Interval>
CertifiedLayerNormJvp certify_jvp(const std::vector<Interval>& du, DType dtype, int precision_bits) {
  CertifiedLayerNorm acc;  // collects the max error over outputs
  CertifiedLayerNormJvp out;
  out.precision_bits = precision_bits;
  out.du = certify_all(du, dtype, acc);
  out.max_err_ulps = acc.max_err_ulps;
  out.undecided_roundings = acc.undecided_roundings;
  out.certified = acc.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

template <class Interval>
CertifiedLayerNormJvp evaluate_jvp(const LayerNormCase& c, const LayerNormTangents& t, int precision_bits) {
  std::vector<Interval> du;
  layernorm_jvp(c, to_real<Interval>(t.dx), to_real<Interval>(t.dgamma), to_real<Interval>(t.dbeta), du);
  return certify_jvp(du, c.dtype, precision_bits);
}

/// The RMSNorm view of a LayerNorm case: gain g = gamma, no linear layer.
inline RmsBlockCase rms_case_of(const LayerNormCase& c) {
  RmsBlockCase r;
  r.dtype = c.dtype;
  r.rows = c.rows;
  r.n = c.n;
  r.m = 0;
  r.eps = c.eps;
  r.x = c.x;
  r.g = c.gamma;
  return r;
}

template <class Interval>
CertifiedLayerNorm evaluate_rms(const LayerNormCase& c, bool with_vjp, int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  const RmsBlockCase rc = rms_case_of(c);
  const std::vector<Interval> ms = mean_of_squares<Interval>(rc);  // once, for the forward and the VJP
  const std::vector<Interval> r = rms_reciprocal_of(rc, ms);
  const std::vector<Interval> z = rmsnorm_normalized(rc, r);  // once, for the forward and the VJP
  out.y = certify_all(rmsnorm_gain(rc, z), c.dtype, out);
  const std::vector<Interval> zero(r.size(), Interval(0));
  mids(zero, out.mean, out.mean_rad);
  mids(ms, out.var, out.var_rad);
  mids(r, out.rstd, out.rstd_rad);
  if (with_vjp) {
    std::vector<Interval> dg;
    out.dx = certify_all(rmsnorm_vjp_normalized(rc, r, z, to_real<Interval>(c.dy), dg), c.dtype, out);
    out.dgamma = certify_all(dg, c.dtype, out);
  }
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// The RMSNorm JVP along (dx, dgamma) of the case (gamma the gain; beta and dbeta unused).
/// RMSNorm's dgamma of the columns `cols` only (dbeta stays empty, as in evaluate_rms).
template <class Interval>
CertifiedLayerNorm evaluate_rms_columns(const LayerNormCase& c, const std::vector<int64_t>& cols, int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  const RmsBlockCase rc = rms_case_of(c);
  const std::vector<Interval> r = rms_reciprocal_of(rc, mean_of_squares<Interval>(rc));
  out.dgamma = certify_all(rmsnorm_gain_grad_columns(rc, r, c.dy, cols), c.dtype, out);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

/// RMSNorm's y at `ys` and dx at `dxs` only (evaluate_outputs for RMSNorm; mean is 0, var mean(x^2)).
template <class Interval>
CertifiedLayerNorm evaluate_rms_outputs(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs,
                                        int precision_bits) {
  CertifiedLayerNorm out;
  out.precision_bits = precision_bits;
  const RmsBlockCase rc = rms_case_of(c);
  const std::vector<Interval> ms = mean_of_squares<Interval>(rc);
  const std::vector<Interval> r = rms_reciprocal_of(rc, ms);
  std::vector<Interval> y, dx;
  rmsnorm_outputs_at(rc, r, c.dy, ys, dxs, y, dx);
  out.y = certify_all(y, c.dtype, out);
  out.dx = certify_all(dx, c.dtype, out);
  const std::vector<Interval> zero(r.size(), Interval(0));
  mids(zero, out.mean, out.mean_rad);
  mids(ms, out.var, out.var_rad);
  mids(r, out.rstd, out.rstd_rad);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

template <class Interval>
CertifiedLayerNormJvp evaluate_rms_jvp(const LayerNormCase& c, const LayerNormTangents& t, int precision_bits) {
  return certify_jvp(rmsnorm_jvp(rms_case_of(c), to_real<Interval>(t.dx), to_real<Interval>(t.dgamma)), c.dtype, precision_bits);
}

/// The nearest-ish double of a value of the oracle's Real type (a diagnostic, not certified).
template <class Interval>
double midpoint_double(const Interval& e) {
  return interval_mid_double(interval_data(e));
}
inline double midpoint_double(const Ball& b) { return b.mid; }
inline double midpoint_double(const DdBall& b) { return b.hi + b.lo; }

/// Per dx element of the block: (|t1| + |t2|) / |t1 - t2| of the deferred form's two terms
/// t1 = r (W_g^T dy)_j, t2 = (r^2 / n) <dy, y - b> x_j, from midpoints (a diagnostic).
template <class Interval>
std::vector<double> deferred_cancellation(const RmsBlockCase& c, const std::vector<Interval>& r) {
  std::vector<double> out;
  out.reserve(c.x.size());
  RmsBlockCase no_bias = c;
  no_bias.b.clear();
  const auto y = linear_rmsnorm_forward_deferred<Interval>(no_bias);
  for (int64_t i = 0; i < c.rows; ++i) {
    Interval s(0);
    for (int64_t k = 0; k < c.m; ++k) s += Interval(c.dy[i * c.m + k]) * y[i * c.m + k];
    const Interval scale = r[i] * r[i] / Interval(static_cast<double>(c.n)) * s;
    for (int64_t j = 0; j < c.n; ++j) {
      Interval gemm(0);
      for (int64_t k = 0; k < c.m; ++k) gemm += Interval(c.w[k * c.n + j]) * Interval(c.g[j]) * Interval(c.dy[i * c.m + k]);
      const double t1 = midpoint_double(r[i] * gemm);
      const double t2 = midpoint_double(scale * Interval(c.x[i * c.n + j]));
      out.push_back(t1 == t2 ? HUGE_VAL : (std::fabs(t1) + std::fabs(t2)) / std::fabs(t1 - t2));
    }
  }
  return out;
}

/// The block in composed form (the reference); the deferred terms only for the cancellation factor,
/// computed where the cascade keeps this level (accepted, or the last level).
template <class Interval>
CertifiedRmsBlock evaluate_rms_block(const RmsBlockCase& c, int precision_bits, bool last_level) {
  CertifiedRmsBlock out;
  out.precision_bits = precision_bits;
  CertifiedLayerNorm acc;  // collects the max error over outputs
  out.y = certify_all(linear_rmsnorm_forward_composed<Interval>(c), c.dtype, acc);
  std::vector<Interval> dw, dg;
  out.dx = certify_all(linear_rmsnorm_vjp_composed<Interval>(c, dw, dg), c.dtype, acc);
  out.dw = certify_all(dw, c.dtype, acc);
  out.dg = certify_all(dg, c.dtype, acc);
  const std::vector<Interval> ms = mean_of_squares<Interval>(c);
  const std::vector<Interval> r = rms_reciprocal_of(c, ms);
  mids(r, out.rstd, out.rstd_rad);
  mids(ms, out.ms, out.ms_rad);
  out.max_err_ulps = acc.max_err_ulps;
  out.undecided_roundings = acc.undecided_roundings;
  out.certified = acc.max_err_ulps <= kRequiredUlpFraction;
  if (accepted(out) || last_level) out.cancellation = deferred_cancellation(c, r);
  return out;
}

}  // namespace normcheck::oracle::detail

namespace normcheck::oracle::detail {

/// Boost's MPFI scalar of Digits decimal digits (expression templates off), for the sections that
/// still use it and as the lean type's reference (oracles/boost_mpfi_reference.hpp).
template <unsigned Digits>
using MpfiInterval = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<Digits>,
                                                  boost::multiprecision::et_off>;

/// The bits of Digits decimal digits, as Boost counts them (digits10_2_2).
constexpr mpfr_prec_t mpfi_digits_to_bits(unsigned long digits) {
  return static_cast<mpfr_prec_t>(digits * 1000 / 301 + (digits * 1000 % 301 ? 2 : 1));
}

/// The LayerNorm and RMSNorm oracles' MPFI scalar: Boost's precision, without its allocations.
template <unsigned Digits>
using LeanMpfi = LeanInterval<mpfi_digits_to_bits(Digits)>;
static_assert(mpfi_digits_to_bits(50) == 168 && mpfi_digits_to_bits(150) == 500 && mpfi_digits_to_bits(400) == 1330,
              "the MPFI levels' precisions that docs/bounds.md section 6 states");

/// The precision in bits of an interval type.
template <class Interval>
int interval_bits() {
  return static_cast<int>(mpfi_get_prec(interval_data(Interval(0))));
}
template <unsigned Digits>
int mpfi_bits() {
  return interval_bits<MpfiInterval<Digits>>();
}

}  // namespace normcheck::oracle::detail

/// Defines the oracle entry points of one interval type (suffix: the functions' names' end; last:
/// whether it is the cascade's last level).
#define NORMCHECK_DEFINE_INTERVAL_LAYERNORM_ORACLE(suffix, Interval, last)                             \
  namespace normcheck::oracle {                                                                   \
  CertifiedLayerNorm evaluate_layernorm_##suffix(const LayerNormCase& c, bool with_vjp) {          \
    return detail::evaluate<Interval>(c, with_vjp, detail::interval_bits<Interval>());             \
  }                                                                                               \
  CertifiedLayerNormJvp evaluate_layernorm_jvp_##suffix(const LayerNormCase& c, const LayerNormTangents& t) { \
    return detail::evaluate_jvp<Interval>(c, t, detail::interval_bits<Interval>());                \
  }                                                                                               \
  CertifiedLayerNormJvp evaluate_rmsnorm_jvp_##suffix(const LayerNormCase& c, const LayerNormTangents& t) { \
    return detail::evaluate_rms_jvp<Interval>(c, t, detail::interval_bits<Interval>());            \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_##suffix(const LayerNormCase& c, bool with_vjp) {            \
    return detail::evaluate_rms<Interval>(c, with_vjp, detail::interval_bits<Interval>());         \
  }                                                                                               \
  CertifiedLayerNorm evaluate_layernorm_columns_##suffix(const LayerNormCase& c, const std::vector<int64_t>& cols) { \
    return detail::evaluate_columns<Interval>(c, cols, detail::interval_bits<Interval>());         \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_columns_##suffix(const LayerNormCase& c, const std::vector<int64_t>& cols) { \
    return detail::evaluate_rms_columns<Interval>(c, cols, detail::interval_bits<Interval>());     \
  }                                                                                               \
  CertifiedLayerNorm evaluate_layernorm_outputs_##suffix(const LayerNormCase& c, const std::vector<int64_t>& ys, \
                                                         const std::vector<int64_t>& dxs) {        \
    return detail::evaluate_outputs<Interval>(c, ys, dxs, detail::interval_bits<Interval>());      \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_outputs_##suffix(const LayerNormCase& c, const std::vector<int64_t>& ys, \
                                                       const std::vector<int64_t>& dxs) {          \
    return detail::evaluate_rms_outputs<Interval>(c, ys, dxs, detail::interval_bits<Interval>());  \
  }                                                                                               \
  CertifiedRmsBlock evaluate_rms_block_##suffix(const RmsBlockCase& c) {                          \
    return detail::evaluate_rms_block<Interval>(c, detail::interval_bits<Interval>(), last);       \
  }                                                                                               \
  }

/// Defines the MPFI level of Digits decimal digits (50, 150, 400; 400 is the last) on the lean type.
#define NORMCHECK_DEFINE_MPFI_LAYERNORM_ORACLE(Digits) \
  NORMCHECK_DEFINE_INTERVAL_LAYERNORM_ORACLE(mpfi##Digits, detail::LeanMpfi<Digits>, Digits == 400)

/// Defines the LayerNorm, RMSNorm and LayerNorm-JVP entry points of a ball level of the cascade
/// (Real: Ball or DdBall; bits: its midpoint's precision, reported as the level's).
#define NORMCHECK_DEFINE_BALL_LAYERNORM_ORACLE(suffix, Real, bits)                                   \
  namespace normcheck::oracle {                                                                   \
  CertifiedLayerNorm evaluate_layernorm_##suffix(const LayerNormCase& c, bool with_vjp) {          \
    return detail::evaluate<Real>(c, with_vjp, bits);                                             \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_##suffix(const LayerNormCase& c, bool with_vjp) {            \
    return detail::evaluate_rms<Real>(c, with_vjp, bits);                                         \
  }                                                                                               \
  CertifiedLayerNorm evaluate_layernorm_columns_##suffix(const LayerNormCase& c, const std::vector<int64_t>& cols) { \
    return detail::evaluate_columns<Real>(c, cols, bits);                                         \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_columns_##suffix(const LayerNormCase& c, const std::vector<int64_t>& cols) { \
    return detail::evaluate_rms_columns<Real>(c, cols, bits);                                     \
  }                                                                                               \
  CertifiedLayerNorm evaluate_layernorm_outputs_##suffix(const LayerNormCase& c, const std::vector<int64_t>& ys, \
                                                         const std::vector<int64_t>& dxs) {          \
    return detail::evaluate_outputs<Real>(c, ys, dxs, bits);                                      \
  }                                                                                               \
  CertifiedLayerNorm evaluate_rmsnorm_outputs_##suffix(const LayerNormCase& c, const std::vector<int64_t>& ys, \
                                                       const std::vector<int64_t>& dxs) {            \
    return detail::evaluate_rms_outputs<Real>(c, ys, dxs, bits);                                  \
  }                                                                                               \
  CertifiedLayerNormJvp evaluate_layernorm_jvp_##suffix(const LayerNormCase& c, const LayerNormTangents& t) { \
    return detail::evaluate_jvp<Real>(c, t, bits);                                                \
  }                                                                                               \
  CertifiedLayerNormJvp evaluate_rmsnorm_jvp_##suffix(const LayerNormCase& c, const LayerNormTangents& t) { \
    return detail::evaluate_rms_jvp<Real>(c, t, bits);                                            \
  }                                                                                               \
  CertifiedRmsBlock evaluate_rms_block_##suffix(const RmsBlockCase& c) {                          \
    return detail::evaluate_rms_block<Real>(c, bits, false);                                      \
  }                                                                                               \
  }
