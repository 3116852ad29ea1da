#pragma once
/// The block Linear o RMSNorm, y = W (g * r x) + b, under test in two forms (seed:
/// deferred-rmsnorm-backward), templated on storage and accumulator:
///   composed  u = g * r x stored in Storage, then the GEMM y = W u + b; backward through W^T then
///             the RMSNorm VJP
///   deferred  W_g = W diag(g) folded offline and stored in Storage; y = r (W_g x) + b; backward
///             dx = r (W_g^T dy) - (r^2/n) <dy, y - b> x: one GEMM plus one scalar per row, using
///             the stored forward output y
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

/// Shapes and inputs of a block call (row-major; w is m x n).
template <class Storage>
struct RmsBlockArgs {
  const Storage *x, *g, *w, *b, *dy;  ///< b may be null
  int64_t rows, n, m;
  double eps;
};

template <class Storage, class Accum>
Accum block_rms_reciprocal(const Storage* x, int64_t n, Accum eps) {
  Accum ss = num::constant<Accum>(0.0);
  for (int64_t j = 0; j < n; ++j) {
    const Accum xj = num::convert<Accum>(x[j]);
    ss += xj * xj;
  }
  return num::constant<Accum>(1.0) / num::sqrt(ss / num::constant<Accum>(static_cast<double>(n)) + eps);
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

template <class Storage, class Accum>
void linear_rmsnorm_forward_composed(const RmsBlockArgs<Storage>& a, Storage* y) {
  const Accum eps = num::constant<Accum>(a.eps);
  std::vector<Storage> u(static_cast<size_t>(a.n));
  for (int64_t i = 0; i < a.rows; ++i) {
    const Accum r = block_rms_reciprocal<Storage, Accum>(a.x + i * a.n, a.n, eps);
    for (int64_t j = 0; j < a.n; ++j)
      u[j] = num::convert<Storage>(num::convert<Accum>(a.g[j]) * (num::convert<Accum>(a.x[i * a.n + j]) * r));
    for (int64_t k = 0; k < a.m; ++k) {
      Accum s = a.b ? num::convert<Accum>(a.b[k]) : num::constant<Accum>(0.0);
      for (int64_t j = 0; j < a.n; ++j) s += num::convert<Accum>(a.w[k * a.n + j]) * num::convert<Accum>(u[j]);
      y[i * a.m + k] = num::convert<Storage>(s);
    }
  }
}

template <class Storage, class Accum>
void linear_rmsnorm_forward_deferred(const RmsBlockArgs<Storage>& a, Storage* y) {
  const Accum eps = num::constant<Accum>(a.eps);
  const std::vector<Storage> wg = fold_gain<Storage, Accum>(a);
  for (int64_t i = 0; i < a.rows; ++i) {
    const Accum r = block_rms_reciprocal<Storage, Accum>(a.x + i * a.n, a.n, eps);
    for (int64_t k = 0; k < a.m; ++k) {
      Accum s = num::constant<Accum>(0.0);
      for (int64_t j = 0; j < a.n; ++j) s += num::convert<Accum>(wg[k * a.n + j]) * num::convert<Accum>(a.x[i * a.n + j]);
      const Accum bias = a.b ? num::convert<Accum>(a.b[k]) : num::constant<Accum>(0.0);
      y[i * a.m + k] = num::convert<Storage>(r * s + bias);
    }
  }
}

/// dx through W^T and the RMSNorm VJP (the normalized activations are recomputed).
template <class Storage, class Accum>
void linear_rmsnorm_backward_dx_composed(const RmsBlockArgs<Storage>& a, Storage* dx) {
  const Accum eps = num::constant<Accum>(a.eps);
  const Accum count = num::constant<Accum>(static_cast<double>(a.n));
  std::vector<Accum> v(static_cast<size_t>(a.n)), z(static_cast<size_t>(a.n));
  for (int64_t i = 0; i < a.rows; ++i) {
    const Accum r = block_rms_reciprocal<Storage, Accum>(a.x + i * a.n, a.n, eps);
    Accum sum_vz = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < a.n; ++j) {
      Accum c = num::constant<Accum>(0.0);
      for (int64_t k = 0; k < a.m; ++k) c += num::convert<Accum>(a.w[k * a.n + j]) * num::convert<Accum>(a.dy[i * a.m + k]);
      v[j] = num::convert<Accum>(a.g[j]) * c;
      z[j] = num::convert<Accum>(a.x[i * a.n + j]) * r;
      sum_vz += v[j] * z[j];
    }
    const Accum mean_vz = sum_vz / count;
    for (int64_t j = 0; j < a.n; ++j) dx[i * a.n + j] = num::convert<Storage>(r * (v[j] - z[j] * mean_vz));
  }
}

/// dx = r (W_g^T dy) - (r^2/n) <dy, y - b> x with the stored forward output `y` (Storage).
template <class Storage, class Accum>
void linear_rmsnorm_backward_dx_deferred(const RmsBlockArgs<Storage>& a, const Storage* y, Storage* dx) {
  const Accum eps = num::constant<Accum>(a.eps);
  const std::vector<Storage> wg = fold_gain<Storage, Accum>(a);
  for (int64_t i = 0; i < a.rows; ++i) {
    const Accum r = block_rms_reciprocal<Storage, Accum>(a.x + i * a.n, a.n, eps);
    Accum s = num::constant<Accum>(0.0);
    for (int64_t k = 0; k < a.m; ++k) {
      const Accum pre_bias = num::convert<Accum>(y[i * a.m + k]) - (a.b ? num::convert<Accum>(a.b[k]) : num::constant<Accum>(0.0));
      s += num::convert<Accum>(a.dy[i * a.m + k]) * pre_bias;
    }
    const Accum scale = r * r / num::constant<Accum>(static_cast<double>(a.n)) * s;
    for (int64_t j = 0; j < a.n; ++j) {
      Accum gemm = num::constant<Accum>(0.0);
      for (int64_t k = 0; k < a.m; ++k) gemm += num::convert<Accum>(wg[k * a.n + j]) * num::convert<Accum>(a.dy[i * a.m + k]);
      dx[i * a.n + j] = num::convert<Storage>(r * gemm - scale * num::convert<Accum>(a.x[i * a.n + j]));
    }
  }
}

}  // namespace normcheck::kernels
