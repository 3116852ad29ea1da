#pragma once
/// RMSNorm kernels under test: y = g * x r with r = 1/sqrt(mean(x^2) + eps), templated on storage
/// and accumulator. Variants are named functions; the known-weak ones reproduce tracker bugs:
///   rms                 sum of squares, rsqrt and products in Accum                      (sound)
///   rms_sumsq_storage   sum of squares accumulated in Storage (onnxruntime#29034)        (weak)
///   rms_invrms_bf16     r rounded to bf16 before use (amd/IRON PR #139)                  (weak)
///   rms_xr_bf16         x r rounded to bf16 before the weight multiply (vllm PR #536)    (weak)
///   rms_dg_bf16         dg accumulated in bf16 (karpathy/llm.c#428, Liger-Kernel #950)   (weak)
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

/// Arithmetic choices of one RMSNorm variant (policy): the sum-of-squares accumulator, extra
/// roundings of r and of x r, and the dg accumulator.
template <class Accum, class SumT, bool RoundRstd, bool RoundXr, class DgT>
struct RmsPolicy {
  using sum_type = SumT;
  using dg_type = DgT;
  static Accum rstd(Accum r) { return RoundRstd ? num::convert<Accum>(num::convert<bf16>(r)) : r; }
  static Accum xr(Accum v) { return RoundXr ? num::convert<Accum>(num::convert<bf16>(v)) : v; }
};

/// How a kernel forms its gains from the stored weights, as Accum values. Plain RMSNorm uses the
/// weights themselves (converted exactly); Gemma's RMSNorm forms 1 + w (ops/gemma_rmsnorm).
struct StoredGain {
  template <class Storage, class Accum>
  static std::vector<Accum> gains(const Storage* g, int64_t n) {
    std::vector<Accum> out(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(j)] = num::convert<Accum>(g[j]);
    return out;
  }
};

/// r = 1 / sqrt(sum(x^2)/n + eps), the sum in Policy::sum_type.
template <class Storage, class Accum, class Policy>
Accum rms_reciprocal(const Storage* x, int64_t n, Accum eps) {
  using SumT = typename Policy::sum_type;
  SumT ss = num::constant<SumT>(0.0);
  for (int64_t j = 0; j < n; ++j) {
    const SumT xj = num::convert<SumT>(x[j]);
    ss += xj * xj;
  }
  const Accum ms = num::convert<Accum>(ss) / num::constant<Accum>(static_cast<double>(n));
  return Policy::rstd(num::constant<Accum>(1.0) / num::sqrt(ms + eps));
}

template <class Storage, class Accum, class Policy, class Gain = StoredGain>
void rmsnorm_forward_with(const Storage* x, const Storage* g, int64_t rows, int64_t n, double eps, Storage* y) {
  const Accum eps_a = num::constant<Accum>(eps);
  const std::vector<Accum> gain = Gain::template gains<Storage, Accum>(g, n);
  for (int64_t i = 0; i < rows; ++i) {
    const Accum r = rms_reciprocal<Storage, Accum, Policy>(x + i * n, n, eps_a);
    for (int64_t j = 0; j < n; ++j) {
      const Accum xr = Policy::xr(num::convert<Accum>(x[i * n + j]) * r);
      y[i * n + j] = num::convert<Storage>(xr * gain[static_cast<size_t>(j)]);
    }
  }
}

/// dx = r (v - z mean(v z)) with v = g dy, z = x r; dg = sum_rows dy z (in Policy::dg_type; also
/// dL/dw for Gemma's g = 1 + w, whose offset has derivative 1).
template <class Storage, class Accum, class Policy, class Gain = StoredGain>
void rmsnorm_backward_with(const Storage* x, const Storage* g, const Storage* dy, int64_t rows, int64_t n,
                           double eps, Storage* dx, Storage* dg) {
  using DgT = typename Policy::dg_type;
  const Accum eps_a = num::constant<Accum>(eps);
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  std::vector<DgT> dg_acc(static_cast<size_t>(n), num::constant<DgT>(0.0));
  std::vector<Accum> z(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  const std::vector<Accum> gain = Gain::template gains<Storage, Accum>(g, n);
  for (int64_t i = 0; i < rows; ++i) {
    const Accum r = rms_reciprocal<Storage, Accum, Policy>(x + i * n, n, eps_a);
    Accum sum_vz = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < n; ++j) {
      const Accum dyj = num::convert<Accum>(dy[i * n + j]);
      z[j] = Policy::xr(num::convert<Accum>(x[i * n + j]) * r);
      v[j] = gain[static_cast<size_t>(j)] * dyj;
      sum_vz += v[j] * z[j];
      dg_acc[j] += num::convert<DgT>(dyj * z[j]);
    }
    const Accum mean_vz = sum_vz / count;
    for (int64_t j = 0; j < n; ++j) dx[i * n + j] = num::convert<Storage>(r * (v[j] - z[j] * mean_vz));
  }
  for (int64_t j = 0; j < n; ++j) dg[j] = num::convert<Storage>(dg_acc[j]);
}

#define NORMCHECK_RMSNORM_VARIANT(VARIANT, SUM, ROUND_R, ROUND_XR, DG)                                \
  template <class Storage, class Accum = default_accum_t<Storage>>                                  \
  void rmsnorm_forward_##VARIANT(const Storage* x, const Storage* g, int64_t rows, int64_t n, double eps, \
                                 Storage* y) {                                                      \
    rmsnorm_forward_with<Storage, Accum, RmsPolicy<Accum, SUM, ROUND_R, ROUND_XR, DG>>(x, g, rows, n, eps, y); \
  }                                                                                                 \
  template <class Storage, class Accum = default_accum_t<Storage>>                                  \
  void rmsnorm_backward_##VARIANT(const Storage* x, const Storage* g, const Storage* dy, int64_t rows, \
                                  int64_t n, double eps, Storage* dx, Storage* dg) {                \
    rmsnorm_backward_with<Storage, Accum, RmsPolicy<Accum, SUM, ROUND_R, ROUND_XR, DG>>(x, g, dy, rows, n, eps, \
                                                                                       dx, dg);    \
  }

/// rmsnorm_forward_rms / rmsnorm_backward_rms
NORMCHECK_RMSNORM_VARIANT(rms, Accum, false, false, Accum)
/// rmsnorm_forward_rms_sumsq_storage / rmsnorm_backward_rms_sumsq_storage
NORMCHECK_RMSNORM_VARIANT(rms_sumsq_storage, Storage, false, false, Accum)
/// rmsnorm_forward_rms_invrms_bf16 / rmsnorm_backward_rms_invrms_bf16
NORMCHECK_RMSNORM_VARIANT(rms_invrms_bf16, Accum, true, false, Accum)
/// rmsnorm_forward_rms_xr_bf16 / rmsnorm_backward_rms_xr_bf16
NORMCHECK_RMSNORM_VARIANT(rms_xr_bf16, Accum, false, true, Accum)
/// rmsnorm_forward_rms_dg_bf16 / rmsnorm_backward_rms_dg_bf16
NORMCHECK_RMSNORM_VARIANT(rms_dg_bf16, Accum, false, false, bf16)

#undef NORMCHECK_RMSNORM_VARIANT

}  // namespace normcheck::kernels
