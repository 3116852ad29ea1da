#pragma once
/// Port-Hamiltonian stream kernels under test (issue 9), templated on storage and accumulator:
///   cayley_solve            C = (I - (h/2)S)^(-1)(I + (h/2)S) by LU with partial pivoting, column by column
///   cayley_explicit_inverse X = (I - (h/2)S)^(-1) by LU, then C = X (I + (h/2)S)        (for comparison)
///   cayley_half_step        planted defect: (I - (h/2)S)^(-1)(I + h S), not orthogonal
///   dissipation             Lambda = H diag(tanh theta) H, formed entrywise, exactly symmetric
///   dissipation_hardtanh    planted defect: diag(clamp(theta, -1, 1)), spectrum reaches +-1
///   ph_step                 x' = Lambda (C x) + h (B u), every stage stored
///   ph_step_residual_leak   planted defect: x' = x + Lambda (C x) + h (B u), the residual connection left in
///   ph_step_vjp             the step's vector-Jacobian product: g_x = C^T (Lambda g), g_u = h B^T g, every stage stored
///   ph_step_vjp_untransposed     planted defect: g_x = C (Lambda g), the transpose forgotten (norm-preserving)
///   ph_step_vjp_residual_leak    planted defect: g_x = g + C^T (Lambda g), the residual's identity Jacobian left in
/// Arithmetic in Accum; each output goes through the explicit num::convert<Storage> store step.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/numeric.hpp"

namespace normcheck::kernels {

/// What the a priori Cayley bound needs from the kernel's own factors (docs/bounds.md 14.2).
struct CayleyDiagnostics {
  double lu_abs_fro = 0;   ///< || |L^| |U^| ||_F, evaluated in double and rounded up
  double inverse_fro = 0;  ///< explicit inverse: || X^ ||_F
  double rhs_fro = 0;      ///< explicit inverse: || N^ ||_F
  bool singular = false;
};

template <class A>
double to_d(A v) {
  return dtype_traits<A>::to_double(v);
}

template <class A>
A tanh_of(A v) {
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    return std::tanh(v);
  } else {
    return num::convert<A>(std::tanh(num::convert<float>(v)));
  }
}

/// In-place LU with partial pivoting (Doolittle, row interchanges in piv).
template <class A>
struct LuFactors {
  int64_t n = 0;
  std::vector<A> lu;
  std::vector<int64_t> piv;
  bool singular = false;
};

template <class A>
LuFactors<A> lu_partial_pivot(std::vector<A> a, int64_t n) {
  LuFactors<A> f{n, std::move(a), std::vector<int64_t>(static_cast<size_t>(n)), false};
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::fabs(to_d(f.lu[i * n + k])) > std::fabs(to_d(f.lu[p * n + k]))) p = i;
    f.piv[k] = p;
    if (p != k)
      for (int64_t j = 0; j < n; ++j) std::swap(f.lu[k * n + j], f.lu[p * n + j]);
    if (to_d(f.lu[k * n + k]) == 0) {
      f.singular = true;
      continue;
    }
    for (int64_t i = k + 1; i < n; ++i) {
      f.lu[i * n + k] = f.lu[i * n + k] / f.lu[k * n + k];
      for (int64_t j = k + 1; j < n; ++j) f.lu[i * n + j] = f.lu[i * n + j] - f.lu[i * n + k] * f.lu[k * n + j];
    }
  }
  return f;
}

/// Solves (P^T L U) y = b in place (b permuted like the rows of the factorization).
template <class A>
void lu_solve(const LuFactors<A>& f, A* b) {
  const int64_t n = f.n;
  for (int64_t k = 0; k < n; ++k) std::swap(b[k], b[f.piv[k]]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) b[i] = b[i] - f.lu[i * n + j] * b[j];
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t j = i + 1; j < n; ++j) b[i] = b[i] - f.lu[i * n + j] * b[j];
    b[i] = b[i] / f.lu[i * n + i];
  }
}

