#pragma once
/// Reference RMSNorm and the block Linear o RMSNorm, templated on the real type, in composed and
/// deferred form (seed: deferred-rmsnorm-backward). Shares no code with src/kernels.
///
///   r = (mean(x^2) + eps)^(-1/2),  z = r x,  RMSNorm: u = g * z
///   JVP:   du = g * r (dx - z mean(z dx)) + z dg
///   VJP:   v = g * c,  dx = r (v - z mean(v z)),  dg = sum_rows c * z
///   block: y = W u + b;  composed VJP: c = W^T dy, then the RMSNorm VJP; dW = sum_rows dy u^T
///   deferred: y = r (W_g x) + b with W_g = W diag(g);  dx = r W_g^T dy - (r^2/n) <dy, y - b> x
#include <cstdint>
#include <vector>

#include "core/rmsnorm_case.hpp"
#include "oracles/sum_of.hpp"
#include "oracles/to_real.hpp"

namespace normcheck::oracle {

/// Per-row mean of squares mean(x^2).
template <class Real>
std::vector<Real> mean_of_squares(const RmsBlockCase& c) {
  std::vector<Real> ms(static_cast<size_t>(c.rows));
  for (int64_t i = 0; i < c.rows; ++i) {
    sum_of_t<Real> ss{};
    for (int64_t j = 0; j < c.n; ++j) {
      const Real x(c.x[i * c.n + j]);  // converted once: x * x (MPFI squares; the same value for a point)
      ss += x * x;
    }
    ms[i] = total(ss) / Real(static_cast<double>(c.n));
  }
  return ms;
}

/// Per-row reciprocal RMS r = (ms + eps)^(-1/2) from the mean of squares.
template <class Real>
std::vector<Real> rms_reciprocal_of(const RmsBlockCase& c, std::vector<Real> ms) {
  for (Real& v : ms) v = Real(1) / sqrt(v + Real(c.eps));
  return ms;
}

/// Per-row reciprocal RMS r = (mean(x^2) + eps)^(-1/2).
template <class Real>
std::vector<Real> rms_reciprocal(const RmsBlockCase& c) {
  return rms_reciprocal_of(c, mean_of_squares<Real>(c));
}

/// The normalized rows z = r x (rows * n) from the reciprocal RMS of each row: computed once and
/// shared by the forward and the VJP.
template <class Real>
std::vector<Real> rmsnorm_normalized(const RmsBlockCase& c, const std::vector<Real>& r) {
  std::vector<Real> z(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j) z[i * c.n + j] = r[i] * Real(c.x[i * c.n + j]);
  return z;
}

/// RMSNorm forward u = g * z from the normalized rows.
template <class Real>
std::vector<Real> rmsnorm_gain(const RmsBlockCase& c, const std::vector<Real>& z) {
  std::vector<Real> u(z.size());
  const std::vector<Real> g = to_real<Real>(c.g);  // once per case
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j) u[i * c.n + j] = g[j] * z[i * c.n + j];
  return u;
}

/// RMSNorm forward u = g * r x (rows * n) from the reciprocal RMS of each row.
template <class Real>
std::vector<Real> rmsnorm_forward_given(const RmsBlockCase& c, const std::vector<Real>& r) {
  return rmsnorm_gain(c, rmsnorm_normalized(c, r));
}

/// RMSNorm forward u = g * r x (rows * n).
template <class Real>
std::vector<Real> rmsnorm_forward(const RmsBlockCase& c) {
  return rmsnorm_forward_given(c, rms_reciprocal<Real>(c));
}

/// RMSNorm JVP along (dx, dg).
template <class Real>
std::vector<Real> rmsnorm_jvp(const RmsBlockCase& c, const std::vector<Real>& dx, const std::vector<Real>& dg) {
  const auto r = rms_reciprocal<Real>(c);
  std::vector<Real> du(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    sum_of_t<Real> sum_zdx{};
    for (int64_t j = 0; j < c.n; ++j) sum_zdx += r[i] * Real(c.x[i * c.n + j]) * dx[i * c.n + j];
    Real mean_zdx = total(sum_zdx);
    mean_zdx /= Real(static_cast<double>(c.n));
    for (int64_t j = 0; j < c.n; ++j) {
      const Real z = r[i] * Real(c.x[i * c.n + j]);
      du[i * c.n + j] = Real(c.g[j]) * r[i] * (dx[i * c.n + j] - z * mean_zdx) + z * dg[j];
    }
  }
  return du;
}

