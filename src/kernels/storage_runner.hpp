#pragma once
/// Runs a kernel written on storage pointers on a case of exact doubles: the inputs converted to the
/// storage type, the outputs back to exact doubles (the built-in and planted registries).
#include <type_traits>
#include <vector>

#include "kernels/registry.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck {

/// Runs a forward kernel: LayerNorm kernels take (x, gamma, beta, ...), RMSNorm ones (x, g, ...).
template <class S, class Fwd>
inline KernelOutputs run_forward(Fwd fwd, const LayerNormCase& c) {
  const auto x = to_storage<S>(c.x), g = to_storage<S>(c.gamma), b = to_storage<S>(c.beta);
  std::vector<S> y(x.size());
  if constexpr (std::is_invocable_v<Fwd, const S*, const S*, const S*, int64_t, int64_t, double, S*>)
    fwd(x.data(), g.data(), b.data(), c.rows, c.n, c.eps, y.data());
  else
    fwd(x.data(), g.data(), c.rows, c.n, c.eps, y.data());
  KernelOutputs out;
  out.y = to_double(y);
  return out;
}

/// Runs a backward kernel: LayerNorm returns (dx, dgamma, dbeta), RMSNorm (dx, dg).
template <class S, class Bwd>
inline KernelOutputs run_backward(Bwd bwd, const LayerNormCase& c) {
  const auto x = to_storage<S>(c.x), g = to_storage<S>(c.gamma), dy = to_storage<S>(c.dy);
  std::vector<S> dx(x.size()), dg(g.size()), db(g.size());
  constexpr bool layernorm =
      std::is_invocable_v<Bwd, const S*, const S*, const S*, int64_t, int64_t, double, S*, S*, S*>;
  KernelOutputs out;
  if constexpr (layernorm) {
    bwd(x.data(), g.data(), dy.data(), c.rows, c.n, c.eps, dx.data(), dg.data(), db.data());
    out.dbeta = to_double(db);
  } else {
    bwd(x.data(), g.data(), dy.data(), c.rows, c.n, c.eps, dx.data(), dg.data());
  }
  out.dx = to_double(dx);
  out.dgamma = to_double(dg);
  return out;
}

}  // namespace normcheck
