#pragma once
/// Textbook formulas of the port-Hamiltonian stream (issue 9), templated on Real (an interval or
/// point multiprecision type), written from the definitions, sharing no code with the kernels:
///   C = (I - (h/2) S)^(-1) (I + (h/2) S)          Cayley transform of the skew-symmetric S (applied by
///                                                 the certified solve in port_hamiltonian_certify_impl.hpp)
///   Lambda = H diag(tanh theta) H, H = I - 2 v v^T / (v^T v)   symmetric, spectrum tanh(theta_i)
///   x_{t+1} = Lambda C x_t + h B u
///   backward: dL/dx_t = C^T Lambda dL/dx_{t+1} (C^T = C(-S), applied by the same certified solve),
///             dL/du_t = h B^T dL/dx_{t+1}
/// and the residual-stream controls of the growth table (x + f(x), x + f(LN(x)), LN(x + f(x))).
#include <cstdint>
#include <vector>

namespace normcheck::oracle::ph {

/// A x for the rows x cols row-major A (exact doubles).
template <class Real>
std::vector<Real> mat_vec(const std::vector<double>& A, int64_t rows, int64_t cols, const std::vector<Real>& x) {
  std::vector<Real> y(static_cast<size_t>(rows), Real(0));
  for (int64_t i = 0; i < rows; ++i) {
    Real s(0);
    for (int64_t j = 0; j < cols; ++j)
      if (A[i * cols + j] != 0) s += Real(A[i * cols + j]) * x[j];
    y[i] = s;
  }
  return y;
}

/// Lambda z = H D H z with D = diag(tanh theta).
template <class Real>
std::vector<Real> dissipation_apply(const std::vector<double>& theta, const std::vector<double>& v, const std::vector<Real>& z) {
  const size_t n = z.size();
  Real vv(0), vz(0);
  for (size_t i = 0; i < n; ++i) {
    vv += Real(v[i]) * Real(v[i]);
    vz += Real(v[i]) * z[i];
  }
  const Real q = Real(2) / vv;
  std::vector<Real> y(n, Real(0));
  Real vy(0);
  for (size_t i = 0; i < n; ++i) {
    y[i] = tanh(Real(theta[i])) * (z[i] - q * vz * Real(v[i]));
    vy += Real(v[i]) * y[i];
  }
  for (size_t i = 0; i < n; ++i) y[i] = y[i] - q * vy * Real(v[i]);
  return y;
}

/// Entry (i, j) of Lambda = H D H: d_i [i == j] + q v_i v_j (q kappa - d_i - d_j), kappa = v^T D v.
template <class Real>
std::vector<Real> dissipation_matrix(const std::vector<double>& theta, const std::vector<double>& v) {
  const size_t n = v.size();
  std::vector<Real> d(n, Real(0));
  Real vv(0), kappa(0);
  for (size_t i = 0; i < n; ++i) {
    d[i] = tanh(Real(theta[i]));
    vv += Real(v[i]) * Real(v[i]);
    kappa += d[i] * Real(v[i]) * Real(v[i]);
  }
  const Real q = Real(2) / vv;
  std::vector<Real> L(n * n, Real(0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      L[i * n + j] = q * Real(v[i]) * Real(v[j]) * (q * kappa - d[i] - d[j]);
      if (i == j) L[i * n + j] += d[i];
    }
  return L;
}

/// h B u.
template <class Real>
std::vector<Real> port_term(const std::vector<double>& B, const std::vector<double>& u, int64_t n, int64_t m, double h) {
  std::vector<Real> ur(u.begin(), u.end());
  std::vector<Real> y = mat_vec(B, n, m, ur);
  for (auto& e : y) e = Real(h) * e;
  return y;
}

/// h B^T g: the port signal's gradient.
template <class Real>
std::vector<Real> port_adjoint(const std::vector<double>& B, const std::vector<Real>& g, int64_t n, int64_t m, double h) {
  std::vector<Real> y(static_cast<size_t>(m), Real(0));
  for (int64_t j = 0; j < m; ++j) {
    Real s(0);
    for (int64_t i = 0; i < n; ++i)
      if (B[i * m + j] != 0) s += Real(B[i * m + j]) * g[i];
    y[j] = Real(h) * s;
  }
  return y;
}

/// Branch f(x) = W2 relu(W1 x).
template <class Real>
std::vector<Real> branch(const std::vector<double>& W1, const std::vector<double>& W2, const std::vector<Real>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Real> a = mat_vec(W1, n, n, x);
  for (auto& e : a)
    if (e < Real(0)) e = Real(0);
  return mat_vec(W2, n, n, a);
}

/// f'(x)^T g = W1^T (relu'(W1 x) . (W2^T g)), relu'(a) = [a > 0].
template <class Real>
std::vector<Real> branch_vjp(const std::vector<double>& W1, const std::vector<double>& W2, const std::vector<Real>& x,
                             const std::vector<Real>& g) {
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<Real> a = mat_vec(W1, n, n, x);
  std::vector<Real> b(x.size(), Real(0)), out(x.size(), Real(0));
  for (int64_t i = 0; i < n; ++i)
    if (a[i] > Real(0))
      for (int64_t k = 0; k < n; ++k) b[i] += Real(W2[k * n + i]) * g[k];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) out[j] += Real(W1[i * n + j]) * b[i];
  return out;
}

/// LN'(x)^T g = r (g - mean(g) - y mean(g y)), y = (x - mean) r, r = 1 / sqrt(var + eps) (gamma = 1).
template <class Real>
std::vector<Real> layer_norm_vjp(const std::vector<Real>& x, const std::vector<Real>& g, double eps) {
  const Real n(static_cast<double>(x.size()));
  Real mean(0), var(0), mg(0), mgy(0);
  for (const auto& e : x) mean += e;
  mean /= n;
  for (const auto& e : x) var += (e - mean) * (e - mean);
  const Real r = Real(1) / sqrt(var / n + Real(eps));
  for (size_t i = 0; i < x.size(); ++i) {
    mg += g[i];
    mgy += g[i] * (x[i] - mean) * r;
  }
  mg /= n;
  mgy /= n;
  std::vector<Real> dx;
  for (size_t i = 0; i < x.size(); ++i) dx.push_back(r * (g[i] - mg - (x[i] - mean) * r * mgy));
  return dx;
}

/// LN(x) = (x - mean) / sqrt(var + eps), gamma = 1, beta = 0, biased variance.
template <class Real>
std::vector<Real> layer_norm(const std::vector<Real>& x, double eps) {
  const Real n(static_cast<double>(x.size()));
  Real mean(0), var(0);
  for (const auto& e : x) mean += e;
  mean /= n;
  for (const auto& e : x) var += (e - mean) * (e - mean);
  const Real r = Real(1) / sqrt(var / n + Real(eps));
  std::vector<Real> y;
  for (const auto& e : x) y.push_back((e - mean) * r);
  return y;
}

}  // namespace normcheck::oracle::ph
