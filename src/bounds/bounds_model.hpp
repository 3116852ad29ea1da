#pragma once
/// Internal pieces shared by the bound formulas (bounds_stats.cpp, bounds.cpp, regimes.cpp).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#include "bounds/bounds.hpp"

namespace normcheck::bounds_detail {

/// Slack for the double rounding of the bound's own sums of nonnegative terms (at most
/// (n + 8) 2^-53 < 1.2e-10 relative for n <= 2^20; docs/bounds.md section 1.4). Quantities that
/// come from the oracle or suffer cancellation are inflated explicitly instead (kRel).
inline constexpr double kEvaluationSlack = 1.0 + 1e-6;
/// Relative inflation turning a nearest-double oracle statistic into an upper bound (its
/// rounding 2^-53 plus the certified radius, far below 2^-60 relative).
inline constexpr double kRel = 0x1p-50;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Absolute error of one rounding of a double evaluation that underflows (at most half of this):
/// the allowance the bounds add for each product or quotient they evaluate in double to stand for an
/// exact value (signed, cancelling sums), where the relative 2^-53 allowances say nothing.
inline constexpr double kEvalEta = std::numeric_limits<double>::denorm_min();

/// The product of magnitudes with exact exponents: m 2^e rounded up (below the normal range) or to
/// +inf (beyond it); the slow path of product_up.
double product_up_exact(std::initializer_list<double> factors);

/// An upper bound of |a_1| ... |a_k| that no underflow or overflow of its own evaluation can make
/// smaller (issue 42; docs/bounds.md section 1.4): the plain product where every partial product
/// stays in the normal range (its k - 1 relative roundings are the evaluation slack's), else the
/// product with exponents added exactly and rounded up. Where a partial product underflowed, the
/// plain product times a later large factor would lose that factor times the rounding's absolute
/// error. A zero factor gives 0 unless another is infinite (void: +inf); NaN stays NaN.
inline double product_up(std::initializer_list<double> factors) {
  double p = 1;
  bool normal = true;
  for (const double f : factors) {
    p *= std::fabs(f);
    normal &= (p >= 0x1p-1022) & (p <= std::numeric_limits<double>::max());
  }
  return normal ? p : product_up_exact(factors);
}

/// |a| |b|, rounded up as product_up.
inline double mul_up(double a, double b) { return product_up({a, b}); }

/// |a| / b for a positive lower bound b of a denominator, rounded up as product_up (a quotient below
/// the normal range is rounded up, one beyond it is +inf).
double quotient_up(double a, double b);

struct Units {
  double us, ua;        ///< unit roundoffs of storage and accumulator
  double eta_s, eta_a;  ///< half the subnormal spacing: absolute error of a rounding in underflow
  bool store_rounds;    ///< the final conversion Accum -> Storage rounds
  double max_a;         ///< largest finite accumulator value
  double rsqrt;         ///< relative error of 1/sqrt beyond its argument's error
  SumOrder order;
  /// Smallest normal of the accumulator: a sum or difference below it is exact (gradual underflow);
  /// 0 claims nothing.
  double min_normal_a = 0;
  /// The accumulator's overflow threshold: a rounded result is +-inf exactly when the exact one
  /// reaches it (the largest finite value plus half its ULP; +inf for f64, whose threshold double
  /// cannot hold: there a double sum of upper bounds overflows exactly when the accumulator's would).
  /// 0: unknown, the largest finite value stands for it.
  double overflow_a = 0;
};

/// The accumulator's overflow threshold (Units::overflow_a, or its largest finite value).
inline double overflow_threshold(const Units& u) { return u.overflow_a > 0 ? u.overflow_a : u.max_a; }

/// The relative part u |v| of one rounding's error in the accumulator for a result of magnitude at
/// most v: 0 when v is below the accumulator's smallest normal, where a sum or difference is exact
/// and a product or quotient is off by at most eta_a / 2, which the eta_a term that goes with every
/// rounding in the formulas carries (rounding u |v| up to a subnormal would add a whole 2^-1074).
inline double relative_rounding(double v, const Units& u) { return v < u.min_normal_a ? 0.0 : mul_up(u.ua, v); }

/// (1+u)(1-u)^(-3/2) / sqrt(p + q) for p = root_p^2, q = root_q^2 >= 0: the computed reciprocal
/// square root of a rounded sum of p and q, bounded above (section 15.1). hypot forms p + q without
/// overflow: where fl(p + q) overflows the kernel's r_hat is 0, the exact value and a wider kernel's
/// are not.
inline double reciprocal_root_of_sum(double root_p, double root_q, const Units& u) {
  return quotient_up((1 + u.ua) / std::pow(1 - u.ua, 1.5), std::hypot(root_p, root_q)) * kEvaluationSlack;
}

Units units_of(const BoundModel& m);

/// (1 + u)^ops: growth of a magnitude through `ops` roundings, finite where gamma_k is void
/// (for overflow prediction only).
inline double growth(double ops, double u) { return std::exp(ops * std::log1p(u)); }

/// (1 + a)(1 + b) - 1: composition of two relative errors.
inline double compose(double a, double b) { return a + b + a * b; }

/// gamma for a within-row sum of `terms` terms: sequential n - 1, pairwise ceil(log2 n) additions.
double sum_gamma(int64_t terms, const Units& u);

/// Relative error of a division by the integer k in the accumulator: 0 for a power of two,
/// u for one rounding, 2u + u^2 when k itself is not representable (f16/bf16 accumulators).
double division_error(int64_t k, const Units& u);

/// Relative error of fl(sum of n exact terms) / n.
inline double compose_sum(int64_t n, const Units& u) { return compose(sum_gamma(n, u), division_error(n, u)); }

/// Relative error of fl(sum of n rounded products) / n, magnitudes taken before the products' rounding.
inline double compose_sum_products(int64_t n, const Units& u) {
  return compose(compose(sum_gamma(n, u), u.ua), division_error(n, u));
}

/// Depth D of a Welford merge tree over n elements (section 2.7): n - 1 for any tree (the class),
/// blocked_reduction_depth(n) for SumOrder::blocked.
int64_t welford_merge_depth(int64_t n, SumOrder order);

/// W = an upper bound of sum over the merges of n_a n_b / (n_a + n_b): n min(D / 4, floor(log2 n)) (section 2.7.3).
double welford_merge_weight_sum(int64_t n, int64_t depth);

/// |mu_hat - mu| of a Welford merge tree of depth `depth` (section 2.7.2).
double mean_error_welford_merge(const double* x, int64_t n, int64_t depth, const Units& u);

/// Error model of one row's statistics (docs/bounds.md sections 2.1-2.3).
struct RowError {
  double e_mu = 0;     ///< |mu_hat - mu|
  double e_v = 0;      ///< |v_hat - v|
  double delta_r = 0;  ///< |r_hat - r| / r
  double rstd = 0;     ///< upper bound of the exact r
  double v = 0;        ///< upper bound of the exact variance
  double v_low = 0;    ///< lower bound of the exact variance
  double mu = 0;       ///< nearest double of the exact mean
  std::vector<double> d;      ///< d_j = x_j - mu, nearest double (signed, for cancelling sums)
  std::vector<double> d_abs;  ///< upper bound of |x_j - mu|
  std::vector<double> e_d;    ///< bound of |d_hat_j - d_j|
  uint8_t regime = 0;         ///< row-level regime flags (overflow, eps, underflow, cancellation)
};

/// |v_hat - v| of a Welford merge tree of depth `depth`, from r.v and r.e_mu (section 2.7.3).
double variance_error_welford_merge(const double* x, int64_t n, const RowError& r, int64_t depth, const Units& u);

/// The largest intermediate a Welford merge tree may form (|delta|, delta^2 times counts, partial M2; section 2.7.4).
double welford_merge_intermediates(const double* x, int64_t n, const RowError& r, const Units& u);

/// Relative error of r_hat = 1 / sqrt(fl(v_hat + eps_hat)) given |v_hat - v| <= e_v (section 2.3).
double rstd_relative_error(double v, double v_low, double e_v, double eps, const Units& u);

/// The same with v_hat + eps_hat and r_hat each stored in the storage dtype (op by op, section 4.5).
double rstd_relative_error_stored(double v, double v_low, double e_v, double eps, const Units& u);

/// Error bound of a value stored in the storage dtype: err + u_s (mag + err) + eta_s when the store
/// rounds, else err (the store rule of section 11.1).
inline double stored_error(double mag, double err, const Units& u) {
  return u.store_rounds ? err + mul_up(u.us, mag + err) + u.eta_s : err;
}

RowError row_error(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t row,
                   const BoundModel& m, const Units& u);

/// |z_hat - z| for z_hat = fl(d_hat * r_hat).
inline double normalized_error(const RowError& r, int64_t j, const Units& u) {
  return (product_up({r.rstd, r.d_abs[j], r.delta_r}) + product_up({r.rstd, r.e_d[j], 1 + r.delta_r})) * (1 + u.ua) +
         relative_rounding(mul_up(r.d_abs[j], r.rstd), u) + u.eta_a;
}

/// Upper bound of |oracle value| from its double-double and certified radius.
inline double upper_abs(const CertifiedValue& v) {
  return (std::fabs(v.approx()) + scale_by_pow2(std::fabs(v.lo) + v.rad, v.scale)) * (1 + kRel) +
         std::numeric_limits<double>::denorm_min();
}

/// Adds the Accum -> Storage store rounding to an accumulated-value error bound.
inline double with_store(double exact_abs, double err, const Units& u) {
  if (std::isnan(err)) return kInf;  // 0 * inf: void bound
  const double stored = u.store_rounds ? err + mul_up(u.us, exact_abs + err) + u.eta_s : err;
  return stored * kEvaluationSlack;
}

/// eps_hat, or fl(v_hat + eps_hat) with |v_hat - v| <= e_v, may overflow the accumulator (section 5.2).
bool variance_plus_eps_overflows(double v, double e_v, double eps_hat, const Units& u);

/// Regime flags of the row's inputs and variance, and of the overflow prediction (regimes.cpp).
uint8_t row_regime(const LayerNormCase& c, int64_t row, const RowError& r, const BoundModel& m, const Units& u);

/// Output-level regime: cancellation when |value| < (sum of magnitudes) / 64, underflow below the
/// storage dtype's min normal.
uint8_t output_regime(double value_abs, double magnitude, DType storage);

/// LN-OPBYOP-SEQ (section 4.5): the op-by-op kernel's forward and backward, (magnitude, error) pairs
/// along its graph (bounds_op_by_op.cpp); layernorm_forward_bound / layernorm_backward_bound dispatch here.
TensorBound op_by_op_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);
BackwardBound op_by_op_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m);

