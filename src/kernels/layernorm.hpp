#pragma once
/// LayerNorm kernels under test, templated on storage and accumulator. Each variant is a named
/// function; they differ only in how the row statistics and row sums are computed:
///   two_pass           mean = sum(x)/n, then var = sum((x-mean)^2)/n, sequential sums  (sound)
///   two_pass_pairwise  the same with pairwise (cascade) row sums                       (sound)
///   welford            running mean and M2 (Welford 1962)                              (sound)
///   one_pass           var = sum(x^2)/n - mean^2, no clamp                             (known weak)
/// Sums run in Accum; the final conversion to Storage is the explicit store step.
/// rstd = 1 / sqrt(var + eps) with correctly rounded sqrt and division.
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

/// Left-to-right summation of term(0) ... term(n-1).
struct SequentialSum {
  template <class Accum, class Term>
  static Accum sum(int64_t n, const Term& term) {
    Accum s = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < n; ++j) s += term(j);
    return s;
  }
};

/// Pairwise summation: halves recursively, so each term sees at most ceil(log2 n) additions.
struct PairwiseSum {
  template <class Accum, class Term>
  static Accum sum(int64_t n, const Term& term) {
    return n == 0 ? num::constant<Accum>(0.0) : range<Accum>(0, n, term);
  }
  template <class Accum, class Term>
  static Accum range(int64_t lo, int64_t hi, const Term& term) {
    if (hi - lo == 1) return term(lo);
    const int64_t mid = lo + (hi - lo) / 2;
    return range<Accum>(lo, mid, term) + range<Accum>(mid, hi, term);
  }
};

/// Row mean and reciprocal standard deviation in the accumulator type.
template <class Accum>
struct RowStats {
  Accum mean;
  Accum rstd;
  Accum var = num::constant<Accum>(0.0);  ///< the biased variance (two-pass statistics only)
};

template <class Accum>
Accum rstd_from_var(Accum var, Accum eps) {
  return num::constant<Accum>(1.0) / num::sqrt(var + eps);
}

template <class Storage, class Accum, class Sum>
RowStats<Accum> row_stats_two_pass_with(const Storage* x, int64_t n, Accum eps) {
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  const Accum mean = Sum::template sum<Accum>(n, [&](int64_t j) { return num::convert<Accum>(x[j]); }) / count;
  const Accum ss = Sum::template sum<Accum>(n, [&](int64_t j) {
    const Accum d = num::convert<Accum>(x[j]) - mean;
    return d * d;
  });
  const Accum var = ss / count;
  return {mean, rstd_from_var(var, eps), var};
}

template <class Storage, class Accum>
RowStats<Accum> row_stats_two_pass(const Storage* x, int64_t n, Accum eps) {
  return row_stats_two_pass_with<Storage, Accum, SequentialSum>(x, n, eps);
}

template <class Storage, class Accum>
RowStats<Accum> row_stats_two_pass_pairwise(const Storage* x, int64_t n, Accum eps) {
  return row_stats_two_pass_with<Storage, Accum, PairwiseSum>(x, n, eps);
}

template <class Storage, class Accum>
RowStats<Accum> row_stats_welford(const Storage* x, int64_t n, Accum eps) {
  Accum mean = num::constant<Accum>(0.0);
  Accum m2 = num::constant<Accum>(0.0);
  for (int64_t j = 0; j < n; ++j) {
    const Accum xj = num::convert<Accum>(x[j]);
    const Accum delta = xj - mean;
    mean += delta / num::constant<Accum>(static_cast<double>(j + 1));
    m2 += delta * (xj - mean);
  }
  return {mean, rstd_from_var(m2 / num::constant<Accum>(static_cast<double>(n)), eps)};
}

template <class Storage, class Accum>
RowStats<Accum> row_stats_one_pass(const Storage* x, int64_t n, Accum eps) {
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  Accum s1 = num::constant<Accum>(0.0);
  Accum s2 = num::constant<Accum>(0.0);
  for (int64_t j = 0; j < n; ++j) {
    const Accum xj = num::convert<Accum>(x[j]);
    s1 += xj;
    s2 += xj * xj;
  }
  const Accum mean = s1 / count;
  return {mean, rstd_from_var(s2 / count - mean * mean, eps)};
}