/// || |L^| |U^| ||_F in double, rounded up by a relative margin covering its own evaluation.
template <class A>
double lu_abs_fro(const LuFactors<A>& f) {
  const int64_t n = f.n;
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double e = 0;
      for (int64_t k = 0; k <= std::min(i, j); ++k)
        e += (k == i ? 1.0 : std::fabs(to_d(f.lu[i * n + k]))) * std::fabs(to_d(f.lu[k * n + j]));
      s += e * e;
    }
  // e: n nonnegative products summed (relative error <= (n+1)u); s: n^2 nonnegative terms
  // (<= (n^2 + 2n + 2)u with the squares); sqrt halves it and adds u. u = 2^-53.
  return std::sqrt(s) * (1 + static_cast<double>(n * n + 2 * n + 4) * 0x1p-52);
}

/// M = I - (h/2) S and N = I + (scale_n h/2) S in Accum (scale_n = 2 only in the planted defect).
template <class Storage, class Accum>
void cayley_operands(const Storage* S, int64_t n, Storage h, double scale_n, std::vector<Accum>& M, std::vector<Accum>& N) {
  const Accum hh = num::convert<Accum>(h) * num::constant<Accum>(0.5);
  const Accum hn = hh * num::constant<Accum>(scale_n);
  M.assign(static_cast<size_t>(n * n), num::constant<Accum>(0.0));
  N = M;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const Accum s = num::convert<Accum>(S[i * n + j]);
      M[i * n + j] = i == j ? num::constant<Accum>(1.0) : -(hh * s);
      N[i * n + j] = i == j ? num::constant<Accum>(1.0) : hn * s;
    }
}

template <class Storage, class Accum>
CayleyDiagnostics cayley_solve_with(const Storage* S, int64_t n, Storage h, double scale_n, Storage* C) {
  std::vector<Accum> M, N;
  cayley_operands<Storage, Accum>(S, n, h, scale_n, M, N);
  const LuFactors<Accum> f = lu_partial_pivot(std::move(M), n);
  std::vector<Accum> col(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) col[i] = N[i * n + j];
    lu_solve(f, col.data());
    for (int64_t i = 0; i < n; ++i) C[i * n + j] = num::convert<Storage>(col[i]);
  }
  CayleyDiagnostics d;
  d.lu_abs_fro = lu_abs_fro(f);
  d.singular = f.singular;
  return d;
}

template <class Storage, class Accum = default_accum_t<Storage>>
CayleyDiagnostics cayley_solve(const Storage* S, int64_t n, Storage h, Storage* C) {
  return cayley_solve_with<Storage, Accum>(S, n, h, 1.0, C);
}

/// Planted defect: the right factor uses h instead of h/2.
template <class Storage, class Accum = default_accum_t<Storage>>
CayleyDiagnostics cayley_half_step(const Storage* S, int64_t n, Storage h, Storage* C) {
  return cayley_solve_with<Storage, Accum>(S, n, h, 2.0, C);
}

template <class Storage, class Accum = default_accum_t<Storage>>
CayleyDiagnostics cayley_explicit_inverse(const Storage* S, int64_t n, Storage h, Storage* C) {
  std::vector<Accum> M, N;
  cayley_operands<Storage, Accum>(S, n, h, 1.0, M, N);
  const LuFactors<Accum> f = lu_partial_pivot(std::move(M), n);
  std::vector<Accum> X(static_cast<size_t>(n * n)), col(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) col[i] = num::constant<Accum>(i == j ? 1.0 : 0.0);
    lu_solve(f, col.data());
    for (int64_t i = 0; i < n; ++i) X[i * n + j] = col[i];
  }
  CayleyDiagnostics d;
  double xf = 0, nf = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Accum s = num::constant<Accum>(0.0);
      for (int64_t k = 0; k < n; ++k) s += X[i * n + k] * N[k * n + j];
      C[i * n + j] = num::convert<Storage>(s);
      xf += to_d(X[i * n + j]) * to_d(X[i * n + j]);
      nf += to_d(N[i * n + j]) * to_d(N[i * n + j]);
    }
  const double margin = 1 + static_cast<double>(n * n + 4) * 0x1p-52;
  d.inverse_fro = std::sqrt(xf) * margin;
  d.rhs_fro = std::sqrt(nf) * margin;
  d.lu_abs_fro = lu_abs_fro(f);
  d.singular = f.singular;
  return d;
}