/// The arithmetic of one RMSNorm variant, beyond the Units of its accumulator.
struct RmsUnits {
  double u_sum, eta_sum, max_sum;  ///< sum-of-squares accumulator
  double u_xr, eta_xr;             ///< rounding(s) of x r
  double max_xr;                   ///< largest finite value x r may take (bf16 max when rounded)
  double rstd_extra;               ///< extra relative rounding of r
  double u_dg_conv, u_dg_sum, eta_dg;  ///< dg: conversion of each product and the sum over rows
  double u_gain = 0;                   ///< kRmsGainOffset: relative error of the kernel's gain fl(1 + w) (0: the gain is gamma)
};

/// One row's RMS statistics error: delta_r of r_hat and an upper bound of r.
struct RmsRow {
  double delta_r = 0, rstd = 0;
  uint8_t regime = 0;
  double ms = 0, e_ms = 0;  ///< upper bound of the exact mean of squares, and |ms_hat - ms|
};

/// The RMSNorm variant's arithmetic (its RmsFlags) on top of the accumulator units.
RmsUnits rms_units(const BoundModel& m, const Units& u);

/// Row i's r error (docs/bounds.md section 10.1) from the oracle's mean of squares (ref.var) and r.
RmsRow rms_row(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i, const BoundModel& m,
               const Units& u, const RmsUnits& ru);

