#pragma once
/// The residual-stream controls of the growth table (issue 9), templated on storage and
/// accumulator: branch f(x) = W2 relu(W1 x) (each matrix-vector product accumulated in Accum and
/// stored), and one step of
///   plain_residual_step   x <- st(x + f(x))
///   ln_branch_step        x <- st(x + f(LN(x)))       LayerNorm inside the branch (pre-LN)
///   ln_trunk_step         x <- LN(st(x + f(x)))       LayerNorm on the trunk (post-LN)
/// LN is the project's two-pass LayerNorm kernel (gamma = 1, beta = 0).
#include <cstdint>
#include <vector>

#include "kernels/layernorm.hpp"
#include "kernels/port_hamiltonian.hpp"

namespace normcheck::kernels {

template <class Storage, class Accum>
std::vector<Storage> residual_branch(const Storage* W1, const Storage* W2, const std::vector<Storage>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Storage> a(x.size()), f(x.size());
  mat_vec<Storage, Accum>(W1, n, n, x.data(), a.data());
  for (auto& e : a)
    if (to_d(e) < 0) e = num::constant<Storage>(0.0);
  mat_vec<Storage, Accum>(W2, n, n, a.data(), f.data());
  return f;
}

template <class Storage, class Accum>
std::vector<Storage> layer_norm_unit(const std::vector<Storage>& x, double eps) {
  const std::vector<Storage> gamma(x.size(), num::constant<Storage>(1.0)), beta(x.size(), num::constant<Storage>(0.0));
  std::vector<Storage> y(x.size());
  layernorm_forward_two_pass<Storage, Accum>(x.data(), gamma.data(), beta.data(), 1, static_cast<int64_t>(x.size()), eps,
                                             y.data());
  return y;
}

template <class Storage, class Accum>
std::vector<Storage> residual_add(const std::vector<Storage>& x, const std::vector<Storage>& f) {
  std::vector<Storage> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = num::convert<Storage>(num::convert<Accum>(x[i]) + num::convert<Accum>(f[i]));
  return y;
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> plain_residual_step(const Storage* W1, const Storage* W2, const std::vector<Storage>& x) {
  return residual_add<Storage, Accum>(x, residual_branch<Storage, Accum>(W1, W2, x));
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> ln_branch_step(const Storage* W1, const Storage* W2, const std::vector<Storage>& x, double eps) {
  return residual_add<Storage, Accum>(x, residual_branch<Storage, Accum>(W1, W2, layer_norm_unit<Storage, Accum>(x, eps)));
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> ln_trunk_step(const Storage* W1, const Storage* W2, const std::vector<Storage>& x, double eps) {
  return layer_norm_unit<Storage, Accum>(residual_add<Storage, Accum>(x, residual_branch<Storage, Accum>(W1, W2, x)), eps);
}

}  // namespace normcheck::kernels
