#pragma once
/// LayerNorm statistics as parallel reductions compute them (issue 42 item 3), templated on storage
/// and accumulator, each a named variant beside those of kernels/layernorm.hpp:
///   two_pass_blocked  two-pass; every row sum in blocks of kReductionBlock elements, each block
///                     summed sequentially from 0, the block sums added by a pairwise tree   (sound)
///   welford_chunked   Welford over each chunk of kReductionBlock elements, the chunks' (count, mean,
///                     M2) merged by Chan's formula in a pairwise tree, in the form PyTorch's
///                     WelfordOps::combine uses: mean_a + delta (n_b / n), M2_a + M2_b + delta^2 n_a (n_b / n) (sound)
/// Both are judged by their own bounds (docs/bounds.md section 2.7: LN-TWOPASS-BLOCKED, LN-WELFORDMERGE-BLOCKED).
#include <cstdint>

#include "core/reduction_block.hpp"
#include "kernels/layernorm.hpp"

namespace normcheck::kernels {

/// Blocked summation: blocks of kReductionBlock consecutive terms summed sequentially, then a
/// pairwise tree over the block sums (split at the middle block).
struct BlockedSum {
  template <class Accum, class Term>
  static Accum sum(int64_t n, const Term& term) {
    if (n == 0) return num::constant<Accum>(0.0);
    return tree<Accum>(0, (n + kReductionBlock - 1) / kReductionBlock, n, term);
  }
  template <class Accum, class Term>
  static Accum tree(int64_t lo, int64_t hi, int64_t n, const Term& term) {
    if (hi - lo == 1) {
      Accum s = num::constant<Accum>(0.0);
      for (int64_t j = lo * kReductionBlock; j < std::min(n, hi * kReductionBlock); ++j) s += term(j);
      return s;
    }
    const int64_t mid = lo + (hi - lo) / 2;
    return tree<Accum>(lo, mid, n, term) + tree<Accum>(mid, hi, n, term);
  }
};

template <class Storage, class Accum>
RowStats<Accum> row_stats_two_pass_blocked(const Storage* x, int64_t n, Accum eps) {
  return row_stats_two_pass_with<Storage, Accum, BlockedSum>(x, n, eps);
}

/// A Welford partial: count, mean and sum of squared deviations of a set of elements.
template <class Accum>
struct Moments {
  Accum count, mean, m2;
};

/// Welford's recurrence over x[lo, hi) (the chunk), from the empty partial.
template <class Storage, class Accum>
Moments<Accum> welford_chunk(const Storage* x, int64_t lo, int64_t hi) {
  Moments<Accum> p{num::constant<Accum>(0.0), num::constant<Accum>(0.0), num::constant<Accum>(0.0)};
  for (int64_t j = lo; j < hi; ++j) {
    const Accum xj = num::convert<Accum>(x[j]);
    p.count = p.count + num::constant<Accum>(1.0);
    const Accum delta = xj - p.mean;
    p.mean += delta / p.count;
    p.m2 += delta * (xj - p.mean);
  }
  return p;
}

/// Chan, Golub and LeVeque's pairwise update of two partials, as PyTorch's WelfordOps::combine.
template <class Accum>
Moments<Accum> chan_merge(const Moments<Accum>& a, const Moments<Accum>& b) {
  const Accum count = a.count + b.count;
  const Accum delta = b.mean - a.mean;
  const Accum nb_over_n = b.count / count;
  return {count, a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * a.count * nb_over_n};
}

/// The chunks [lo, hi) of the row (chunk c: elements [cB, min(n, (c+1)B))) merged by a pairwise tree.
template <class Storage, class Accum>
Moments<Accum> welford_chunk_tree(const Storage* x, int64_t n, int64_t lo, int64_t hi) {
  if (hi - lo == 1) return welford_chunk<Storage, Accum>(x, lo * kReductionBlock, std::min(n, hi * kReductionBlock));
  const int64_t mid = lo + (hi - lo) / 2;
  return chan_merge(welford_chunk_tree<Storage, Accum>(x, n, lo, mid), welford_chunk_tree<Storage, Accum>(x, n, mid, hi));
}

template <class Storage, class Accum>
RowStats<Accum> row_stats_welford_chunked(const Storage* x, int64_t n, Accum eps) {
  const Moments<Accum> p = welford_chunk_tree<Storage, Accum>(x, n, 0, (n + kReductionBlock - 1) / kReductionBlock);
  const Accum var = p.m2 / num::constant<Accum>(static_cast<double>(n));
  return {p.mean, rstd_from_var(var, eps), var};
}

/// layernorm_forward_two_pass_blocked / layernorm_backward_two_pass_blocked (row sums of the backward blocked too)
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_forward_two_pass_blocked(const Storage* x, const Storage* gamma, const Storage* beta, int64_t rows, int64_t n,
                                        double eps, Storage* y) {
  layernorm_forward_with<Storage, Accum>(row_stats_two_pass_blocked<Storage, Accum>, x, gamma, beta, rows, n, eps, y);
}
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_backward_two_pass_blocked(const Storage* x, const Storage* gamma, const Storage* dy, int64_t rows, int64_t n,
                                         double eps, Storage* dx, Storage* dgamma, Storage* dbeta) {
  layernorm_backward_with<Storage, Accum, BlockedSum>(row_stats_two_pass_blocked<Storage, Accum>, x, gamma, dy, rows, n, eps, dx,
                                                      dgamma, dbeta);
}

/// layernorm_forward_welford_chunked / layernorm_backward_welford_chunked (backward row sums blocked, as a GPU kernel's)
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_forward_welford_chunked(const Storage* x, const Storage* gamma, const Storage* beta, int64_t rows, int64_t n,
                                       double eps, Storage* y) {
  layernorm_forward_with<Storage, Accum>(row_stats_welford_chunked<Storage, Accum>, x, gamma, beta, rows, n, eps, y);
}
template <class Storage, class Accum = default_accum_t<Storage>>
void layernorm_backward_welford_chunked(const Storage* x, const Storage* gamma, const Storage* dy, int64_t rows, int64_t n,
                                        double eps, Storage* dx, Storage* dgamma, Storage* dbeta) {
  layernorm_backward_with<Storage, Accum, BlockedSum>(row_stats_welford_chunked<Storage, Accum>, x, gamma, dy, rows, n, eps, dx,
                                                      dgamma, dbeta);
}

}  // namespace normcheck::kernels
