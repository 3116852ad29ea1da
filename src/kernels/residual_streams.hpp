#pragma once
/// The residual-stream controls of the growth table (issue 9), templated on storage and
/// accumulator: branch f(x) = W2 relu(W1 x) (each matrix-vector product accumulated in Accum and
/// stored), and one step of
///   plain_residual_step   x <- st(x + f(x))
///   ln_branch_step        x <- st(x + f(LN(x)))       LayerNorm inside the branch (pre-LN)
///   ln_trunk_step         x <- LN(st(x + f(x)))       LayerNorm on the trunk (post-LN)
/// LN is the project's two-pass LayerNorm kernel (gamma = 1, beta = 0). Each step's VJP (the growth
/// table's gradient column) is the same graph transposed, every product stored:
///   plain_residual_step_vjp  g + f'(x)^T g, f'(x)^T g = W1^T (relu'(W1 x) . W2^T g)
///   ln_branch_step_vjp       g + LN'(x)^T f'(LN x)^T g
///   ln_trunk_step_vjp        s = x + f(x): (I + f'(x)^T) LN'(s)^T g
/// relu'(a) = [a > 0] (PyTorch's convention at 0); LN'^T is the two-pass LayerNorm backward kernel.
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

template <class Storage, class Accum>
std::vector<Storage> residual_branch_vjp(const Storage* W1, const Storage* W2, const std::vector<Storage>& x,
                                         const std::vector<Storage>& g) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Storage> a(x.size()), b(x.size()), out(x.size());
  mat_vec<Storage, Accum>(W1, n, n, x.data(), a.data());
  mat_t_vec<Storage, Accum>(W2, n, n, g.data(), b.data());
  for (size_t i = 0; i < a.size(); ++i)
    if (!(to_d(a[i]) > 0)) b[i] = num::constant<Storage>(0.0);
  mat_t_vec<Storage, Accum>(W1, n, n, b.data(), out.data());
  return out;
}

template <class Storage, class Accum>
std::vector<Storage> layer_norm_unit_vjp(const std::vector<Storage>& x, const std::vector<Storage>& g, double eps) {
  const std::vector<Storage> gamma(x.size(), num::constant<Storage>(1.0));
  std::vector<Storage> dx(x.size()), dgamma(x.size()), dbeta(x.size());
  layernorm_backward_two_pass<Storage, Accum>(x.data(), gamma.data(), g.data(), 1, static_cast<int64_t>(x.size()), eps, dx.data(),
                                              dgamma.data(), dbeta.data());
  return dx;
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> plain_residual_step_vjp(const Storage* W1, const Storage* W2, const std::vector<Storage>& x,
                                             const std::vector<Storage>& g) {
  return residual_add<Storage, Accum>(g, residual_branch_vjp<Storage, Accum>(W1, W2, x, g));
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> ln_branch_step_vjp(const Storage* W1, const Storage* W2, const std::vector<Storage>& x,
                                        const std::vector<Storage>& g, double eps) {
  const std::vector<Storage> gb = residual_branch_vjp<Storage, Accum>(W1, W2, layer_norm_unit<Storage, Accum>(x, eps), g);
  return residual_add<Storage, Accum>(g, layer_norm_unit_vjp<Storage, Accum>(x, gb, eps));
}

template <class Storage, class Accum = default_accum_t<Storage>>
std::vector<Storage> ln_trunk_step_vjp(const Storage* W1, const Storage* W2, const std::vector<Storage>& x,
                                       const std::vector<Storage>& g, double eps) {
  const std::vector<Storage> s = residual_add<Storage, Accum>(x, residual_branch<Storage, Accum>(W1, W2, x));
  const std::vector<Storage> gs = layer_norm_unit_vjp<Storage, Accum>(s, g, eps);
  return residual_add<Storage, Accum>(gs, residual_branch_vjp<Storage, Accum>(W1, W2, x, gs));
}

}  // namespace normcheck::kernels
