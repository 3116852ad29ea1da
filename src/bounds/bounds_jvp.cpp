// Bounds of the LayerNorm and RMSNorm JVP kernels (docs/bounds.md sections 17 and 17.1). The kernel computes
//   q_hat = fl(r_hat ((t - mean_hat(t)) - z_hat mean_hat(z t)))  with exactly the arithmetic of the
//           two-pass backward's dx for gamma = 1 and dy = t (fl(t * 1) = t is exact),
//   du_hat = fl_s(fl(fl(fl(q_hat gamma) + fl(z_hat tgamma)) + tbeta)).
// So |q_hat - q| is LN-TWOPASS-SEQ's dx bound (section 3) on that case evaluated with the
// accumulator as its storage (no store of q), |z_hat - z| is the forward's normalized error
// (section 2.4), and the three operations after them follow the (magnitude, error) pairs of 11.1.
#include "bounds/bounds_jvp.hpp"

#include "bounds/bounds_model.hpp"
#include "bounds/error_pairs.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// The case whose backward dx is the JVP kernel's q: the case's x and eps, gamma = 1, beta = 0,
/// dy = the x tangent, the accumulator as its dtype (nothing stored).
LayerNormCase unit_case(const LayerNormCase& c, const LayerNormTangents& t, DType accum) {
  LayerNormCase unit = c;
  unit.dtype = accum;
  unit.gamma.assign(static_cast<size_t>(c.n), 1.0);
  unit.beta.assign(static_cast<size_t>(c.n), 0.0);
  unit.dy = t.dx;
  return unit;
}

/// The envelope of du = fl_s(fl(A_hat + tbeta)), |A_hat| <= a_hat (A = fl(q gamma) + fl(z tgamma)):
/// centred on the exact tangent term tbeta, as LayerNorm y is on beta (section 17.2; issue 42: the
/// JVPs had no envelope, so a kernel dropping tbeta where the bound is void passed).
void set_jvp_envelope(TensorBound& out, size_t k, double a_hat, double tbeta, const Units& u) {
  out.env_center[k] = tbeta;
  out.env_radius[k] = std::isfinite(a_hat) ? shifted_radius(a_hat, 1.0, tbeta, u) : kInf;
}

}  // namespace

TensorBound layernorm_jvp_bound(const LayerNormCase& c, const LayerNormTangents& t,
                                const oracle::CertifiedLayerNormJvp& ref, DType accum) {
  const LayerNormCase unit = unit_case(c, t, accum);
  const oracle::CertifiedLayerNorm q_ref = oracle::certified_layernorm(unit, true);
  const BoundModel mq{StatsModel::two_pass, accum, accum, SumOrder::sequential, -1, 0};
  const Units uq = units_of(mq);
  const BackwardBound q = layernorm_backward_bound(unit, q_ref, mq);
  const BoundModel m{StatsModel::two_pass, c.dtype, accum, SumOrder::sequential, -1, 0};
  const EmArith a{units_of(m), dtype_info(c.dtype).max_finite, c.dtype};
  TensorBound out = sized_tensor_bound(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError row = row_error(unit, q_ref, i, mq, uq);
    const RowEnvelope env = row_envelope(unit, i, mq, uq);  // |z_hat| <= env.z
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const double qb = q.dx.bound[k];
      // hat: q's envelope (the backward dx's, section 15.2) and z_hat's (15.1).
      const Em qe{upper_abs(q_ref.dx[k]), qb, !std::isfinite(qb) || (q.dx.regime[k] & kRegimeOverflow), q.dx.env_radius[k]};
      const Em ze{mul_up(row.d_abs[j], row.rstd), normalized_error(row, j, uq), (row.regime & kRegimeOverflow) != 0,
                  env.valid ? env.z[j] : kInf};
      const Em sum = a.add(a.mul(qe, EmArith::exact(c.gamma[j])), a.mul(ze, EmArith::exact(t.dgamma[j])));
      finish_element(out, k, a.add(sum, EmArith::exact(t.dbeta[j])), ref.du[k], a);
      set_jvp_envelope(out, k, sum.hat, t.dbeta[j], a.u);
      out.regime[k] |= q.dx.regime[k] | row.regime;
    }
  }
  return out;
}

// The RMSNorm JVP kernel computes q_hat = fl(r_hat (t - fl(z_hat mean_hat(z t)))) with exactly the
// arithmetic of the RMSNorm backward's dx for gamma = 1 and dy = t (v = fl(1 * t) = t), and
// du_hat = fl_s(fl(fl(q_hat gamma) + fl(z_hat tgamma))): RMS-JVP-SEQ is RMS-SEQ's dx bound (section
// 10) of that unit case with the accumulator as its storage, the forward's z error (section 10.1)
// and two (magnitude, error) steps.
TensorBound rmsnorm_jvp_bound(const LayerNormCase& c, const LayerNormTangents& t, const oracle::CertifiedLayerNormJvp& ref,
                              DType accum) {
  const LayerNormCase unit = unit_case(c, t, accum);
  const oracle::CertifiedLayerNorm q_ref = oracle::certified_rmsnorm(unit, true);
  const BoundModel mq{StatsModel::rms, accum, accum, SumOrder::sequential, -1, 0};
  const Units uq = units_of(mq);
  const RmsUnits ru = rms_units(mq, uq);
  const BackwardBound q = rmsnorm_backward_bound(unit, q_ref, mq);
  const BoundModel m{StatsModel::rms, c.dtype, accum, SumOrder::sequential, -1, 0};
  const EmArith a{units_of(m), dtype_info(c.dtype).max_finite, c.dtype};
  TensorBound out = sized_tensor_bound(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const RmsRow row = rms_row(unit, q_ref, i, mq, uq, ru);
    const RowEnvelope env = row_envelope(unit, i, mq, uq);  // |z_hat| <= env.z
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const double qb = q.dx.bound[k], xa = std::fabs(c.x[k]);
      const Em qe{upper_abs(q_ref.dx[k]), qb, !std::isfinite(qb) || (q.dx.regime[k] & kRegimeOverflow), q.dx.env_radius[k]};
      const Em ze{mul_up(xa, row.rstd), rms_z_error(xa, row, ru), (row.regime & kRegimeOverflow) != 0, env.valid ? env.z[j] : kInf};
      const Em du = a.add(a.mul(qe, EmArith::exact(c.gamma[j])), a.mul(ze, EmArith::exact(t.dgamma[j])));
      finish_element(out, k, du, ref.du[k], a);
      out.regime[k] |= q.dx.regime[k] | row.regime;
    }
  }
  return out;
}

}  // namespace normcheck
