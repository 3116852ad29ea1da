// Bounds for the block Linear o RMSNorm (docs/bounds.md section 11): (magnitude, error) pairs
// (bounds/error_pairs.hpp) following the kernels of src/kernels/rms_block.hpp operation by
// operation, in their order.
#include "bounds/bounds_block.hpp"

#include "bounds/bounds_model.hpp"
#include "bounds/error_pairs.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// The row statistics error of every row, through the RMSNorm bound's model (section 10.1).
std::vector<Em> reciprocal_rms(const RmsBlockCase& c, const oracle::CertifiedRmsBlock& ref, const BoundModel& m,
                               const Units& u, std::vector<uint8_t>& row_regime) {
  LayerNormCase view;
  view.dtype = c.dtype;
  view.rows = c.rows;
  view.n = c.n;
  view.eps = c.eps;
  view.x = c.x;
  oracle::CertifiedLayerNorm stats;
  stats.var = ref.ms;
  stats.var_rad = ref.ms_rad;
  stats.rstd = ref.rstd;
  stats.rstd_rad = ref.rstd_rad;
  const RmsUnits ru = rms_units(m, u);
  std::vector<Em> r(static_cast<size_t>(c.rows));
  row_regime.assign(r.size(), 0);
  for (int64_t i = 0; i < c.rows; ++i) {
    const RmsRow row = rms_row(view, stats, i, m, u, ru);
    r[i] = {row.rstd, row.rstd * row.delta_r, (row.regime & kRegimeOverflow) != 0, row_envelope(view, i, m, u).r};
    row_regime[i] = row.regime;
  }
  return r;
}

/// The bound of one output element from its tracked pair and the oracle's value.
void finish(TensorBound& t, size_t k, const Em& e, const CertifiedValue& ref, uint8_t regime, const EmArith& a) {
  const double exact = upper_abs(ref);
  const bool over = e.over || reaches(exact + e.err, a.max_s);
  t.regime[k] = regime | output_regime(exact, e.mag, a.storage) | (over ? kRegimeOverflow : 0);
  t.bound[k] = over ? kInf : with_store(exact, e.err, a.u);
  set_envelope(t, k, e, a.u);
}

/// Computes the stored u = g * (x r) of the RMSNorm kernel (rows x n).
std::vector<Em> stored_activations(const RmsBlockCase& c, const std::vector<Em>& r, const EmArith& a) {
  std::vector<Em> u(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j)
      u[i * c.n + j] = a.store(a.mul(a.mul(EmArith::exact(c.x[i * c.n + j]), r[i]), EmArith::exact(c.g[j])));
  return u;
}

struct BlockContext {
  const RmsBlockCase& c;
  const oracle::CertifiedRmsBlock& ref;
  EmArith a;
  std::vector<Em> r;
  std::vector<uint8_t> row_regime;
  uint8_t all_rows = 0;
};

/// y = W u + b (GEMM with the bias as initial value), u stored by the RMSNorm kernel.
TensorBound composed_forward(const BlockContext& b, const std::vector<Em>& u) {
  const RmsBlockCase& c = b.c;
  TensorBound t = sized_tensor_bound(b.ref.y.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t k = 0; k < c.m; ++k) {
      Em s = EmArith::exact(c.b.empty() ? 0.0 : c.b[k]);
      for (int64_t j = 0; j < c.n; ++j) s = b.a.add(s, b.a.mul(EmArith::exact(c.w[k * c.n + j]), u[i * c.n + j]));
      finish(t, static_cast<size_t>(i * c.m + k), s, b.ref.y[i * c.m + k], b.row_regime[i], b.a);
    }
  return t;
}

/// du = W^T dy stored, then the RMSNorm backward kernel (dx, dg), and dW = dy^T u.
void composed_backward(const BlockContext& b, const std::vector<Em>& u, BlockBound& out) {
  const RmsBlockCase& c = b.c;
  const EmArith& a = b.a;
  out.dx = sized_tensor_bound(b.ref.dx.size());
  std::vector<Em> dg(static_cast<size_t>(c.n)), v(static_cast<size_t>(c.n)), z(static_cast<size_t>(c.n));
  for (int64_t i = 0; i < c.rows; ++i) {
    Em sum_vz;
    for (int64_t j = 0; j < c.n; ++j) {
      Em du;
      for (int64_t k = 0; k < c.m; ++k) du = a.add(du, a.mul(EmArith::exact(c.w[k * c.n + j]), EmArith::exact(c.dy[i * c.m + k])));
      du = a.store(du);
      z[j] = a.mul(EmArith::exact(c.x[i * c.n + j]), b.r[i]);
      v[j] = a.mul(EmArith::exact(c.g[j]), du);
      sum_vz = a.add(sum_vz, a.mul(v[j], z[j]));
      dg[j] = a.add(dg[j], a.mul(du, z[j]));
    }
    const Em mean_vz = a.div(sum_vz, c.n);
    for (int64_t j = 0; j < c.n; ++j) {
      const Em dx = a.mul(b.r[i], a.add(v[j], a.mul(z[j], mean_vz)));
      finish(out.dx, static_cast<size_t>(i * c.n + j), dx, b.ref.dx[i * c.n + j], b.row_regime[i], a);
    }
  }
  out.dg = sized_tensor_bound(b.ref.dg.size());
  for (int64_t j = 0; j < c.n; ++j) finish(out.dg, static_cast<size_t>(j), dg[j], b.ref.dg[j], b.all_rows, a);
  out.dw = sized_tensor_bound(b.ref.dw.size());
  for (int64_t k = 0; k < c.m; ++k)
    for (int64_t j = 0; j < c.n; ++j) {
      Em s;
      for (int64_t i = 0; i < c.rows; ++i) s = a.add(s, a.mul(EmArith::exact(c.dy[i * c.m + k]), u[i * c.n + j]));
      finish(out.dw, static_cast<size_t>(k * c.n + j), s, b.ref.dw[k * c.n + j], b.all_rows, a);
    }
}

