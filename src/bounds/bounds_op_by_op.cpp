// LN-OPBYOP-SEQ: the own bound of the LayerNorm an eager autograd engine runs, every primitive's
// result stored in the storage dtype (src/kernels/layernorm_op_by_op.hpp; docs/bounds.md section 4.5).
// The statistics come from row_error's op_by_op model; the rest follows the kernel's graph with
// (magnitude, error) pairs (section 11.1), one store per primitive.
#include "bounds/error_pairs.hpp"

namespace normcheck::bounds_detail {
namespace {

/// The row's stored r_hat as a pair: |r| <= r_bar, |r_hat - r| <= r_bar delta_r.
Em rstd_pair(const RowError& r) {
  const bool over = (r.regime & kRegimeOverflow) != 0;
  return {r.rstd, r.rstd * r.delta_r, over, r.rstd * (1 + r.delta_r)};
}

/// The stored deviation d_hat_j = st(fl(x_j - mu_hat)) as a pair (row_error's e_d includes both roundings).
Em deviation_pair(const RowError& r, int64_t j) {
  const bool over = (r.regime & kRegimeOverflow) != 0;
  return {r.d_abs[j], r.e_d[j], over, r.d_abs[j] + r.e_d[j]};
}

/// Marks every element of a row with the row's regime flags (overflow voids the bound).
void add_row_regime(TensorBound& t, size_t k, uint8_t regime) {
  t.regime[k] |= regime;
  if (regime & kRegimeOverflow) t.bound[k] = kInf;
}

}  // namespace

TensorBound op_by_op_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  const Units u = units_of(m);
  const EmArith a{u, dtype_info(c.dtype).max_finite, c.dtype};
  TensorBound out = sized_tensor_bound(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    const Em rr = rstd_pair(r);
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const Em z = a.store(a.mul(deviation_pair(r, j), rr));
      const Em zg = a.store(a.mul(z, EmArith::exact(c.gamma[j])));
      finish_element(out, k, a.add(zg, EmArith::exact(c.beta[j])), ref.y[k], a);
      add_row_regime(out, k, r.regime);
    }
  }
  return out;
}

BackwardBound op_by_op_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  const Units u = units_of(m);
  const EmArith a{u, dtype_info(c.dtype).max_finite, c.dtype};
  const size_t n = static_cast<size_t>(c.n);
  BackwardBound out{sized_tensor_bound(c.x.size()), sized_tensor_bound(n), sized_tensor_bound(n)};
  std::vector<Em> dgamma(n, EmArith::exact(0)), dbeta(n, EmArith::exact(0)), d(n), dz(n), dd(n);
  std::vector<uint8_t> col_regime(n, 0);
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    const Em rr = rstd_pair(r);
    const size_t base = static_cast<size_t>(i * c.n);
    Em dr = EmArith::exact(0);  // sum_j st(dz_j d_j)
    for (size_t j = 0; j < n; ++j) {
      const Em dy = EmArith::exact(c.dy[base + j]);
      d[j] = deviation_pair(r, static_cast<int64_t>(j));
      const Em z = a.store(a.mul(d[j], rr));
      dz[j] = a.store(a.mul(dy, EmArith::exact(c.gamma[j])));
      dgamma[j] = a.add(dgamma[j], a.store(a.mul(dy, z)));
      dbeta[j] = a.add(dbeta[j], dy);
      dr = a.add(dr, a.store(a.mul(dz[j], d[j])));
      col_regime[j] |= r.regime & ~kRegimeCancellation;
    }
    const Em r3 = a.store(a.mul(a.mul(rr, rr), rr));  // rsqrt'(ve) = -r^3 / 2
    const Em dv = a.store(a.mul(EmArith::exact(0.5), a.store(a.mul(a.store(dr), r3))));
    const Em ds = a.store(a.div(dv, c.n));
    Em dmu = EmArith::exact(0);  // -sum_j dd_j (the negation is exact)
    for (size_t j = 0; j < n; ++j) {
      const Em dd1 = a.store(a.mul(dz[j], rr));
      const Em dd2 = a.store(a.mul(ds, a.store(a.mul(EmArith::exact(2), d[j]))));
      dd[j] = a.store(a.add(dd1, dd2));
      dmu = a.add(dmu, dd[j]);
    }
    const Em dmu_n = a.store(a.div(a.store(dmu), c.n));
    for (size_t j = 0; j < n; ++j) {
      finish_element(out.dx, base + j, a.add(dd[j], dmu_n), ref.dx[base + j], a);
      add_row_regime(out.dx, base + j, r.regime);
    }
  }
  for (size_t j = 0; j < n; ++j) {
    finish_element(out.dgamma, j, dgamma[j], ref.dgamma[j], a);
    add_row_regime(out.dgamma, j, col_regime[j]);
    finish_element(out.dbeta, j, dbeta[j], ref.dbeta[j], a);
  }
  return out;
}

}  // namespace normcheck::bounds_detail
