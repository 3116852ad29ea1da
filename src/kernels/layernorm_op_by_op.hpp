#pragma once
/// The LayerNorm backward as an eager autograd engine runs it (issue 20; seed layernorm-derivatives
/// contrasts the fused backward with this graph): the forward decomposed into primitive ops, each
/// computing in Accum from stored operands and storing its result in Storage (a reduction
/// accumulates in Accum, left to right, and stores its result), and the backward of that graph op by
/// op, every gradient stored too:
///   forward:  mu = mean(x); d = x - mu; s = d * d; v = mean(s); ve = v + eps; r = rsqrt(ve); z = d * r;
///             y = z * gamma + beta (the product stored, then the sum)
///   backward: dz = dy * gamma; dgamma = sum_rows(dy * z); dbeta = sum_rows(dy);
///             dd1 = dz * r; dr = sum_j(dz * d); dv = -0.5 (dr * r^3)   (rsqrt'(ve) = -r^3 / 2);
///             ds = dv / n (mean); dd2 = ds * (2 d) (pow); dd = dd1 + dd2;
///             dmu = -sum_j(dd); dx = dd + dmu / n (mean)
/// Registered as the known-weak variant `op_by_op` (kernels/registry.cpp): judged by the fused two-pass
/// contract of its dtype, which flags it, and measured against its own bound LN-OPBYOP-SEQ (docs/bounds.md
/// section 4.5; properties/test_op_by_op.cpp, docs/layernorm-op-by-op.md).
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

namespace op_by_op_detail {

/// One primitive op's result: computed in Accum, stored in Storage.
template <class Storage, class Accum>
Storage store(Accum v) {
  return num::convert<Storage>(v);
}
template <class Accum, class Storage>
Accum load(Storage v) {
  return num::convert<Accum>(v);
}

/// mean over j of term(j) (stored operands), accumulated left to right, stored.
template <class Storage, class Accum, class Term>
Storage stored_mean(int64_t n, const Term& term) {
  Accum s = num::constant<Accum>(0.0);
  for (int64_t j = 0; j < n; ++j) s += load<Accum>(term(j));
  return store<Storage>(s / num::constant<Accum>(static_cast<double>(n)));
}

/// sum over j of term(j), accumulated left to right, stored.
template <class Storage, class Accum, class Term>
Storage stored_sum(int64_t n, const Term& term) {
  Accum s = num::constant<Accum>(0.0);
  for (int64_t j = 0; j < n; ++j) s += load<Accum>(term(j));
  return store<Storage>(s);
}

/// The forward intermediates autograd saves for one row.
template <class Storage>
struct SavedRow {
  std::vector<Storage> d, z;
  Storage r;
};

template <class Storage, class Accum>
SavedRow<Storage> forward_row(const Storage* x, int64_t n, double eps) {
  SavedRow<Storage> s;
  const Storage mu = stored_mean<Storage, Accum>(n, [&](int64_t j) { return x[j]; });
  s.d.resize(static_cast<size_t>(n));
  std::vector<Storage> sq(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    s.d[j] = store<Storage>(load<Accum>(x[j]) - load<Accum>(mu));
    sq[j] = store<Storage>(load<Accum>(s.d[j]) * load<Accum>(s.d[j]));
  }
  const Storage v = stored_mean<Storage, Accum>(n, [&](int64_t j) { return sq[j]; });
  const Storage ve = store<Storage>(load<Accum>(v) + num::constant<Accum>(eps));
  s.r = store<Storage>(num::constant<Accum>(1.0) / num::sqrt(load<Accum>(ve)));
  s.z.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) s.z[j] = store<Storage>(load<Accum>(s.d[j]) * load<Accum>(s.r));
  return s;
}

}  // namespace op_by_op_detail

/// Forward y = z * gamma + beta op by op.
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_forward_op_by_op(const Storage* x, const Storage* gamma, const Storage* beta, int64_t rows, int64_t n, double eps,
                                Storage* y) {
  using namespace op_by_op_detail;
  for (int64_t i = 0; i < rows; ++i) {
    const SavedRow<Storage> s = forward_row<Storage, Accum>(x + i * n, n, eps);
    for (int64_t j = 0; j < n; ++j) {
      const Storage zg = store<Storage>(load<Accum>(s.z[j]) * load<Accum>(gamma[j]));
      y[i * n + j] = store<Storage>(load<Accum>(zg) + load<Accum>(beta[j]));
    }
  }
}

/// Backward (dx, dgamma, dbeta) of the op-by-op graph, gradient by gradient.
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_backward_op_by_op(const Storage* x, const Storage* gamma, const Storage* dy, int64_t rows, int64_t n, double eps,
                                 Storage* dx, Storage* dgamma, Storage* dbeta) {
  using namespace op_by_op_detail;
  std::vector<Storage> dyz(static_cast<size_t>(rows * n)), dz(static_cast<size_t>(n)), dd(static_cast<size_t>(n)),
      dzd(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    const SavedRow<Storage> s = forward_row<Storage, Accum>(x + i * n, n, eps);
    const Storage* g = dy + i * n;
    for (int64_t j = 0; j < n; ++j) {
      dz[j] = store<Storage>(load<Accum>(g[j]) * load<Accum>(gamma[j]));
      dyz[i * n + j] = store<Storage>(load<Accum>(g[j]) * load<Accum>(s.z[j]));
      dzd[j] = store<Storage>(load<Accum>(dz[j]) * load<Accum>(s.d[j]));
    }
    const Storage dr = stored_sum<Storage, Accum>(n, [&](int64_t j) { return dzd[j]; });
    const Storage r3 = store<Storage>(load<Accum>(s.r) * load<Accum>(s.r) * load<Accum>(s.r));
    const Storage dv = store<Storage>(num::constant<Accum>(-0.5) * load<Accum>(store<Storage>(load<Accum>(dr) * load<Accum>(r3))));
    const Storage ds = store<Storage>(load<Accum>(dv) / num::constant<Accum>(static_cast<double>(n)));
    for (int64_t j = 0; j < n; ++j) {
      const Storage dd1 = store<Storage>(load<Accum>(dz[j]) * load<Accum>(s.r));
      const Storage two_d = store<Storage>(num::constant<Accum>(2.0) * load<Accum>(s.d[j]));
      const Storage dd2 = store<Storage>(load<Accum>(ds) * load<Accum>(two_d));
      dd[j] = store<Storage>(load<Accum>(dd1) + load<Accum>(dd2));
    }
    const Storage dmu = store<Storage>(-load<Accum>(stored_sum<Storage, Accum>(n, [&](int64_t j) { return dd[j]; })));
    const Storage dmu_n = store<Storage>(load<Accum>(dmu) / num::constant<Accum>(static_cast<double>(n)));
    for (int64_t j = 0; j < n; ++j) dx[i * n + j] = store<Storage>(load<Accum>(dd[j]) + load<Accum>(dmu_n));
  }
  for (int64_t j = 0; j < n; ++j) {
    dgamma[j] = stored_sum<Storage, Accum>(rows, [&](int64_t i) { return dyz[i * n + j]; });
    dbeta[j] = stored_sum<Storage, Accum>(rows, [&](int64_t i) { return dy[i * n + j]; });
  }
}

}  // namespace normcheck::kernels