/// Lambda = H D H entrywise: d_i [i == j] + ((q v_i) v_j)((q kappa - d_i) - d_j), q = 2 / (v^T v),
/// kappa = sum d_k (v_k v_k); the upper triangle is computed and mirrored (exactly symmetric).
template <class Storage, class Accum, class DiagFn>
void dissipation_with(DiagFn diag, const Storage* theta, const Storage* v, int64_t n, Storage* L) {
  std::vector<Accum> d(static_cast<size_t>(n)), va(static_cast<size_t>(n));
  Accum vv = num::constant<Accum>(0.0), kappa = num::constant<Accum>(0.0);
  for (int64_t k = 0; k < n; ++k) {
    d[k] = diag(num::convert<Accum>(theta[k]));
    va[k] = num::convert<Accum>(v[k]);
    vv += va[k] * va[k];
    kappa += d[k] * (va[k] * va[k]);
  }
  const Accum q = num::constant<Accum>(2.0) / vv, qk = q * kappa;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) {
      Accum e = ((q * va[i]) * va[j]) * ((qk - d[i]) - d[j]);
      if (i == j) e += d[i];
      L[i * n + j] = L[j * n + i] = num::convert<Storage>(e);
    }
}

template <class Storage, class Accum = default_accum_t<Storage>>
void dissipation(const Storage* theta, const Storage* v, int64_t n, Storage* L) {
  dissipation_with<Storage, Accum>([](Accum t) { return tanh_of(t); }, theta, v, n, L);
}

/// Planted defect: hard tanh, d = clamp(theta, -1, 1): the spectrum reaches +-1.
template <class Storage, class Accum = default_accum_t<Storage>>
void dissipation_hardtanh(const Storage* theta, const Storage* v, int64_t n, Storage* L) {
  dissipation_with<Storage, Accum>([](Accum t) {
    const double x = to_d(t);
    return x > 1 ? num::constant<Accum>(1.0) : (x < -1 ? num::constant<Accum>(-1.0) : t);
  }, theta, v, n, L);
}

/// y = A x (rows x cols), sequential dot products in Accum, stored.
template <class Storage, class Accum>
void mat_vec(const Storage* A, int64_t rows, int64_t cols, const Storage* x, Storage* y) {
  for (int64_t i = 0; i < rows; ++i) {
    Accum s = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < cols; ++j) s += num::convert<Accum>(A[i * cols + j]) * num::convert<Accum>(x[j]);
    y[i] = num::convert<Storage>(s);
  }
}

/// y = A^T x (A rows x cols, y of length cols): column dot products, sequential in Accum, stored.
template <class Storage, class Accum>
void mat_t_vec(const Storage* A, int64_t rows, int64_t cols, const Storage* x, Storage* y) {
  for (int64_t j = 0; j < cols; ++j) {
    Accum s = num::constant<Accum>(0.0);
    for (int64_t i = 0; i < rows; ++i) s += num::convert<Accum>(A[i * cols + j]) * num::convert<Accum>(x[i]);
    y[j] = num::convert<Storage>(s);
  }
}

/// One step: z = st(C x), w = st(Lambda z), p = st(h (B u)) (h times the accumulated dot product),
/// x' = st(w + p).
template <class Storage, class Accum = default_accum_t<Storage>>
void ph_step(const Storage* C, const Storage* L, const Storage* B, const Storage* u, int64_t n, int64_t m, Storage h,
             const Storage* x, Storage* out) {
  std::vector<Storage> z(static_cast<size_t>(n)), w(static_cast<size_t>(n));
  mat_vec<Storage, Accum>(C, n, n, x, z.data());
  mat_vec<Storage, Accum>(L, n, n, z.data(), w.data());
  const Accum ha = num::convert<Accum>(h);
  for (int64_t i = 0; i < n; ++i) {
    Accum s = num::constant<Accum>(0.0);
    for (int64_t j = 0; j < m; ++j) s += num::convert<Accum>(B[i * m + j]) * num::convert<Accum>(u[j]);
    const Storage p = num::convert<Storage>(ha * s);
    out[i] = num::convert<Storage>(num::convert<Accum>(w[i]) + num::convert<Accum>(p));
  }
}