/// |z_hat - x r| for z_hat = fl(x r_hat) (with the xr rounding when the variant has it).
inline double rms_z_error(double x_abs, const RmsRow& row, const RmsUnits& ru) {
  return product_up({x_abs, row.rstd, compose(row.delta_r, ru.u_xr)}) + ru.eta_xr;
}

/// What the envelope of docs/bounds.md section 15 knows of one row of a kernel with statistics
/// model m: upper bounds of its computed |z_hat_j| and of its computed r_hat, valid in every regime.
struct RowEnvelope {
  std::vector<double> z;  ///< per element: |z_hat_j| <= z[j]
  double r = kInf;        ///< r_hat <= r
  bool valid = false;     ///< false: no envelope (eps rounds to 0 in the accumulator, or no model)
};

/// True when the model has a derived envelope (two-pass, Welford, plain RMS; section 15).
bool has_envelope(const BoundModel& m);

/// The envelope of row `row` of case c under model m (section 15.1).
RowEnvelope row_envelope(const LayerNormCase& c, int64_t row, const BoundModel& m, const Units& u);

/// |z_hat_j| <= this for a two-pass or RMS kernel on rows of length n whatever the data: the computed
/// variance contains d_hat_j^2 itself (section 15.1); +inf when eps_hat = 0.
double normalized_hat(int64_t n, double eps_hat, const Units& u);