/// Forward pass over all rows given a statistics function.
template <class Storage, class Accum, class StatsFn>
void layernorm_forward_with(StatsFn stats, const Storage* x, const Storage* gamma, const Storage* beta,
                            int64_t rows, int64_t n, double eps, Storage* y) {
  const Accum eps_a = num::constant<Accum>(eps);
  for (int64_t i = 0; i < rows; ++i) {
    const Storage* xr = x + i * n;
    const RowStats<Accum> s = stats(xr, n, eps_a);
    for (int64_t j = 0; j < n; ++j) {
      Accum t = (num::convert<Accum>(xr[j]) - s.mean) * s.rstd;
      t = t * num::convert<Accum>(gamma[j]) + num::convert<Accum>(beta[j]);
      y[i * n + j] = num::convert<Storage>(t);
    }
  }
}

/// Backward pass (dx, dgamma, dbeta) recomputing the statistics with `stats`; the row sums of
/// g and g*z use `Sum`; dgamma and dbeta accumulate over rows, in row order.
template <class Storage, class Accum, class Sum, class StatsFn>
void layernorm_backward_with(StatsFn stats, const Storage* x, const Storage* gamma, const Storage* dy,
                             int64_t rows, int64_t n, double eps, Storage* dx, Storage* dgamma,
                             Storage* dbeta) {
  const Accum eps_a = num::constant<Accum>(eps);
  const Accum count = num::constant<Accum>(static_cast<double>(n));
  std::vector<Accum> dg(static_cast<size_t>(n), num::constant<Accum>(0.0));
  std::vector<Accum> db(static_cast<size_t>(n), num::constant<Accum>(0.0));
  std::vector<Accum> z(static_cast<size_t>(n)), g(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    const Storage* xr = x + i * n;
    const Storage* dyr = dy + i * n;
    const RowStats<Accum> s = stats(xr, n, eps_a);
    for (int64_t j = 0; j < n; ++j) {
      const Accum dyj = num::convert<Accum>(dyr[j]);
      z[j] = (num::convert<Accum>(xr[j]) - s.mean) * s.rstd;
      g[j] = dyj * num::convert<Accum>(gamma[j]);
      dg[j] += dyj * z[j];
      db[j] += dyj;
    }
    const Accum mean_g = Sum::template sum<Accum>(n, [&](int64_t j) { return g[j]; }) / count;
    const Accum mean_gz = Sum::template sum<Accum>(n, [&](int64_t j) { return g[j] * z[j]; }) / count;
    for (int64_t j = 0; j < n; ++j)
      dx[i * n + j] = num::convert<Storage>(s.rstd * ((g[j] - mean_g) - z[j] * mean_gz));
  }
  for (int64_t j = 0; j < n; ++j) {
    dgamma[j] = num::convert<Storage>(dg[j]);
    dbeta[j] = num::convert<Storage>(db[j]);
  }
}

#define NORMCHECK_LAYERNORM_VARIANT(VARIANT, SUM)                                                 \
  template <class Storage, class Accum = default_accum_t<Storage>>                                \
  void layernorm_forward_##VARIANT(const Storage* x, const Storage* gamma, const Storage* beta,   \
                                   int64_t rows, int64_t n, double eps, Storage* y) {             \
    layernorm_forward_with<Storage, Accum>(row_stats_##VARIANT<Storage, Accum>, x, gamma, beta,   \
                                           rows, n, eps, y);                                      \
  }                                                                                               \
  template <class Storage, class Accum = default_accum_t<Storage>>                                \
  void layernorm_backward_##VARIANT(const Storage* x, const Storage* gamma, const Storage* dy,    \
                                    int64_t rows, int64_t n, double eps, Storage* dx,             \
                                    Storage* dgamma, Storage* dbeta) {                            \
    layernorm_backward_with<Storage, Accum, SUM>(row_stats_##VARIANT<Storage, Accum>, x, gamma,   \
                                                 dy, rows, n, eps, dx, dgamma, dbeta);            \
  }

/// layernorm_forward_two_pass / layernorm_backward_two_pass
NORMCHECK_LAYERNORM_VARIANT(two_pass, SequentialSum)
/// layernorm_forward_two_pass_pairwise / layernorm_backward_two_pass_pairwise
NORMCHECK_LAYERNORM_VARIANT(two_pass_pairwise, PairwiseSum)
/// layernorm_forward_welford / layernorm_backward_welford
NORMCHECK_LAYERNORM_VARIANT(welford, SequentialSum)
/// layernorm_forward_one_pass / layernorm_backward_one_pass (known weak: cancellation)
NORMCHECK_LAYERNORM_VARIANT(one_pass, SequentialSum)

#undef NORMCHECK_LAYERNORM_VARIANT

}  // namespace normcheck::kernels