/// RMSNorm VJP for the cotangent cu (rows * n) from the reciprocal RMS of each row and the
/// normalized rows z = r x (rmsnorm_normalized): returns dx; accumulates dg (size n).
template <class Real>
std::vector<Real> rmsnorm_vjp_normalized(const RmsBlockCase& c, const std::vector<Real>& r, const std::vector<Real>& z,
                                         const std::vector<Real>& cu, std::vector<Real>& dg) {
  std::vector<Real> dx(c.x.size());
  std::vector<sum_of_t<Real>> dgs(static_cast<size_t>(c.n));
  std::vector<Real> v(static_cast<size_t>(c.n));  // g * cu of the row
  const std::vector<Real> g = to_real<Real>(c.g);    // once per case
  for (int64_t i = 0; i < c.rows; ++i) {
    sum_of_t<Real> sum_vz{};
    for (int64_t j = 0; j < c.n; ++j) {
      v[j] = g[j] * cu[i * c.n + j];
      sum_vz += v[j] * z[i * c.n + j];
      dgs[j] += cu[i * c.n + j] * z[i * c.n + j];
    }
    const Real mean_vz = total(sum_vz) / Real(static_cast<double>(c.n));
    for (int64_t j = 0; j < c.n; ++j) dx[i * c.n + j] = r[i] * (v[j] - z[i * c.n + j] * mean_vz);
  }
  dg.clear();
  for (const auto& e : dgs) dg.push_back(total(e));
  return dx;
}

/// The forward outputs u_k at `ys` and the VJP's dx_k at `dxs` only (row-major indices, ascending)
/// from the reciprocal RMS of each row and the cotangent cu (rows * n exact doubles), for the
/// cascade's element fall-through: for a row with a dx wanted, mean(v z) over the whole row; every
/// output computed is the same operations as rmsnorm_gain's and rmsnorm_vjp_normalized's.
template <class Real>
void rmsnorm_outputs_at(const RmsBlockCase& c, const std::vector<Real>& r, const std::vector<double>& cu,
                        const std::vector<int64_t>& ys, const std::vector<int64_t>& dxs, std::vector<Real>& y,
                        std::vector<Real>& dx) {
  y.clear();
  dx.clear();
  for (const int64_t k : ys) y.push_back(Real(c.g[k % c.n]) * (r[k / c.n] * Real(c.x[k])));
  std::vector<Real> z(static_cast<size_t>(c.n)), v(z.size());
  for (size_t next = 0; next < dxs.size();) {
    const int64_t i = dxs[next] / c.n;
    sum_of_t<Real> sum_vz{};
    for (int64_t j = 0; j < c.n; ++j) {
      z[j] = r[i] * Real(c.x[i * c.n + j]);
      v[j] = Real(c.g[j]) * Real(cu[i * c.n + j]);
      sum_vz += v[j] * z[j];
    }
    const Real mean_vz = total(sum_vz) / Real(static_cast<double>(c.n));
    for (; next < dxs.size() && dxs[next] / c.n == i; ++next) {
      const int64_t j = dxs[next] % c.n;
      dx.push_back(r[i] * (v[j] - z[j] * mean_vz));
    }
  }
}

/// RMSNorm VJP for the cotangent cu (rows * n) from the reciprocal RMS of each row: returns dx;
/// accumulates dg (size n).
template <class Real>
std::vector<Real> rmsnorm_vjp_given(const RmsBlockCase& c, const std::vector<Real>& r, const std::vector<Real>& cu,
                                    std::vector<Real>& dg) {
  return rmsnorm_vjp_normalized(c, r, rmsnorm_normalized(c, r), cu, dg);
}

/// dg_j = sum_i cu_ij (r_i x_ij) for the columns `cols` only (cu: rows * n exact doubles):
/// rmsnorm_vjp_given's sums, for the cascade's column fall-through.
template <class Real>
std::vector<Real> rmsnorm_gain_grad_columns(const RmsBlockCase& c, const std::vector<Real>& r, const std::vector<double>& cu,
                                            const std::vector<int64_t>& cols) {
  std::vector<sum_of_t<Real>> dgs(cols.size());
  for (int64_t i = 0; i < c.rows; ++i)
    for (size_t k = 0; k < cols.size(); ++k) {
      const int64_t j = cols[k];
      const Real z = r[i] * Real(c.x[i * c.n + j]);
      dgs[k] += Real(cu[i * c.n + j]) * z;
    }
  std::vector<Real> dg;
  for (const auto& e : dgs) dg.push_back(total(e));
  return dg;
}

/// RMSNorm VJP for the cotangent cu (rows * n): returns dx; accumulates dg (size n).
template <class Real>
std::vector<Real> rmsnorm_vjp(const RmsBlockCase& c, const std::vector<Real>& cu, std::vector<Real>& dg) {
  return rmsnorm_vjp_given(c, rms_reciprocal<Real>(c), cu, dg);
}

/// Block forward, composed: y = W (g * r x) + b (rows * m).
template <class Real>
std::vector<Real> linear_rmsnorm_forward_composed(const RmsBlockCase& c) {
  const auto u = rmsnorm_forward<Real>(c);
  std::vector<Real> y(static_cast<size_t>(c.rows * c.m));
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t k = 0; k < c.m; ++k) {
      Real s = c.b.empty() ? Real(0) : Real(c.b[k]);
      for (int64_t j = 0; j < c.n; ++j) s += Real(c.w[k * c.n + j]) * u[i * c.n + j];
      y[i * c.m + k] = s;
    }
  return y;
}