/// Radius around beta of a LayerNorm output fl_s(fl(fl(z_hat gamma) + beta)) with |z_hat| <= z_hat.
double shifted_radius(double z_hat, double gamma, double beta, const Units& u);

/// Envelopes of one row's stored dx from |g_hat_j| <= g[j] (the cotangent times the gain, rounded),
/// |z_hat_j| <= z[j] and r_hat <= r: LayerNorm r (g - A - z B), RMSNorm r (g - z B) (section 15.2).
void backward_dx_hats(const double* g, const double* z, int64_t n, double r, bool rms, const Units& u, double* out);

/// r_hat <= this whatever the computed variance (>= 0): the eps floor (section 15.1); +inf when eps_hat = 0.
double eps_reciprocal_hat(double eps_hat, const Units& u);

/// A lower bound of the kernel's r_hat = fl(1 / fl(sqrt(fl(v_hat + eps_hat)))) from v_hat <= v_up
/// (section 15.7); 0 when v_up is void or fl(v_hat + eps_hat) may overflow (then r_hat may be 0).
double reciprocal_low(double v_up, double eps_hat, const Units& u);

/// The structural envelope (section 15.2) of a forward output y = st(fl(fl(z_hat gamma) + beta))
/// (RMSNorm: beta = 0, no sum) with the limit that the sign of z_hat fixes (section 15.7):
/// |z_hat| >= z_low > 0 with the sign of `sign`; with gamma = 0 the output is beta exactly.
Envelope signed_forward_envelope(double sign, double z_low, double gamma, double beta, bool shifted, const Units& u,
                                 const Envelope& structural);

/// A lower bound of |a| |b| that no underflow can make larger (the rounding to nearest of a product
/// below the normal range may round up).
inline double mul_down(double a, double b) {
  const double p = std::fabs(a) * std::fabs(b);
  return p >= 0x1p-1022 ? p * (1 - 0x1p-52) : std::max(0.0, p - kEvalEta);
}

/// Upper bound of |fl(a_hat b_hat)| from |a_hat| <= a, |b_hat| <= b (u a ab + eta).
inline double product_hat(double a, double b, const Units& u) { return mul_up(a, b) * (1 + u.ua) + u.eta_a; }

/// Upper bound of |fl(sum of n terms)| in any order from the sum of the terms' magnitudes.
double sum_hat(double sum_abs, int64_t n, const Units& u);

/// Upper bound of |fl(s / n)| (n rounded to the accumulator when not representable).
double mean_hat(double sum_hat_value, int64_t n, const Units& u);

/// Upper bound of the stored value from the accumulated one (the Accum -> Storage rounding).
inline double stored_hat(double hat, const Units& u) {
  return (u.store_rounds ? hat * (1 + u.us) + u.eta_s : hat) * kEvaluationSlack;
}

}  // namespace normcheck::bounds_detail
