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

/// The gains fl(1 + w_j), rounded to GainT, as Accum values: RMSNorm's kernels with this gain
/// policy are Gemma's.
template <class GainT>
struct GemmaGain {
  template <class Storage, class Accum>
  static std::vector<Accum> gains(const Storage* w, int64_t n) {
    std::vector<Accum> g(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      g[static_cast<size_t>(j)] = num::convert<Accum>(num::convert<GainT>(num::constant<Accum>(1.0) + num::convert<Accum>(w[j])));
    return g;
  }
};

template <class Storage, class Accum, class GainT>
void gemma_rmsnorm_forward_with(const Storage* x, const Storage* w, int64_t rows, int64_t n, double eps, Storage* y) {
  rmsnorm_forward_with<Storage, Accum, SoundRms<Accum>, GemmaGain<GainT>>(x, w, rows, n, eps, y);
}

/// dx = r (v - z mean(v z)) with v = (1 + w) dy, z = x r; dw = sum_rows dy z.
template <class Storage, class Accum, class GainT>
void gemma_rmsnorm_backward_with(const Storage* x, const Storage* w, const Storage* dy, int64_t rows, int64_t n, double eps,
                                 Storage* dx, Storage* dw) {
  rmsnorm_backward_with<Storage, Accum, SoundRms<Accum>, GemmaGain<GainT>>(x, w, dy, rows, n, eps, dx, dw);
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
