#pragma once
/// Gemma's RMSNorm under test: y = x r (1 + w), r = 1/sqrt(mean(x^2) + eps), the gain 1 + w formed
/// by the kernel (HF transformers' GemmaRMSNorm: `x * (1.0 + self.weight.float())`). Templated on
/// storage and accumulator like every kernel; GainT is the type 1 + w is rounded to:
///   gemma_rms              the gain in Accum (f32 for f16/bf16 data)                       (sound)
///   gemma_gain_storage     the gain rounded to Storage (1 + w in bf16: the weight's low bits
///                          are lost, the bug class of Gemma ports that add 1 in the weights'
///                          dtype)                                                          (weak)
#include <cstdint>
#include <vector>

#include "kernels/rmsnorm.hpp"

namespace normcheck::kernels {

template <class Accum>
using SoundRms = RmsPolicy<Accum, Accum, false, false, Accum>;

/// The gains fl(1 + w_j), rounded to GainT, as Accum values.
template <class Storage, class Accum, class GainT>
std::vector<Accum> gemma_gains(const Storage* w, int64_t n) {
  std::vector<Accum> g(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    g[static_cast<size_t>(j)] = num::convert<Accum>(num::convert<GainT>(num::constant<Accum>(1.0) + num::convert<Accum>(w[j])));
  return g;
}

template <class Storage, class Accum, class GainT>
void gemma_rmsnorm_forward_with(const Storage* x, const Storage* w, int64_t rows, int64_t n, double eps, Storage* y) {
  const Accum eps_a = num::constant<Accum>(eps);
  const std::vector<Accum> g = gemma_gains<Storage, Accum, GainT>(w, n);
  for (int64_t i = 0; i < rows; ++i) {
    const Accum r = rms_reciprocal<Storage, Accum, SoundRms<Accum>>(x + i * n, n, eps_a);
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = num::convert<Storage>((num::convert<Accum>(x[i * n + j]) * r) * g[static_cast<size_t>(j)]);
  }
}

/// dx = r (v - z mean(v z)) with v = (1 + w) dy, z = x r; dw = sum_rows dy z (the gain's offset
/// has derivative 1).
template <class Storage, class Accum, class GainT>
void gemma_rmsnorm_backward_with(const Storage* x, const Storage* w, const Storage* dy, int64_t rows, int64_t n, double eps,
                                 Storage* dx, Storage* dw) {
  const Accum eps_a = num::constant<Accum>(eps), count = num::constant<Accum>(static_cast<double>(n));
  const std::vector<Accum> g = gemma_gains<Storage, Accum, GainT>(w, n);
  std::vector<Accum> dw_acc(static_cast<size_t>(n), num::constant<Accum>(0.0)), z(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    const Accum r = rms_reciprocal<Storage, Accum, SoundRms<Accum>>(x + i * n, n, eps_a);
    Accum sum_vz = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < n; ++j) {
      const Accum dyj = num::convert<Accum>(dy[i * n + j]);
      z[j] = num::convert<Accum>(x[i * n + j]) * r;
      v[j] = g[j] * dyj;
      sum_vz += v[j] * z[j];
      dw_acc[j] += dyj * z[j];
    }
    const Accum mean_vz = sum_vz / count;
    for (int64_t j = 0; j < n; ++j) dx[i * n + j] = num::convert<Storage>(r * (v[j] - z[j] * mean_vz));
  }
  for (int64_t j = 0; j < n; ++j) dw[j] = num::convert<Storage>(dw_acc[j]);
}

template <class Storage, class Accum = default_accum_t<Storage>>
void gemma_rmsnorm_forward_gemma_rms(const Storage* x, const Storage* w, int64_t rows, int64_t n, double eps, Storage* y) {
  gemma_rmsnorm_forward_with<Storage, Accum, Accum>(x, w, rows, n, eps, y);
}
template <class Storage, class Accum = default_accum_t<Storage>>
void gemma_rmsnorm_backward_gemma_rms(const Storage* x, const Storage* w, const Storage* dy, int64_t rows, int64_t n, double eps,
                                      Storage* dx, Storage* dw) {
  gemma_rmsnorm_backward_with<Storage, Accum, Accum>(x, w, dy, rows, n, eps, dx, dw);
}
template <class Storage, class Accum = default_accum_t<Storage>>
void gemma_rmsnorm_forward_gemma_gain_storage(const Storage* x, const Storage* w, int64_t rows, int64_t n, double eps, Storage* y) {
  gemma_rmsnorm_forward_with<Storage, Accum, Storage>(x, w, rows, n, eps, y);
}
template <class Storage, class Accum = default_accum_t<Storage>>
void gemma_rmsnorm_backward_gemma_gain_storage(const Storage* x, const Storage* w, const Storage* dy, int64_t rows, int64_t n,
                                               double eps, Storage* dx, Storage* dw) {
  gemma_rmsnorm_backward_with<Storage, Accum, Storage>(x, w, dy, rows, n, eps, dx, dw);
}

}  // namespace normcheck::kernels
