#pragma once
/// Planted directed-rounding kernels (issue 14): LayerNorm and RMSNorm computed with the two-pass
/// arithmetic in a wider type W (double for f32 storage, long double for f64) whose outputs are
/// rounded to Storage toward zero or away from zero instead of to nearest. Every output is biased by
/// about half an ULP, yet stays inside the loose f32/f64 bounds: only the bias statistic
/// (docs/bounds.md section 16) catches them. Not part of any suite; the bias calibration and the
/// tests judge them.
#include <cmath>
#include <cstdint>
#include <vector>

namespace normcheck::kernels {

enum class Direction { toward_zero, away_from_zero };

/// v rounded to Storage in direction D (to nearest first, then one step when on the wrong side).
template <class Storage, Direction D, class W>
Storage round_directed(W v) {
  Storage r = static_cast<Storage>(v);
  if (!std::isfinite(v) || static_cast<W>(r) == v) return r;
  const bool above = std::fabs(static_cast<W>(r)) > std::fabs(v);
  const Storage zero = 0, away = std::copysign(static_cast<Storage>(INFINITY), r);
  if (D == Direction::toward_zero && above) return std::nextafter(r, zero);
  if (D == Direction::away_from_zero && !above) return std::nextafter(r, away);
  return r;
}

/// Two-pass statistics of one row in W (mean 0 for RMSNorm).
template <class W>
void directed_row_stats(const double* x, int64_t n, double eps, bool rms, W& mean, W& rstd) {
  W s = 0, ss = 0;
  for (int64_t j = 0; j < n; ++j) s += static_cast<W>(x[j]);
  mean = rms ? W(0) : s / static_cast<W>(n);
  for (int64_t j = 0; j < n; ++j) {
    const W d = static_cast<W>(x[j]) - mean;
    ss += d * d;
  }
  rstd = W(1) / std::sqrt(ss / static_cast<W>(n) + static_cast<W>(eps));
}

/// y = gamma z + beta (LayerNorm) or g z (RMSNorm), each output rounded in direction D.
template <class Storage, class W, Direction D>
std::vector<double> directed_forward(const std::vector<double>& x, const std::vector<double>& gamma,
                                     const std::vector<double>& beta, int64_t rows, int64_t n, double eps, bool rms) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    W mean, rstd;
    directed_row_stats<W>(&x[i * n], n, eps, rms, mean, rstd);
    for (int64_t j = 0; j < n; ++j) {
      const W z = (static_cast<W>(x[i * n + j]) - mean) * rstd;
      const W v = rms ? z * static_cast<W>(gamma[j]) : z * static_cast<W>(gamma[j]) + static_cast<W>(beta[j]);
      y[i * n + j] = round_directed<Storage, D>(v);
    }
  }
  return y;
}

/// dx, dgamma and (LayerNorm) dbeta, each output rounded in direction D.
template <class Storage, class W, Direction D>
void directed_backward(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& dy,
                       int64_t rows, int64_t n, double eps, bool rms, std::vector<double>& dx, std::vector<double>& dgamma,
                       std::vector<double>* dbeta) {
  std::vector<W> dg(static_cast<size_t>(n), W(0)), db(static_cast<size_t>(n), W(0)), z(static_cast<size_t>(n)), g(z.size());
  dx.assign(x.size(), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    W mean, rstd, sg = 0, sgz = 0;
    directed_row_stats<W>(&x[i * n], n, eps, rms, mean, rstd);
    for (int64_t j = 0; j < n; ++j) {
      const W d = static_cast<W>(dy[i * n + j]);
      z[j] = (static_cast<W>(x[i * n + j]) - mean) * rstd;
      g[j] = d * static_cast<W>(gamma[j]);
      sg += g[j];
      sgz += g[j] * z[j];
      dg[j] += d * z[j];
      db[j] += d;
    }
    const W mg = rms ? W(0) : sg / static_cast<W>(n), mgz = sgz / static_cast<W>(n);
    for (int64_t j = 0; j < n; ++j) dx[i * n + j] = round_directed<Storage, D>(rstd * ((g[j] - mg) - z[j] * mgz));
  }
  dgamma.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) dgamma[j] = round_directed<Storage, D>(dg[j]);
  if (!dbeta) return;
  dbeta->resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) (*dbeta)[j] = round_directed<Storage, D>(db[j]);
}

}  // namespace normcheck::kernels