/// Planted defect: the residual connection left in, x' = st(x + Lambda (C x) + h (B u)): norm enters
/// through the trunk, not only through the ports (the floating-point budget must catch it).
template <class Storage, class Accum = default_accum_t<Storage>>
void ph_step_residual_leak(const Storage* C, const Storage* L, const Storage* B, const Storage* u, int64_t n, int64_t m,
                           Storage h, const Storage* x, Storage* out) {
  std::vector<Storage> y(static_cast<size_t>(n));
  ph_step<Storage, Accum>(C, L, B, u, n, m, h, x, y.data());
  for (int64_t i = 0; i < n; ++i) out[i] = num::convert<Storage>(num::convert<Accum>(x[i]) + num::convert<Accum>(y[i]));
}

/// How a step's VJP treats the transport (the correct kernel and two planted defects).
enum class VjpTransport { transpose, untransposed, residual_leak };

/// VJP of one step for the cotangent g = dL/dx_{t+1}: a = st(Lambda g) (Lambda is symmetric),
/// g_x = st(C^T a), g_u = st(h (B^T g)) (h times the accumulated column dot product).
template <class Storage, class Accum>
void ph_step_vjp_with(VjpTransport mode, const Storage* C, const Storage* L, const Storage* B, int64_t n, int64_t m, Storage h,
                      const Storage* g, Storage* gx, Storage* gu) {
  std::vector<Storage> a(static_cast<size_t>(n));
  mat_vec<Storage, Accum>(L, n, n, g, a.data());
  if (mode == VjpTransport::untransposed) mat_vec<Storage, Accum>(C, n, n, a.data(), gx);
  else mat_t_vec<Storage, Accum>(C, n, n, a.data(), gx);
  if (mode == VjpTransport::residual_leak)
    for (int64_t i = 0; i < n; ++i) gx[i] = num::convert<Storage>(num::convert<Accum>(g[i]) + num::convert<Accum>(gx[i]));
  const Accum ha = num::convert<Accum>(h);
  for (int64_t j = 0; j < m; ++j) {
    Accum s = num::constant<Accum>(0.0);
    for (int64_t i = 0; i < n; ++i) s += num::convert<Accum>(B[i * m + j]) * num::convert<Accum>(g[i]);
    gu[j] = num::convert<Storage>(ha * s);
  }
}

template <class Storage, class Accum = default_accum_t<Storage>>
void ph_step_vjp(const Storage* C, const Storage* L, const Storage* B, int64_t n, int64_t m, Storage h, const Storage* g,
                 Storage* gx, Storage* gu) {
  ph_step_vjp_with<Storage, Accum>(VjpTransport::transpose, C, L, B, n, m, h, g, gx, gu);
}

/// Planted defect: C instead of C^T. Orthogonal either way, so no norm budget can see it; the
/// certified backward stream does (PH-STREAM-BACKWARD).
template <class Storage, class Accum = default_accum_t<Storage>>
void ph_step_vjp_untransposed(const Storage* C, const Storage* L, const Storage* B, int64_t n, int64_t m, Storage h,
                              const Storage* g, Storage* gx, Storage* gu) {
  ph_step_vjp_with<Storage, Accum>(VjpTransport::untransposed, C, L, B, n, m, h, g, gx, gu);
}

/// Planted defect: the adjoint of ph_step_residual_leak, g_x = g + C^T (Lambda g): the gradient
/// grows through the trunk (the floating-point gradient budget must catch it).
template <class Storage, class Accum = default_accum_t<Storage>>
void ph_step_vjp_residual_leak(const Storage* C, const Storage* L, const Storage* B, int64_t n, int64_t m, Storage h,
                               const Storage* g, Storage* gx, Storage* gu) {
  ph_step_vjp_with<Storage, Accum>(VjpTransport::residual_leak, C, L, B, n, m, h, g, gx, gu);
}

}  // namespace normcheck::kernels
