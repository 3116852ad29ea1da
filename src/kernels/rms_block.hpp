#pragma once
/// The block Linear o RMSNorm, y = W (g * r x) + b, under test in two forms (seed:
/// deferred-rmsnorm-backward), templated on storage and accumulator:
///   composed  two kernels as autograd runs them: the RMSNorm kernel stores u = g * x r (Storage),
///             the GEMM y = W u + b; backward: the GEMM stores du = W^T dy (Storage), the RMSNorm
///             backward kernel gives dx and dg from du, and dW = dy^T u from the saved u
///   deferred  W_g = W diag(g) folded offline and stored in Storage; y = r (W_g x) + b with r in
///             the GEMM epilogue; backward dx = r (W_g^T dy) - (r^2/n) <dy, y - b> x: one GEMM
///             plus one scalar per row, from the stored forward output y; dW_g = (diag(r) dy)^T x
///             in the accumulator, dW = dW_g diag(g), dg_j = sum_k W_kj dW_g,kj
///   deferred_bias_in_correction  a planted defect: the correction scalar uses <dy, y>, not
///             <dy, y - b> (wrong whenever b != 0; the harness must flag it)
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"
#include "kernels/rmsnorm.hpp"

namespace normcheck::kernels {

/// Shapes and inputs of a block call (row-major; w is m x n).
template <class Storage>
struct RmsBlockArgs {
  const Storage *x, *g, *w, *b, *dy;  ///< b may be null
  int64_t rows, n, m;
  double eps;
};

/// Outputs of a block backward call (dx: rows x n, dw: m x n, dg: n).
template <class Storage>
struct RmsBlockGrads {
  Storage *dx, *dw, *dg;
};

/// The sound sum of squares, rsqrt and products in Accum (the `rms` kernel's arithmetic).
template <class Accum>
using BlockRmsPolicy = RmsPolicy<Accum, Accum, false, false, Accum>;

template <class Storage, class Accum>
Accum block_rms_reciprocal(const RmsBlockArgs<Storage>& a, int64_t row) {
  return rms_reciprocal<Storage, Accum, BlockRmsPolicy<Accum>>(a.x + row * a.n, a.n, num::constant<Accum>(a.eps));
}

template <class Storage, class Accum>
Accum bias_of(const RmsBlockArgs<Storage>& a, int64_t k) {
  return a.b ? num::convert<Accum>(a.b[k]) : num::constant<Accum>(0.0);
}

/// W diag(g) rounded to Storage, as a fused implementation stores it.
template <class Storage, class Accum>
std::vector<Storage> fold_gain(const RmsBlockArgs<Storage>& a) {
  std::vector<Storage> wg(static_cast<size_t>(a.m * a.n));
  for (int64_t k = 0; k < a.m; ++k)
    for (int64_t j = 0; j < a.n; ++j)
      wg[k * a.n + j] = num::convert<Storage>(num::convert<Accum>(a.w[k * a.n + j]) * num::convert<Accum>(a.g[j]));
  return wg;
}

/// sum_j mat[k][j] v[j] in Accum, sequential in j (one output of a GEMM with row-major mat).
template <class Storage, class Accum, class V>
Accum dot_row(const Storage* mat_row, const V* v, int64_t n, Accum init) {
  for (int64_t j = 0; j < n; ++j) init += num::convert<Accum>(mat_row[j]) * num::convert<Accum>(v[j]);
  return init;
}

/// sum_k mat[k][j] v[k] in Accum, sequential in k (one output of a transposed GEMM).
template <class Storage, class Accum>
Accum dot_column(const Storage* mat, int64_t n, int64_t m, int64_t j, const Storage* v) {
  Accum s = num::constant<Accum>(0.0);
  for (int64_t k = 0; k < m; ++k) s += num::convert<Accum>(mat[k * n + j]) * num::convert<Accum>(v[k]);
  return s;
}

/// The normalized activations u = g * x r as the RMSNorm kernel stores them (rows x n).
template <class Storage, class Accum>
std::vector<Storage> normalized_activations(const RmsBlockArgs<Storage>& a) {
  std::vector<Storage> u(static_cast<size_t>(a.rows * a.n));
  rmsnorm_forward_with<Storage, Accum, BlockRmsPolicy<Accum>>(a.x, a.g, a.rows, a.n, a.eps, u.data());
  return u;
}

template <class Storage, class Accum>
void linear_rmsnorm_forward_composed(const RmsBlockArgs<Storage>& a, Storage* y) {
  const std::vector<Storage> u = normalized_activations<Storage, Accum>(a);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.m; ++k)
      y[i * a.m + k] = num::convert<Storage>(dot_row<Storage, Accum>(a.w + k * a.n, &u[i * a.n], a.n, bias_of<Storage, Accum>(a, k)));
}

template <class Storage, class Accum>
void linear_rmsnorm_forward_deferred(const RmsBlockArgs<Storage>& a, Storage* y) {
  const std::vector<Storage> wg = fold_gain<Storage, Accum>(a);
  for (int64_t i = 0; i < a.rows; ++i) {
    const Accum r = block_rms_reciprocal<Storage, Accum>(a, i);
    for (int64_t k = 0; k < a.m; ++k) {
      const Accum s = dot_row<Storage, Accum>(&wg[k * a.n], a.x + i * a.n, a.n, num::constant<Accum>(0.0));
      y[i * a.m + k] = num::convert<Storage>(r * s + bias_of<Storage, Accum>(a, k));
    }
  }
}

