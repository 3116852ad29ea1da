#pragma once
/// Reference affine -> LayerNorm -> affine block and its exact QR contraction (seed:
/// qr-contraction-across-layernorm), templated on the real type. Shares no code with the
/// converter and kernels under test (src/contraction, src/kernels).
///
///   original    h = A x + a,  f = W (gamma * (h - mean) r + beta) + b,  r = (var + eps)^(-1/2)
///   contracted  xbar = [x; 1],  f = D xbar / sqrt(|R xbar|^2 / n + eps) + c
///               T = [P A, P a] = U R,  D = W diag(gamma) T,  c = W beta + b
///   input VJP   original: dh = r (v - mean(v) - z mean(v z)) with v = gamma * W^T dy, dx = A^T dh
///               contracted: dx = s D^T dy - (s^3 / n) <dy, D xbar> (R^T R xbar), s the reciprocal
#include <cstdint>
#include <vector>

#include "core/contraction_case.hpp"

namespace normcheck::oracle {

/// Per-row LayerNorm statistics of h.
template <class Real>
struct AffineLnStats {
  std::vector<Real> mean, var, rstd;
};

template <class Real>
Real gamma_of(const AffineLnAffine& blk, int64_t j) {
  return blk.gamma.empty() ? Real(1) : Real(blk.gamma[j]);
}

template <class Real>
Real beta_of(const AffineLnAffine& blk, int64_t j) {
  return blk.beta.empty() ? Real(0) : Real(blk.beta[j]);
}

/// h = A x + a for one input row x (length d).
template <class Real>
std::vector<Real> producer(const AffineLnAffine& blk, const double* x) {
  std::vector<Real> h(static_cast<size_t>(blk.n));
  for (int64_t j = 0; j < blk.n; ++j) {
    Real s = blk.a.empty() ? Real(0) : Real(blk.a[j]);
    for (int64_t i = 0; i < blk.d; ++i) s += Real(blk.A[j * blk.d + i]) * Real(x[i]);
    h[j] = s;
  }
  return h;
}

/// The normalized z = (h - mean) r of one row, and its statistics.
template <class Real>
std::vector<Real> normalized(const AffineLnAffine& blk, const std::vector<Real>& h, Real& mean, Real& var, Real& rstd) {
  const Real nn(static_cast<double>(blk.n));
  mean = Real(0);
  for (const Real& v : h) mean += v;
  mean /= nn;
  var = Real(0);
  for (const Real& v : h) var += (v - mean) * (v - mean);
  var /= nn;
  rstd = Real(1) / sqrt(var + Real(blk.eps));
  std::vector<Real> z(h.size());
  for (size_t j = 0; j < h.size(); ++j) z[j] = (h[j] - mean) * rstd;
  return z;
}

/// The original block on `rows` inputs (rows x d); returns f (rows x m) and fills the statistics.
template <class Real>
std::vector<Real> original_forward(const AffineLnAffine& blk, const std::vector<double>& x, int64_t rows,
                                   AffineLnStats<Real>* stats = nullptr) {
  std::vector<Real> f(static_cast<size_t>(rows * blk.m));
  for (int64_t r = 0; r < rows; ++r) {
    Real mean, var, rstd;
    const auto z = normalized(blk, producer<Real>(blk, &x[r * blk.d]), mean, var, rstd);
    if (stats) {
      stats->mean.push_back(mean);
      stats->var.push_back(var);
      stats->rstd.push_back(rstd);
    }
    for (int64_t k = 0; k < blk.m; ++k) {
      Real s = blk.b.empty() ? Real(0) : Real(blk.b[k]);
      for (int64_t j = 0; j < blk.n; ++j) s += Real(blk.W[k * blk.n + j]) * (gamma_of<Real>(blk, j) * z[j] + beta_of<Real>(blk, j));
      f[r * blk.m + k] = s;
    }
  }
  return f;
}

/// Input cotangent of the original block for output cotangents dy (rows x m); returns rows x d.
template <class Real>
std::vector<Real> original_vjp(const AffineLnAffine& blk, const std::vector<double>& x, const std::vector<double>& dy,
                               int64_t rows) {
  const Real nn(static_cast<double>(blk.n));
  std::vector<Real> dx(static_cast<size_t>(rows * blk.d));
  for (int64_t r = 0; r < rows; ++r) {
    Real mean, var, rstd;
    const auto z = normalized(blk, producer<Real>(blk, &x[r * blk.d]), mean, var, rstd);
    std::vector<Real> v(static_cast<size_t>(blk.n));
    Real mean_v(0), mean_vz(0);
    for (int64_t j = 0; j < blk.n; ++j) {
      Real du(0);
      for (int64_t k = 0; k < blk.m; ++k) du += Real(blk.W[k * blk.n + j]) * Real(dy[r * blk.m + k]);
      v[j] = gamma_of<Real>(blk, j) * du;
      mean_v += v[j];
      mean_vz += v[j] * z[j];
    }
    mean_v /= nn;
    mean_vz /= nn;
    for (int64_t i = 0; i < blk.d; ++i) {
      Real s(0);
      for (int64_t j = 0; j < blk.n; ++j) s += Real(blk.A[j * blk.d + i]) * (rstd * (v[j] - mean_v - z[j] * mean_vz));
      dx[r * blk.d + i] = s;
    }
  }
  return dx;
}

/// T = [P A, P a] (n x (d + 1), row-major): every column centered over the n features.
template <class Real>
std::vector<Real> centered_producer(const AffineLnAffine& blk) {
  const int64_t cols = blk.d + 1;
  const Real nn(static_cast<double>(blk.n));
  std::vector<Real> t(static_cast<size_t>(blk.n * cols));
  for (int64_t c = 0; c < cols; ++c) {
    const auto entry = [&](int64_t j) {
      return c < blk.d ? Real(blk.A[j * blk.d + c]) : (blk.a.empty() ? Real(0) : Real(blk.a[j]));
    };
    Real mean(0);
    for (int64_t j = 0; j < blk.n; ++j) mean += entry(j);
    mean /= nn;
    for (int64_t j = 0; j < blk.n; ++j) t[j * cols + c] = entry(j) - mean;
  }
  return t;
}

/// D = W diag(gamma) T (m x (d + 1)) and c = W beta + b (m): the numerator needs no QR.
template <class Real>
void numerator_coefficients(const AffineLnAffine& blk, const std::vector<Real>& t, std::vector<Real>& D,
                            std::vector<Real>& c) {
  const int64_t cols = blk.d + 1;
  D.assign(static_cast<size_t>(blk.m * cols), Real(0));
  c.assign(static_cast<size_t>(blk.m), Real(0));
  for (int64_t k = 0; k < blk.m; ++k) {
    Real ck = blk.b.empty() ? Real(0) : Real(blk.b[k]);
    for (int64_t j = 0; j < blk.n; ++j) {
      const Real wg = Real(blk.W[k * blk.n + j]) * gamma_of<Real>(blk, j);
      for (int64_t q = 0; q < cols; ++q) D[k * cols + q] += wg * t[j * cols + q];
      ck += Real(blk.W[k * blk.n + j]) * beta_of<Real>(blk, j);
    }
    c[k] = ck;
  }
}

/// Coefficients of the contracted block: D (m x (d+1)), R (k x (d+1)), c (m), all row-major.
template <class Real>
struct Contraction {
  int64_t d = 0, n = 0, m = 0, k = 0;
  double eps = 0;
  std::vector<Real> D, R, c;
};

/// f = D xbar / sqrt(|R xbar|^2 / n + eps) + c for `rows` inputs; also p = R xbar and s per row.
template <class Real, class Coef>
std::vector<Real> contracted_forward(const Contraction<Coef>& k, const std::vector<double>& x, int64_t rows) {
  const int64_t cols = k.d + 1;
  std::vector<Real> f(static_cast<size_t>(rows * k.m));
  for (int64_t r = 0; r < rows; ++r) {
    const auto xbar = [&](int64_t q) { return q < k.d ? Real(x[r * k.d + q]) : Real(1); };
    Real ss(0);
    for (int64_t l = 0; l < k.k; ++l) {
      Real p(0);
      for (int64_t q = 0; q < cols; ++q) p += Real(k.R[l * cols + q]) * xbar(q);
      ss += p * p;
    }
    const Real s = Real(1) / sqrt(ss / Real(static_cast<double>(k.n)) + Real(k.eps));
    for (int64_t i = 0; i < k.m; ++i) {
      Real num(0);
      for (int64_t q = 0; q < cols; ++q) num += Real(k.D[i * cols + q]) * xbar(q);
      f[r * k.m + i] = num * s + Real(k.c[i]);
    }
  }
  return f;
}

/// dx = s D^T dy - (s^3 / n) <dy, D xbar> R^T R xbar (first d components) for `rows` inputs.
template <class Real, class Coef>
std::vector<Real> contracted_vjp(const Contraction<Coef>& k, const std::vector<double>& x, const std::vector<double>& dy,
                                 int64_t rows) {
  const int64_t cols = k.d + 1;
  std::vector<Real> dx(static_cast<size_t>(rows * k.d));
  for (int64_t r = 0; r < rows; ++r) {
    const auto xbar = [&](int64_t q) { return q < k.d ? Real(x[r * k.d + q]) : Real(1); };
    std::vector<Real> p(static_cast<size_t>(k.k), Real(0));
    Real ss(0);
    for (int64_t l = 0; l < k.k; ++l) {
      for (int64_t q = 0; q < cols; ++q) p[l] += Real(k.R[l * cols + q]) * xbar(q);
      ss += p[l] * p[l];
    }
    const Real nn(static_cast<double>(k.n));
    const Real s = Real(1) / sqrt(ss / nn + Real(k.eps));
    Real t(0);
    for (int64_t i = 0; i < k.m; ++i) {
      Real num(0);
      for (int64_t q = 0; q < cols; ++q) num += Real(k.D[i * cols + q]) * xbar(q);
      t += Real(dy[r * k.m + i]) * num;
    }
    const Real coef = s * s * s / nn * t;
    for (int64_t q = 0; q < k.d; ++q) {
      Real e(0), g(0);
      for (int64_t i = 0; i < k.m; ++i) e += Real(k.D[i * cols + q]) * Real(dy[r * k.m + i]);
      for (int64_t l = 0; l < k.k; ++l) g += Real(k.R[l * cols + q]) * p[l];
      dx[r * k.d + q] = s * e - coef * g;
    }
  }
  return dx;
}

}  // namespace normcheck::oracle
