#pragma once
/// Reference LayerNorm over the last axis, written from the textbook formulas and templated on
/// the real type (an MPFI interval type for certified results). Population variance (divisor n),
/// eps > 0. Shares no code with src/kernels.
///
///   mu = mean(x),  v = mean((x - mu)^2),  r = (v + eps)^(-1/2),  z = (x - mu) r
///   forward:  y  = gamma * z + beta
///   JVP:      dy = gamma * r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta
///   VJP:      g = gamma * dy,  dx = r (g - mean(g) - z mean(z g)),
///             dgamma = sum_rows dy * z,  dbeta = sum_rows dy
#include <cstdint>
#include <vector>

#include "core/layernorm_case.hpp"
#include "oracles/sum_of.hpp"
#include "oracles/to_real.hpp"

namespace normcheck::oracle {

/// Per-row statistics at the oracle's precision.
template <class Real>
struct LayerNormStats {
  std::vector<Real> mean;
  std::vector<Real> var;
  std::vector<Real> rstd;
};

/// The statistics of one row from its values xr (already in Real): mean, biased variance and
/// rstd = 1 / sqrt(var + eps), stored at row i of s.
template <class Real>
void layernorm_stats_of_row(const Real* xr, int64_t n, const Real& eps, LayerNormStats<Real>& s, int64_t i) {
  const Real n_real(static_cast<double>(n));
  sum_of_t<Real> sum{};
  for (int64_t j = 0; j < n; ++j) sum += xr[j];
  const Real mean = total(sum) / n_real;
  sum_of_t<Real> ss{};
  for (int64_t j = 0; j < n; ++j) {
    const Real d = xr[j] - mean;
    ss += d * d;
  }
  const Real var = total(ss) / n_real;
  s.mean[static_cast<size_t>(i)] = mean;
  s.var[static_cast<size_t>(i)] = var;
  s.rstd[static_cast<size_t>(i)] = Real(1) / sqrt(var + eps);
}

/// Per-row mean, biased variance and rstd = 1 / sqrt(var + eps); each x converted once.
template <class Real>
void layernorm_row_stats(const LayerNormCase& c, LayerNormStats<Real>& s) {
  s.mean.assign(static_cast<size_t>(c.rows), Real(0));
  s.var = s.mean;
  s.rstd = s.mean;
  const Real eps(c.eps);
  std::vector<Real> xr(static_cast<size_t>(c.n));
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.n; ++j) xr[static_cast<size_t>(j)] = Real(c.x[static_cast<size_t>(i * c.n + j)]);
    layernorm_stats_of_row(xr.data(), c.n, eps, s, i);
  }
}

/// z_ij = (x_ij - mean_i) rstd_i.
template <class Real>
Real layernorm_z(const LayerNormCase& c, const LayerNormStats<Real>& s, int64_t i, int64_t j) {
  return (Real(c.x[static_cast<size_t>(i * c.n + j)]) - s.mean[static_cast<size_t>(i)]) * s.rstd[static_cast<size_t>(i)];
}

/// Normalized rows z = (x - mu) r and their statistics: the operations of layernorm_row_stats and
/// layernorm_z, each x converted once (into z, which then becomes (x - mu) r in place).
template <class Real>
void layernorm_normalize(const LayerNormCase& c, std::vector<Real>& z, LayerNormStats<Real>& s) {
  s.mean.assign(static_cast<size_t>(c.rows), Real(0));
  s.var = s.mean;
  s.rstd = s.mean;
  const Real eps(c.eps);
  z.resize(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    Real* zr = &z[static_cast<size_t>(i * c.n)];
    for (int64_t j = 0; j < c.n; ++j) zr[j] = Real(c.x[static_cast<size_t>(i * c.n + j)]);
    layernorm_stats_of_row(zr, c.n, eps, s, i);
    const Real& mean = s.mean[static_cast<size_t>(i)];
    const Real& rstd = s.rstd[static_cast<size_t>(i)];
    for (int64_t j = 0; j < c.n; ++j) zr[j] = (zr[j] - mean) * rstd;
  }
}