/// W_g = W diag(g) stored (m x n).
std::vector<Em> folded_gain(const BlockContext& b) {
  const RmsBlockCase& c = b.c;
  std::vector<Em> wg(c.w.size());
  for (int64_t k = 0; k < c.m; ++k)
    for (int64_t j = 0; j < c.n; ++j)
      wg[k * c.n + j] = b.a.store(b.a.mul(EmArith::exact(c.w[k * c.n + j]), EmArith::exact(c.g[j])));
  return wg;
}

/// y = r (W_g x) + b with W_g stored.
TensorBound deferred_forward(const BlockContext& b, const std::vector<Em>& wg) {
  const RmsBlockCase& c = b.c;
  TensorBound t = sized_tensor_bound(b.ref.y.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t k = 0; k < c.m; ++k) {
      Em s;
      for (int64_t j = 0; j < c.n; ++j) s = b.a.add(s, b.a.mul(wg[k * c.n + j], EmArith::exact(c.x[i * c.n + j])));
      const Em y = b.a.add(b.a.mul(b.r[i], s), EmArith::exact(c.b.empty() ? 0.0 : c.b[k]));
      finish(t, static_cast<size_t>(i * c.m + k), y, b.ref.y[i * c.m + k], b.row_regime[i], b.a);
    }
  return t;
}

/// dx = r (W_g^T dy) - ((r r) / n) s x with s = <dy, y_stored - b>; dW and dg through dW_g.
void deferred_backward(const BlockContext& b, const std::vector<Em>& wg, const TensorBound& y_bound, BlockBound& out) {
  const RmsBlockCase& c = b.c;
  const EmArith& a = b.a;
  out.dx = sized_tensor_bound(b.ref.dx.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    Em s;
    for (int64_t k = 0; k < c.m; ++k) {
      const size_t yk = static_cast<size_t>(i * c.m + k);
      const Em y{upper_abs(b.ref.y[yk]), y_bound.bound[yk], !std::isfinite(y_bound.bound[yk]), y_bound.env_radius[yk]};
      const Em pre_bias = c.b.empty() ? y : a.add(y, EmArith::exact(c.b[k]));
      s = a.add(s, a.mul(EmArith::exact(c.dy[yk]), pre_bias));
    }
    const Em scale = a.mul(a.div(a.mul(b.r[i], b.r[i]), c.n), s);
    for (int64_t j = 0; j < c.n; ++j) {
      Em gemm;
      for (int64_t k = 0; k < c.m; ++k) gemm = a.add(gemm, a.mul(wg[k * c.n + j], EmArith::exact(c.dy[i * c.m + k])));
      const Em dx = a.add(a.mul(b.r[i], gemm), a.mul(scale, EmArith::exact(c.x[i * c.n + j])));
      finish(out.dx, static_cast<size_t>(i * c.n + j), dx, b.ref.dx[i * c.n + j], b.row_regime[i], a);
    }
  }
  out.dw = sized_tensor_bound(b.ref.dw.size());
  std::vector<Em> dg(static_cast<size_t>(c.n));
  for (int64_t k = 0; k < c.m; ++k)
    for (int64_t j = 0; j < c.n; ++j) {
      Em dwg;
      for (int64_t i = 0; i < c.rows; ++i)
        dwg = a.add(dwg, a.mul(a.mul(b.r[i], EmArith::exact(c.dy[i * c.m + k])), EmArith::exact(c.x[i * c.n + j])));
      finish(out.dw, static_cast<size_t>(k * c.n + j), a.mul(dwg, EmArith::exact(c.g[j])), b.ref.dw[k * c.n + j],
             b.all_rows, a);
      dg[j] = a.add(dg[j], a.mul(EmArith::exact(c.w[k * c.n + j]), dwg));
    }
  out.dg = sized_tensor_bound(b.ref.dg.size());
  for (int64_t j = 0; j < c.n; ++j) finish(out.dg, static_cast<size_t>(j), dg[j], b.ref.dg[j], b.all_rows, a);
}

}  // namespace

BlockBound rms_block_bound(const RmsBlockCase& c, const oracle::CertifiedRmsBlock& ref, BlockForm form, DType accum) {
  const BoundModel m{StatsModel::rms, c.dtype, accum, SumOrder::sequential, -1, 0};
  BlockContext b{c, ref, {units_of(m), dtype_info(c.dtype).max_finite, c.dtype}, {}, {}, 0};
  b.r = reciprocal_rms(c, ref, m, b.a.u, b.row_regime);
  for (uint8_t reg : b.row_regime) b.all_rows |= reg;
  BlockBound out;
  if (form == BlockForm::composed) {
    const std::vector<Em> u = stored_activations(c, b.r, b.a);
    out.y = composed_forward(b, u);
    composed_backward(b, u, out);
  } else {
    const std::vector<Em> wg = folded_gain(b);
    out.y = deferred_forward(b, wg);
    deferred_backward(b, wg, out.y, out);
  }
  return out;
}

std::string block_bound_id(BlockForm form) {
  return form == BlockForm::composed ? "BLOCK-COMPOSED" : "BLOCK-DEFERRED";
}

}  // namespace normcheck