/// Block forward, deferred: y = r (W_g x) + b, W_g = W diag(g).
template <class Real>
std::vector<Real> linear_rmsnorm_forward_deferred(const RmsBlockCase& c) {
  const auto r = rms_reciprocal<Real>(c);
  std::vector<Real> y(static_cast<size_t>(c.rows * c.m));
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t k = 0; k < c.m; ++k) {
      Real s(0);
      for (int64_t j = 0; j < c.n; ++j) s += (Real(c.w[k * c.n + j]) * Real(c.g[j])) * Real(c.x[i * c.n + j]);
      y[i * c.m + k] = r[i] * s + (c.b.empty() ? Real(0) : Real(c.b[k]));
    }
  return y;
}

/// Block VJP, composed: c = W^T dy, then the RMSNorm VJP. Returns dx; fills dw (m * n) and dg (n).
template <class Real>
std::vector<Real> linear_rmsnorm_vjp_composed(const RmsBlockCase& c, std::vector<Real>& dw, std::vector<Real>& dg) {
  const auto u = rmsnorm_forward<Real>(c);
  std::vector<Real> cu(c.x.size(), Real(0));
  dw.assign(static_cast<size_t>(c.m * c.n), Real(0));
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t k = 0; k < c.m; ++k) {
      const Real d(c.dy[i * c.m + k]);
      for (int64_t j = 0; j < c.n; ++j) {
        cu[i * c.n + j] += Real(c.w[k * c.n + j]) * d;
        dw[k * c.n + j] += d * u[i * c.n + j];
      }
    }
  return rmsnorm_vjp(c, cu, dg);
}

/// Block VJP for x, deferred: dx = r W_g^T dy - (r^2 / n) <dy, y - b> x.
template <class Real>
std::vector<Real> linear_rmsnorm_vjp_dx_deferred(const RmsBlockCase& c) {
  const auto r = rms_reciprocal<Real>(c);
  RmsBlockCase no_bias = c;
  no_bias.b.clear();
  const auto y = linear_rmsnorm_forward_deferred<Real>(no_bias);  // y - b
  std::vector<Real> dx(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    Real s(0);
    for (int64_t k = 0; k < c.m; ++k) s += Real(c.dy[i * c.m + k]) * y[i * c.m + k];
    const Real scale = r[i] * r[i] / Real(static_cast<double>(c.n)) * s;
    for (int64_t j = 0; j < c.n; ++j) {
      Real gemm(0);
      for (int64_t k = 0; k < c.m; ++k) gemm += (Real(c.w[k * c.n + j]) * Real(c.g[j])) * Real(c.dy[i * c.m + k]);
      dx[i * c.n + j] = r[i] * gemm - scale * Real(c.x[i * c.n + j]);
    }
  }
  return dx;
}

/// The seed's theorem with r a free scalar: left (composed) and right (deferred) sides for row 0.
template <class Real>
void input_pullback_free_r(const RmsBlockCase& c, const Real& r, std::vector<Real>& composed,
                           std::vector<Real>& deferred) {
  const Real n_real(static_cast<double>(c.n));
  std::vector<Real> wdy(static_cast<size_t>(c.n), Real(0));  // sum_i W_ik dy_i
  for (int64_t k = 0; k < c.m; ++k)
    for (int64_t j = 0; j < c.n; ++j) wdy[j] += Real(c.w[k * c.n + j]) * Real(c.dy[k]);
  Real mean_term(0);
  for (int64_t j = 0; j < c.n; ++j) mean_term += Real(c.g[j]) * wdy[j] * (r * Real(c.x[j]));
  Real s(0);  // sum_i dy_i (r sum_j W_ij g_j x_j)
  for (int64_t k = 0; k < c.m; ++k) {
    Real inner(0);
    for (int64_t j = 0; j < c.n; ++j) inner += (Real(c.w[k * c.n + j]) * Real(c.g[j])) * Real(c.x[j]);
    s += Real(c.dy[k]) * (r * inner);
  }
  composed.resize(static_cast<size_t>(c.n));
  deferred.resize(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) {
    Real wg_dy(0);
    for (int64_t k = 0; k < c.m; ++k) wg_dy += (Real(c.w[k * c.n + j]) * Real(c.g[j])) * Real(c.dy[k]);
    composed[j] = r * (Real(c.g[j]) * wdy[j] - r * Real(c.x[j]) * (mean_term / n_real));
    deferred[j] = r * wg_dy - r * r / n_real * s * Real(c.x[j]);
  }
}

}  // namespace normcheck::oracle