/// dgamma_j = sum_i dy_ij z_ij and dbeta_j = sum_i dy_ij for the columns `cols` only (in that
/// order): the same sums as layernorm_vjp_normalized's, for the cascade's column fall-through.
template <class Real>
void layernorm_param_grads_columns(const LayerNormCase& c, const LayerNormStats<Real>& s, const std::vector<int64_t>& cols,
                                   std::vector<Real>& dgamma, std::vector<Real>& dbeta) {
  std::vector<sum_of_t<Real>> dg(cols.size()), db(cols.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (size_t k = 0; k < cols.size(); ++k) {
      const Real dy(c.dy[static_cast<size_t>(i * c.n + cols[k])]);
      dg[k] += dy * layernorm_z(c, s, i, cols[k]);
      db[k] += dy;
    }
  dgamma.clear();
  dbeta.clear();
  for (size_t k = 0; k < cols.size(); ++k) {
    dgamma.push_back(total(dg[k]));
    dbeta.push_back(total(db[k]));
  }
}

/// y = gamma * z + beta from the normalized rows.
template <class Real>
void layernorm_affine(const LayerNormCase& c, const std::vector<Real>& z, std::vector<Real>& y) {
  const std::vector<Real> gamma = to_real<Real>(c.gamma), beta = to_real<Real>(c.beta);  // once per case
  y.resize(z.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const auto k = static_cast<size_t>(i * c.n + j);
      y[k] = gamma[static_cast<size_t>(j)] * z[k] + beta[static_cast<size_t>(j)];
    }
}

/// y = gamma * z + beta.
template <class Real>
void layernorm_forward(const LayerNormCase& c, std::vector<Real>& y, LayerNormStats<Real>& s) {
  std::vector<Real> z;
  layernorm_normalize(c, z, s);
  layernorm_affine(c, z, y);
}

/// Directional derivative of the forward map along (dx, dgamma, dbeta); tangents given in Real.
template <class Real>
void layernorm_jvp(const LayerNormCase& c, const std::vector<Real>& dx, const std::vector<Real>& dgamma,
                   const std::vector<Real>& dbeta, std::vector<Real>& dy) {
  std::vector<Real> z;
  LayerNormStats<Real> s;
  layernorm_normalize(c, z, s);
  const Real n_real(static_cast<double>(c.n));
  dy.resize(z.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const size_t base = static_cast<size_t>(i * c.n);
    sum_of_t<Real> sum_dx{}, sum_zdx{};
    for (int64_t j = 0; j < c.n; ++j) {
      sum_dx += dx[base + j];
      sum_zdx += z[base + j] * dx[base + j];
    }
    const Real mean_dx = total(sum_dx) / n_real, mean_zdx = total(sum_zdx) / n_real;
    const Real& r = s.rstd[static_cast<size_t>(i)];
    for (int64_t j = 0; j < c.n; ++j) {
      const Real dz = r * (dx[base + j] - mean_dx - z[base + j] * mean_zdx);
      dy[base + j] = Real(c.gamma[static_cast<size_t>(j)]) * dz + z[base + j] * dgamma[static_cast<size_t>(j)] +
                     dbeta[static_cast<size_t>(j)];
    }
  }
}

/// The VJP from the normalized rows z and their statistics (layernorm_normalize), shared with the forward.
template <class Real>
void layernorm_vjp_normalized(const LayerNormCase& c, const std::vector<Real>& z, const LayerNormStats<Real>& s,
                              const std::vector<Real>& dy, std::vector<Real>& dx, std::vector<Real>& dgamma,
                              std::vector<Real>& dbeta) {
  const Real n_real(static_cast<double>(c.n));
  dx.resize(z.size());
  std::vector<sum_of_t<Real>> dg(static_cast<size_t>(c.n)), db(static_cast<size_t>(c.n));
  std::vector<Real> g(static_cast<size_t>(c.n));
  const std::vector<Real> gamma = to_real<Real>(c.gamma);  // once per case
  for (int64_t i = 0; i < c.rows; ++i) {
    const size_t base = static_cast<size_t>(i * c.n);
    sum_of_t<Real> sum_g{}, sum_zg{};
    for (int64_t j = 0; j < c.n; ++j) {
      g[j] = gamma[static_cast<size_t>(j)] * dy[base + j];
      sum_g += g[j];
      sum_zg += z[base + j] * g[j];
      dg[static_cast<size_t>(j)] += dy[base + j] * z[base + j];
      db[static_cast<size_t>(j)] += dy[base + j];
    }
    const Real mean_g = total(sum_g) / n_real, mean_zg = total(sum_zg) / n_real;
    const Real& r = s.rstd[static_cast<size_t>(i)];
    for (int64_t j = 0; j < c.n; ++j) dx[base + j] = r * (g[j] - mean_g - z[base + j] * mean_zg);
  }
  dgamma.clear();
  dbeta.clear();
  for (int64_t j = 0; j < c.n; ++j) {
    dgamma.push_back(total(dg[static_cast<size_t>(j)]));
    dbeta.push_back(total(db[static_cast<size_t>(j)]));
  }
}

/// The forward outputs y_k at `ys` and the VJP's dx_k at `dxs` only (row-major indices into the
/// case, ascending), for the cascade's element fall-through: the row statistics over whole rows and,
/// for a row with a dx wanted, the VJP's row means over the whole row; every output computed is the
/// same operations as layernorm_affine's and layernorm_vjp_normalized's.
template <class Real>
void layernorm_outputs_at(const LayerNormCase& c, const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs,
                          std::vector<Real>& y, std::vector<Real>& dx, LayerNormStats<Real>& s) {
  layernorm_row_stats(c, s);
  y.clear();
  dx.clear();
  for (const int64_t k : ys) {
    const int64_t i = k / c.n, j = k % c.n;
    y.push_back(Real(c.gamma[static_cast<size_t>(j)]) * layernorm_z(c, s, i, j) + Real(c.beta[static_cast<size_t>(j)]));
  }
  const Real n_real(static_cast<double>(c.n));
  std::vector<Real> z(static_cast<size_t>(c.n)), g(z.size());
  for (size_t next = 0; next < dxs.size();) {
    const int64_t i = dxs[next] / c.n;
    const size_t base = static_cast<size_t>(i * c.n);
    sum_of_t<Real> sum_g{}, sum_zg{};
    for (int64_t j = 0; j < c.n; ++j) {
      z[j] = layernorm_z(c, s, i, j);
      g[j] = Real(c.gamma[static_cast<size_t>(j)]) * Real(c.dy[base + j]);
      sum_g += g[j];
      sum_zg += z[j] * g[j];
    }
    const Real mean_g = total(sum_g) / n_real, mean_zg = total(sum_zg) / n_real;
    for (; next < dxs.size() && dxs[next] / c.n == i; ++next) {
      const int64_t j = dxs[next] % c.n;
      dx.push_back(s.rstd[static_cast<size_t>(i)] * (g[j] - mean_g - z[j] * mean_zg));
    }
  }
}

/// Cotangents (dx, dgamma, dbeta) of the forward map for the output cotangent dy.
template <class Real>
void layernorm_vjp(const LayerNormCase& c, const std::vector<Real>& dy, std::vector<Real>& dx,
                   std::vector<Real>& dgamma, std::vector<Real>& dbeta) {
  std::vector<Real> z;
  LayerNormStats<Real> s;
  layernorm_normalize(c, z, s);
  layernorm_vjp_normalized(c, z, s, dy, dx, dgamma, dbeta);
}

}  // namespace normcheck::oracle
