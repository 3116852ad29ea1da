#pragma once
/// The RMSNorm JVP (forward-mode derivative) under test, templated on storage and accumulator: for
/// tangents (tx, tgamma) of (x, gamma), with r = (mean(x^2) + eps)^(-1/2) and z = x r,
///   q  = r (tx - z mean(z tx))          (the RMSNorm backward's dx arithmetic with gamma = 1, dy = tx)
///   du = gamma q + z tgamma             in Accum, stored once,
/// sequential sums (kernels/rmsnorm.hpp's rms_reciprocal). Mirrors oracles/rmsnorm.hpp's rmsnorm_jvp;
/// shares no code with it.
#include <cstdint>
#include <vector>

#include "kernels/rmsnorm.hpp"

namespace normcheck::kernels {

/// Arithmetic choices of an RMSNorm JVP kernel: whether r's own derivative (the z mean(z tx) term)
/// is kept (the sound kernel) or dropped (a planted slip: r treated as a constant).
template <bool RDerivative>
struct RmsJvpPolicy {
  static constexpr bool r_derivative = RDerivative;
};

template <class Storage, class Accum, class Policy>
void rmsnorm_jvp_with(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma, int64_t rows, int64_t n,
                      double eps, Storage* du) {
  using Sound = RmsPolicy<Accum, Accum, false, false, Accum>;  // the sound RMSNorm's statistics
  const Accum eps_a = num::constant<Accum>(eps);
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  std::vector<Accum> z(static_cast<size_t>(n)), t(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    const Accum r = rms_reciprocal<Storage, Accum, Sound>(x + i * n, n, eps_a);
    Accum sum_tz = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < n; ++j) {
      z[j] = num::convert<Accum>(x[i * n + j]) * r;
      t[j] = num::convert<Accum>(tx[i * n + j]);
      sum_tz += t[j] * z[j];
    }
    const Accum mean_tz = Policy::r_derivative ? sum_tz / count : num::constant<Accum>(0.0);
    for (int64_t j = 0; j < n; ++j) {
      const Accum q = r * (t[j] - z[j] * mean_tz);
      du[i * n + j] = num::convert<Storage>(q * num::convert<Accum>(gamma[j]) + z[j] * num::convert<Accum>(tgamma[j]));
    }
  }
}

/// rmsnorm_jvp_rms: the sound kernel.
template <class Storage, class Accum = default_accum_t<Storage>>
void rmsnorm_jvp_rms(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma, int64_t rows, int64_t n, double eps,
                     Storage* du) {
  rmsnorm_jvp_with<Storage, Accum, RmsJvpPolicy<true>>(x, gamma, tx, tgamma, rows, n, eps, du);
}

/// rmsnorm_jvp_r_constant: the planted slip (r's derivative dropped); known weak, must be flagged.
template <class Storage, class Accum = default_accum_t<Storage>>
void rmsnorm_jvp_r_constant(const Storage* x, const Storage* gamma, const Storage* tx, const Storage* tgamma, int64_t rows, int64_t n,
                            double eps, Storage* du) {
  rmsnorm_jvp_with<Storage, Accum, RmsJvpPolicy<false>>(x, gamma, tx, tgamma, rows, n, eps, du);
}

}  // namespace normcheck::kernels
