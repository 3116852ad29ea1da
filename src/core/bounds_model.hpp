#pragma once
/// Internal pieces shared by the bound formulas (bounds_stats.cpp, bounds.cpp, regimes.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bounds.hpp"

namespace normcheck::bounds_detail {

/// Slack for the double rounding of the bound's own sums of nonnegative terms (at most
/// (n + 8) 2^-53 < 1.2e-10 relative for n <= 2^20; docs/bounds.md section 1.4). Quantities that
/// come from the oracle or suffer cancellation are inflated explicitly instead (kRel).
inline constexpr double kEvaluationSlack = 1.0 + 1e-6;
/// Relative inflation turning a nearest-double oracle statistic into an upper bound (its
/// rounding 2^-53 plus the certified radius, far below 2^-60 relative).
inline constexpr double kRel = 0x1p-50;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Units {
  double us, ua;        ///< unit roundoffs of storage and accumulator
  double eta_s, eta_a;  ///< half the subnormal spacing: absolute error of a rounding in underflow
  bool store_rounds;    ///< the final conversion Accum -> Storage rounds
  double max_a;         ///< largest finite accumulator value
  double rsqrt;         ///< relative error of 1/sqrt beyond its argument's error
  SumOrder order;
};

/// (1+u)(1-u)^(-3/2) / sqrt(p + q) for p = root_p^2, q = root_q^2 >= 0: the computed reciprocal
/// square root of a rounded sum of p and q, bounded above (section 15.1). hypot forms p + q without
/// overflow: where fl(p + q) overflows the kernel's r_hat is 0, the exact value and a wider kernel's
/// are not.
inline double reciprocal_root_of_sum(double root_p, double root_q, const Units& u) {
  return (1 + u.ua) / std::pow(1 - u.ua, 1.5) / std::hypot(root_p, root_q) * kEvaluationSlack;
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
  return u.store_rounds ? err + u.us * (mag + err) + u.eta_s : err;
}

RowError row_error(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t row,
                   const BoundModel& m, const Units& u);

/// |z_hat - z| for z_hat = fl(d_hat * r_hat).
inline double normalized_error(const RowError& r, int64_t j, const Units& u) {
  const double z = r.d_abs[j] * r.rstd;
  return r.rstd * (r.d_abs[j] * r.delta_r + r.e_d[j] * (1 + r.delta_r)) * (1 + u.ua) + u.ua * z + u.eta_a;
}

/// Upper bound of |oracle value| from its double-double and certified radius.
inline double upper_abs(const CertifiedValue& v) {
  return (std::fabs(v.approx()) + scale_by_pow2(std::fabs(v.lo) + v.rad, v.scale)) * (1 + kRel) +
         std::numeric_limits<double>::denorm_min();
}

/// Adds the Accum -> Storage store rounding to an accumulated-value error bound.
inline double with_store(double exact_abs, double err, const Units& u) {
  if (std::isnan(err)) return kInf;  // 0 * inf: void bound
  const double stored = u.store_rounds ? err + u.us * (exact_abs + err) + u.eta_s : err;
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
};

/// One row's RMS statistics error: delta_r of r_hat and an upper bound of r.
struct RmsRow {
  double delta_r = 0, rstd = 0;
  uint8_t regime = 0;
};

/// The RMSNorm variant's arithmetic (its RmsFlags) on top of the accumulator units.
RmsUnits rms_units(const BoundModel& m, const Units& u);

/// Row i's r error (docs/bounds.md section 10.1) from the oracle's mean of squares (ref.var) and r.
RmsRow rms_row(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i, const BoundModel& m,
               const Units& u, const RmsUnits& ru);

/// |z_hat - x r| for z_hat = fl(x r_hat) (with the xr rounding when the variant has it).
inline double rms_z_error(double x_abs, const RmsRow& row, const RmsUnits& ru) {
  return x_abs * row.rstd * (compose(row.delta_r, ru.u_xr)) + ru.eta_xr;
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

/// Upper bound of |fl(a_hat b_hat)| from |a_hat| <= a, |b_hat| <= b (u a ab + eta).
inline double product_hat(double a, double b, const Units& u) { return a * b * (1 + u.ua) + u.eta_a; }

/// Upper bound of |fl(sum of n terms)| in any order from the sum of the terms' magnitudes.
double sum_hat(double sum_abs, int64_t n, const Units& u);

/// Upper bound of |fl(s / n)| (n rounded to the accumulator when not representable).
double mean_hat(double sum_hat_value, int64_t n, const Units& u);

/// Upper bound of the stored value from the accumulated one (the Accum -> Storage rounding).
inline double stored_hat(double hat, const Units& u) {
  return (u.store_rounds ? hat * (1 + u.us) + u.eta_s : hat) * kEvaluationSlack;
}

}  // namespace normcheck::bounds_detail
