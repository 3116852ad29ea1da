#pragma once
/// Certified LayerNorm oracle: interval evaluation (MPFI) with precision escalation.
#include <cstdint>
#include <vector>

#include "core/certified_value.hpp"
#include "core/layernorm_case.hpp"

namespace normcheck::oracle {

/// Oracle outputs for one case; every value carries its enclosure radius.
struct CertifiedLayerNorm {
  std::vector<CertifiedValue> y;       ///< forward output, rows*n
  std::vector<CertifiedValue> dx;      ///< VJP input cotangent, rows*n (if requested)
  std::vector<CertifiedValue> dgamma;  ///< VJP scale cotangent, n
  std::vector<CertifiedValue> dbeta;   ///< VJP bias cotangent, n
  std::vector<double> mean, var, rstd; ///< per-row statistics, nearest double
  std::vector<double> mean_rad, var_rad, rstd_rad;  ///< certified |exact - nearest double|, per row
  int precision_bits = 0;              ///< working precision of the accepted evaluation (the highest level any row needed)
  double max_err_ulps = 0;  ///< certified: max over outputs of rad / ulp_dtype(value)
  bool certified = false;   ///< max_err_ulps <= kRequiredUlpFraction
  /// Outputs whose rounding to the dtype the enclosure does not decide (a tie or the overflow
  /// threshold inside it); the escalation goes on while there are any (Ziv's loop).
  int64_t undecided_roundings = 0;
};

/// The certified JVP du = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta (rows*n) of a
/// case along tangents, with the statistics of its rows.
struct CertifiedLayerNormJvp {
  std::vector<CertifiedValue> du;
  int precision_bits = 0;
  double max_err_ulps = 0;
  bool certified = false;
  int64_t undecided_roundings = 0;
};

/// The double-ball level (oracles/ball.hpp, 53-bit midpoints with rigorous radii): certifies
/// f16/bf16/f32 outputs of well-conditioned rows at a fraction of MPFI's cost; the cascade falls
/// through to MPFI where it does not reach the target.
CertifiedLayerNorm evaluate_layernorm_ball(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_ball(const LayerNormCase& c, bool with_vjp);
/// The a priori double level (docs/bounds.md section 18.2, oracles/layernorm_a_priori.cpp and
/// rmsnorm_a_priori.cpp): the double ball's midpoints bit for bit, radii from bounds derived once per
/// row; tried before the double ball for f16, bf16 and f32 outputs.
CertifiedLayerNorm evaluate_layernorm_a_priori(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_a_priori(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNormJvp evaluate_layernorm_jvp_ball(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_rmsnorm_jvp_ball(const LayerNormCase& c, const LayerNormTangents& t);

/// The double-double ball level (oracles/dd_ball.hpp, 106-bit midpoints with rigorous radii): f64
/// outputs and the cancellations the double ball cannot resolve, before MPFI.
CertifiedLayerNorm evaluate_layernorm_dd_ball(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_dd_ball(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNormJvp evaluate_layernorm_jvp_dd_ball(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_rmsnorm_jvp_dd_ball(const LayerNormCase& c, const LayerNormTangents& t);
/// The a priori double-double level (docs/bounds.md section 18.3, oracles/rmsnorm_a_priori_dd.cpp):
/// double-double midpoints without a running radius, radii from bounds derived once per row; RMSNorm's
/// first 106-bit level, before the double-double ball (f64 outputs start here). Its y and dx at some
/// outputs and its dgamma at some columns, as the other levels' functions below.
CertifiedLayerNorm evaluate_rmsnorm_a_priori_dd(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_outputs_a_priori_dd(const LayerNormCase& c, const std::vector<int64_t>& ys,
                                                       const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_columns_a_priori_dd(const LayerNormCase& c, const std::vector<int64_t>& cols);

CertifiedLayerNormJvp evaluate_layernorm_jvp_mpfi50(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_layernorm_jvp_mpfi150(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_layernorm_jvp_mpfi400(const LayerNormCase& c, const LayerNormTangents& t);

CertifiedLayerNormJvp evaluate_rmsnorm_jvp_mpfi50(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_rmsnorm_jvp_mpfi150(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_rmsnorm_jvp_mpfi400(const LayerNormCase& c, const LayerNormTangents& t);

/// Certified JVP, escalating 168 -> 500 -> 1330 bits like certified_layernorm.
CertifiedLayerNormJvp certified_layernorm_jvp(const LayerNormCase& c, const LayerNormTangents& t);
/// Certified RMSNorm JVP along (t.dx, t.dgamma): du = gamma r (dx - z mean(z dx)) + z dgamma, z = x r
/// (the case's beta and t.dbeta are not used); the same cascade.
CertifiedLayerNormJvp certified_rmsnorm_jvp(const LayerNormCase& c, const LayerNormTangents& t);

/// Evaluates at 50 decimal digits (MPFI, about 168 bits).
CertifiedLayerNorm evaluate_layernorm_mpfi50(const LayerNormCase& c, bool with_vjp);
/// Evaluates at 150 decimal digits (MPFI, about 500 bits).
CertifiedLayerNorm evaluate_layernorm_mpfi150(const LayerNormCase& c, bool with_vjp);

/// Evaluates at 400 decimal digits (MPFI, about 1330 bits).
CertifiedLayerNorm evaluate_layernorm_mpfi400(const LayerNormCase& c, bool with_vjp);

/// The RMSNorm oracle on a LayerNormCase (gamma is the gain g; beta is ignored): y, and with the VJP
/// dx and dgamma (dbeta stays empty); mean is 0, var is mean(x^2), rstd is r.
CertifiedLayerNorm evaluate_rmsnorm_mpfi50(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_mpfi150(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_rmsnorm_mpfi400(const LayerNormCase& c, bool with_vjp);

/// dgamma and dbeta (RMSNorm: dgamma) of the columns `cols` only, in that order, per level of the
/// cascade (its column fall-through: y and dx stay empty).
CertifiedLayerNorm evaluate_layernorm_columns_ball(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_layernorm_columns_dd_ball(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_layernorm_columns_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_layernorm_columns_mpfi150(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_layernorm_columns_mpfi400(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_ball(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_dd_ball(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_mpfi150(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_mpfi400(const LayerNormCase& c, const std::vector<int64_t>& cols);

/// y at `ys` and dx at `dxs` only (row-major indices into the case, ascending), in that order, per
/// level of the cascade (its element fall-through: the row statistics over whole rows and, for a
/// row with a dx wanted, the VJP's row means over the whole row; the columns stay empty). Each
/// output is the same operations as the level's whole evaluation, so the same certificate.
CertifiedLayerNorm evaluate_layernorm_outputs_ball(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_layernorm_outputs_dd_ball(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_layernorm_outputs_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_layernorm_outputs_mpfi150(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_layernorm_outputs_mpfi400(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_ball(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_dd_ball(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_mpfi150(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_mpfi400(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs);

/// Certified RMSNorm, escalating like certified_layernorm.
CertifiedLayerNorm certified_rmsnorm(const LayerNormCase& c, bool with_vjp);

/// Evaluates at 168 bits and escalates to 500, then 1330 bits, while some enclosure is wider than
/// kRequiredUlpFraction of an output ULP or straddles a rounding boundary of the dtype (Ziv's
/// loop). If even 1330 bits do not suffice (cancellation deeper than about 1200 bits),
/// `certified` is false and the elements concerned are not judged; an element whose rounding is
/// still undecided is judged by its enclosure (either candidate rounding is accepted).
CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp);

}  // namespace normcheck::oracle