/// Backward as two kernels: du = W^T dy stored, the RMSNorm backward kernel, dW = dy^T u.
template <class Storage, class Accum>
void linear_rmsnorm_backward_composed(const RmsBlockArgs<Storage>& a, const RmsBlockGrads<Storage>& out) {
  std::vector<Storage> du(static_cast<size_t>(a.rows * a.n));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.n; ++j)
      du[i * a.n + j] = num::convert<Storage>(dot_column<Storage, Accum>(a.w, a.n, a.m, j, a.dy + i * a.m));
  rmsnorm_backward_with<Storage, Accum, BlockRmsPolicy<Accum>>(a.x, a.g, du.data(), a.rows, a.n, a.eps, out.dx, out.dg);
  const std::vector<Storage> u = normalized_activations<Storage, Accum>(a);
  for (int64_t k = 0; k < a.m; ++k)
    for (int64_t j = 0; j < a.n; ++j) {
      Accum s = num::constant<Accum>(0.0);
      for (int64_t i = 0; i < a.rows; ++i) s += num::convert<Accum>(a.dy[i * a.m + k]) * num::convert<Accum>(u[i * a.n + j]);
      out.dw[k * a.n + j] = num::convert<Storage>(s);
    }
}

/// <dy, y - b> of one row from the stored output y; with `bias_in_correction` the planted
/// defect <dy, y>.
template <class Storage, class Accum>
Accum correction_dot(const RmsBlockArgs<Storage>& a, const Storage* y, int64_t i, bool bias_in_correction) {
  Accum s = num::constant<Accum>(0.0);
  for (int64_t k = 0; k < a.m; ++k) {
    const Accum yk = num::convert<Accum>(y[i * a.m + k]);
    const Accum pre_bias = bias_in_correction ? yk : yk - bias_of<Storage, Accum>(a, k);
    s += num::convert<Accum>(a.dy[i * a.m + k]) * pre_bias;
  }
  return s;
}

/// dW_g = (diag(r) dy)^T x in Accum, then dW = dW_g diag(g) and dg_j = sum_k W_kj dW_g,kj.
template <class Storage, class Accum>
void deferred_parameter_grads(const RmsBlockArgs<Storage>& a, const std::vector<Accum>& r, const RmsBlockGrads<Storage>& out) {
  std::vector<Accum> dg(static_cast<size_t>(a.n), num::constant<Accum>(0.0));
  for (int64_t k = 0; k < a.m; ++k)
    for (int64_t j = 0; j < a.n; ++j) {
      Accum dwg = num::constant<Accum>(0.0);
      for (int64_t i = 0; i < a.rows; ++i)
        dwg += (r[i] * num::convert<Accum>(a.dy[i * a.m + k])) * num::convert<Accum>(a.x[i * a.n + j]);
      out.dw[k * a.n + j] = num::convert<Storage>(dwg * num::convert<Accum>(a.g[j]));
      dg[j] += num::convert<Accum>(a.w[k * a.n + j]) * dwg;
    }
  for (int64_t j = 0; j < a.n; ++j) out.dg[j] = num::convert<Storage>(dg[j]);
}

/// dx = r (W_g^T dy) - (r^2/n) <dy, y - b> x with the stored forward output `y` (Storage).
template <class Storage, class Accum>
void linear_rmsnorm_backward_deferred_with(const RmsBlockArgs<Storage>& a, const Storage* y,
                                           const RmsBlockGrads<Storage>& out, bool bias_in_correction) {
  const std::vector<Storage> wg = fold_gain<Storage, Accum>(a);
  std::vector<Accum> r(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i) {
    r[i] = block_rms_reciprocal<Storage, Accum>(a, i);
    const Accum s = correction_dot<Storage, Accum>(a, y, i, bias_in_correction);
    const Accum scale = r[i] * r[i] / num::constant<Accum>(static_cast<double>(a.n)) * s;
    for (int64_t j = 0; j < a.n; ++j) {
      const Accum gemm = dot_column<Storage, Accum>(wg.data(), a.n, a.m, j, a.dy + i * a.m);
      out.dx[i * a.n + j] = num::convert<Storage>(r[i] * gemm - scale * num::convert<Accum>(a.x[i * a.n + j]));
    }
  }
  deferred_parameter_grads<Storage, Accum>(a, r, out);
}

template <class Storage, class Accum>
void linear_rmsnorm_backward_deferred(const RmsBlockArgs<Storage>& a, const Storage* y, const RmsBlockGrads<Storage>& out) {
  linear_rmsnorm_backward_deferred_with<Storage, Accum>(a, y, out, false);
}

template <class Storage, class Accum>
void linear_rmsnorm_backward_deferred_bias_in_correction(const RmsBlockArgs<Storage>& a, const Storage* y,
                                                         const RmsBlockGrads<Storage>& out) {
  linear_rmsnorm_backward_deferred_with<Storage, Accum>(a, y, out, true);
}

}  // namespace normcheck::kernels
