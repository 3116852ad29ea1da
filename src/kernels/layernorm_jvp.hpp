#pragma once
/// The LayerNorm JVP (forward-mode derivative) under test, templated on storage and accumulator:
/// for tangents (tx, tgamma, tbeta) of (x, gamma, beta),
///   q  = r ((tx - mean(tx)) - z mean(z tx))       (the backward's dx arithmetic with gamma = 1)
///   du = (gamma q + z tgamma) + tbeta             in Accum, stored once,
/// with the two-pass statistics, z = (x - mean) r, sequential sums. Mirrors
/// oracles/layernorm.hpp's layernorm_jvp; shares no code with it.
#include <cstdint>
#include <vector>

#include "kernels/layernorm.hpp"

namespace normcheck::kernels {

/// Arithmetic choices of a JVP kernel: whether the tangent is centred (the sound kernel) or not
/// (a planted slip: mean(tx) forgotten, the derivative of a normalization without its mean).
template <bool Centred>
struct JvpPolicy {
  static constexpr bool centred = Centred;
};

template <class Storage, class Accum, class Policy>
void layernorm_jvp_with(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma, const Storage* tbeta,
                        int64_t rows, int64_t n, double eps, Storage* du) {
  const Accum eps_a = num::constant<Accum>(eps);
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  std::vector<Accum> z(static_cast<size_t>(n)), t(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    const Storage* xr = x + i * n;
    const RowStats<Accum> s = row_stats_two_pass<Storage, Accum>(xr, n, eps_a);
    for (int64_t j = 0; j < n; ++j) {
      z[j] = (num::convert<Accum>(xr[j]) - s.mean) * s.rstd;
      t[j] = num::convert<Accum>(tx[i * n + j]);
    }
    const Accum mean_t = Policy::centred ? SequentialSum::sum<Accum>(n, [&](int64_t j) { return t[j]; }) / count
                                         : num::constant<Accum>(0.0);
    const Accum mean_zt = SequentialSum::sum<Accum>(n, [&](int64_t j) { return t[j] * z[j]; }) / count;
    for (int64_t j = 0; j < n; ++j) {
      const Accum q = s.rstd * ((t[j] - mean_t) - z[j] * mean_zt);
      const Accum u = q * num::convert<Accum>(gamma[j]) + z[j] * num::convert<Accum>(tgamma[j]);
      du[i * n + j] = num::convert<Storage>(u + num::convert<Accum>(tbeta[j]));
    }
  }
}

/// layernorm_jvp_two_pass: the sound kernel.
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_jvp_two_pass(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma,
                            const Storage* tbeta, int64_t rows, int64_t n, double eps, Storage* du) {
  layernorm_jvp_with<Storage, Accum, JvpPolicy<true>>(x, gamma, tx, tgamma, tbeta, rows, n, eps, du);
}

/// layernorm_jvp_uncentred: the planted slip (mean(tx) dropped); known weak, must be flagged.
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_jvp_uncentred(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma,
                             const Storage* tbeta, int64_t rows, int64_t n, double eps, Storage* du) {
  layernorm_jvp_with<Storage, Accum, JvpPolicy<false>>(x, gamma, tx, tgamma, tbeta, rows, n, eps, du);
}

}  // namespace normcheck::kernels
