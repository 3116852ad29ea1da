#pragma once
/// Planted kernels that are accurate (each within the two-pass LayerNorm bound) but not batch-invariant
/// or not deterministic (issue 44): what the invariance checks (suite/invariance.hpp) must catch.
///   ln_rowcount_block   row statistics summed in 16 lanes below 256 rows and in 4 lanes from 256 rows:
///                       the reduction order follows the row count (vLLM issue 48271: block size chosen
///                       from num_tokens)
///   ln_aligned_peel     each row's sums start with the elements before the next 4-aligned offset of the
///                       whole buffer, then go 4 lanes wide: invariant to the row count, but a row's bits
///                       follow its position (the padded-stride and alignment pattern)
///   ln_atomic_dgamma    the backward's dgamma and dbeta sum the rows in reverse order on every other call
///                       (atomics' run-to-run order); dx is deterministic
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/layernorm.hpp"

namespace normcheck::kernels {

/// Two-pass row statistics with sums over `lanes` interleaved partial sums, after `peel` leading terms.
template <class Storage, class Accum>
RowStats<Accum> row_stats_lanes(const Storage* x, int64_t n, Accum eps, int64_t lanes, int64_t peel) {
  const auto lane_sum = [&](auto term) {
    Accum head = num::constant<Accum>(0.0);
    const int64_t p = peel < n ? peel : n;
    for (int64_t j = 0; j < p; ++j) head += term(j);
    std::vector<Accum> part(static_cast<size_t>(lanes), num::constant<Accum>(0.0));
    for (int64_t j = p; j < n; ++j) part[static_cast<size_t>((j - p) % lanes)] += term(j);
    for (const Accum& v : part) head += v;
    return head;
  };
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  const Accum mean = lane_sum([&](int64_t j) { return num::convert<Accum>(x[j]); }) / count;
  const Accum var = lane_sum([&](int64_t j) {
                      const Accum d = num::convert<Accum>(x[j]) - mean;
                      return d * d;
                    }) / count;
  return {mean, rstd_from_var(var, eps), var};
}

template <class Storage, class Accum>
auto rowcount_stats(int64_t rows) {
  const int64_t lanes = rows < 256 ? 16 : 4;
  return [lanes](const Storage* xr, int64_t n, Accum eps) { return row_stats_lanes<Storage, Accum>(xr, n, eps, lanes, 0); };
}

template <class Storage, class Accum>
auto aligned_peel_stats(const Storage* base) {
  return [base](const Storage* xr, int64_t n, Accum eps) {
    const int64_t offset = static_cast<int64_t>(xr - base);
    return row_stats_lanes<Storage, Accum>(xr, n, eps, 4, (4 - offset % 4) % 4);
  };
}

template <class Storage, class Accum>
void layernorm_forward_rowcount_block(const Storage* x, const Storage* gamma, const Storage* beta, int64_t rows, int64_t n,
                                      double eps, Storage* y) {
  layernorm_forward_with<Storage, Accum>(rowcount_stats<Storage, Accum>(rows), x, gamma, beta, rows, n, eps, y);
}
template <class Storage, class Accum>
void layernorm_backward_rowcount_block(const Storage* x, const Storage* gamma, const Storage* dy, int64_t rows, int64_t n,
                                       double eps, Storage* dx, Storage* dgamma, Storage* dbeta) {
  layernorm_backward_with<Storage, Accum, SequentialSum>(rowcount_stats<Storage, Accum>(rows), x, gamma, dy, rows, n, eps, dx,
                                                         dgamma, dbeta);
}
template <class Storage, class Accum>
void layernorm_forward_aligned_peel(const Storage* x, const Storage* gamma, const Storage* beta, int64_t rows, int64_t n,
                                    double eps, Storage* y) {
  layernorm_forward_with<Storage, Accum>(aligned_peel_stats<Storage, Accum>(x), x, gamma, beta, rows, n, eps, y);
}
template <class Storage, class Accum>
void layernorm_backward_aligned_peel(const Storage* x, const Storage* gamma, const Storage* dy, int64_t rows, int64_t n,
                                     double eps, Storage* dx, Storage* dgamma, Storage* dbeta) {
  layernorm_backward_with<Storage, Accum, SequentialSum>(aligned_peel_stats<Storage, Accum>(x), x, gamma, dy, rows, n, eps, dx,
                                                         dgamma, dbeta);
}

/// The two-pass backward with the rows taken in reverse order on every other call of `calls` (the
/// rows' dgamma and dbeta contributions are summed in that order; each row's dx is unchanged).
template <class Storage, class Accum>
void layernorm_backward_atomic_dgamma(std::atomic<uint64_t>& calls, const Storage* x, const Storage* gamma, const Storage* dy,
                                      int64_t rows, int64_t n, double eps, Storage* dx, Storage* dgamma, Storage* dbeta) {
  if (calls.fetch_add(1) % 2 == 0) {
    layernorm_backward_two_pass<Storage, Accum>(x, gamma, dy, rows, n, eps, dx, dgamma, dbeta);
    return;
  }
  const size_t total = static_cast<size_t>(rows * n);
  std::vector<Storage> xr(total), dyr(total), dxr(total);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      xr[static_cast<size_t>((rows - 1 - i) * n + j)] = x[i * n + j];
      dyr[static_cast<size_t>((rows - 1 - i) * n + j)] = dy[i * n + j];
    }
  layernorm_backward_two_pass<Storage, Accum>(xr.data(), gamma, dyr.data(), rows, n, eps, dxr.data(), dgamma, dbeta);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) dx[i * n + j] = dxr[static_cast<size_t>((rows - 1 - i) * n + j)];
}

}  // namespace normcheck::kernels
