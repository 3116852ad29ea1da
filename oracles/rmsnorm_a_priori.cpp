// The a priori double level of the RMSNorm oracle (docs/bounds.md section 18.2), tried before the
// double ball for f16, bf16 and f32 outputs: every midpoint is the double ball's, operation for
// operation (so the levels agree bit for bit wherever both certify), and every radius comes from a
// bound derived once per row (the row's reciprocal RMS as a ball, Sum2's error bound for the sums),
// a few multiplications per output instead of a ball operation per arithmetic step. Rows it cannot
// certify go on to the double ball.
#include <boost/multiprecision/mpfi.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "oracles/a_priori.hpp"
#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {
namespace {

using namespace a_priori;

/// The row's statistics as balls with mean_of_squares<Ball>'s and rms_reciprocal_of's midpoints,
/// and kappa: |fl(x r_m) - x r| <= kappa |fl(x r_m)| + eta for every x (infinite when the row is
/// left to the running ball).
struct RowScale {
  Ball ms, r;
  double rho = HUGE_VAL, kappa = HUGE_VAL;  // rho >= r_r / r_m
};

RowScale row_scale(const double* x, int64_t n, double eps, double sum_factor) {
  Sum2 s;
  for (int64_t j = 0; j < n; ++j) s.add(x[j] * x[j]);
  const double a = s.abs_sum(), f = abs_sum_factor(n);
  // Sum2's error, plus the squares' roundings: sum |fl(x^2) - x^2| <= u sum fl(x^2) + n eta / 2 <= u f A + n eta / 2
  // (u f is exact: a power of two times f >= 1).
  const Ball sum(s.value(), up(s.error(sum_factor) + kU * f * a + static_cast<double>(n) * kEta));
  RowScale out;
  out.ms = sum / Ball(static_cast<double>(n));
  out.r = Ball(1) / sqrt(out.ms + Ball(eps));
  if (!out.r.bounded() || !(out.r.mid > 0)) return out;
  const double rho = up(out.r.rad / out.r.mid);  // r_r / r_m
  if (!(rho <= kMaxRowRelativeRadius)) return out;
  out.rho = rho;
  out.kappa = up(kU + rho * (1 + 2 * kU));
  return out;
}

/// The VJP's per-row constants: rad(dx_j) <= up(u |dx_j| + c1 |d_j| + c2 |v_j| + c3 |z_j| + c4).
struct DxBound {
  double m = 0, c1 = HUGE_VAL, c2 = HUGE_VAL, c3 = HUGE_VAL, c4 = HUGE_VAL;
};

/// `v_exact`: every v = fl(g dy) is exact (narrow inputs).
DxBound dx_bound(const Sum2& s, int64_t n, double sum_factor, const RowScale& rs, double v_max, double z_max, bool v_exact) {
  DxBound b;
  const double nd = static_cast<double>(n);
  b.m = s.value() / nd;  // the ball's total(sum_vz) / Real(n)
  if (!(rs.kappa < HUGE_VAL)) return b;
  const double kappa = rs.kappa, a = s.abs_sum();
  // Section 18.2's E_S: each product off by its own roundings (c_theta: fl(x r_m), fl(v z), and v's
  // unless exact) and underflow, then the common factor r_m against r (rho, times the exact sum).
  const double c_theta = up(abs_sum_factor(n) * gamma_ratio_up(v_exact ? 2 : 3));
  const double under = up(2 * nd * kEta * (2 + v_max + z_max));
  const double e_s = with_common_factor(up(s.error(sum_factor) + c_theta * a + under), rs.rho, std::fabs(s.value()));
  const double e_m = up(kU * std::fabs(b.m) + kEta + e_s / nd);
  const double r_m = rs.r.mid, r_r = rs.r.rad, big_r = up(r_m + r_r), am = std::fabs(b.m);
  b.c1 = up(r_r + big_r * kU);
  b.c2 = up(big_r * kU);
  // A product that underflows and is then multiplied by R > 1 would lose R times its rounding's
  // absolute error, which no final up() covers: every factor of big_r is bounded above by up() first.
  b.c3 = up(big_r * up(e_m + (am + e_m) * kappa + kU * (1 + 2 * kU) * am));
  b.c4 = up(kEta * up(big_r * (2 + am + e_m)) + kEta);
  return b;
}

}  // namespace

CertifiedLayerNorm evaluate_rmsnorm_a_priori(const LayerNormCase& c, bool with_vjp) {
  CertifiedLayerNorm out;
  out.precision_bits = 53;
  const int64_t n = c.n, rows = c.rows;
  const double row_factor = sum2_factor(n), column_factor = sum2_factor(rows);
  const double g_max = max_abs(c.gamma), dy_max = with_vjp ? max_abs(c.dy) : 0;
  const double y_eta = up(kEta * (1 + g_max));  // section 18.2: rad(y) <= alpha |y| + eta (1 + G)
  // y and dx are certified row by row, from one row's balls (still in cache).
  std::vector<Ball> y(static_cast<size_t>(n)), dx(with_vjp ? y.size() : 0), ms(static_cast<size_t>(rows)), rstd(ms.size());
  out.y.reserve(c.x.size());
  out.dx.reserve(with_vjp ? c.x.size() : 0);
  std::vector<double> z(static_cast<size_t>(n)), v(z.size());
  std::vector<Sum2> columns(with_vjp ? z.size() : 0);
  const bool v_exact = with_vjp && narrow(c.gamma) && narrow(c.dy);  // section 18.2: v = g dy exact
  double mu = 0;  // max over rows of u + kappa (1 + 2u): |fl(dy z) - dy z| <= mu |fl(dy z)| + eta (1 + D)
  for (int64_t i = 0; i < rows; ++i) {
    const size_t base = static_cast<size_t>(i * n);
    const double* x = &c.x[base];
    const RowScale rs = row_scale(x, n, c.eps, row_factor);
    ms[static_cast<size_t>(i)] = rs.ms;
    rstd[static_cast<size_t>(i)] = rs.r;
    const double r_m = rs.r.mid, alpha = up(kU + rs.kappa * (1 + 2 * kU));
    mu = std::max(mu, alpha);  // NaN-free: alpha is infinite for a row left to the ball
    for (int64_t j = 0; j < n; ++j) {
      z[j] = x[j] * r_m;  // rmsnorm_normalized: r[i] * Real(x)
      const double yj = c.gamma[j] * z[j];  // rmsnorm_gain: Real(g) * z
      const bool exact_zero = x[j] == 0 || c.gamma[j] == 0;  // the ball's exact-zero product rule
      y[j] = Ball(yj, exact_zero ? 0.0 : up(alpha * std::fabs(yj) + y_eta));
    }
    detail::certify_into(y.data(), y.size(), c.dtype, out.y, out);
    if (!with_vjp) continue;
    const double* dy = &c.dy[base];
    Sum2 sum_vz;
    double v_max = 0, z_max = 0;
    for (int64_t j = 0; j < n; ++j) {
      v[j] = c.gamma[j] * dy[j];  // rmsnorm_vjp_normalized: Real(g) * cu
      sum_vz.add(v[j] * z[j]);
      columns[j].add(dy[j] * z[j]);
      v_max = std::max(v_max, std::fabs(v[j]));
      z_max = std::max(z_max, std::fabs(z[j]));
    }
    const DxBound b = dx_bound(sum_vz, n, row_factor, rs, v_max, z_max, v_exact);
    for (int64_t j = 0; j < n; ++j) {
      const double d = v[j] - z[j] * b.m, dxj = r_m * d;  // r[i] * (v - z * mean_vz)
      dx[j] = Ball(dxj, up(kU * std::fabs(dxj) + b.c1 * std::fabs(d) + b.c2 * std::fabs(v[j]) + b.c3 * std::fabs(z[j]) + b.c4));
    }
    detail::certify_into(dx.data(), dx.size(), c.dtype, out.dx, out);
  }
  const std::vector<Ball> zero(ms.size(), Ball(0));
  detail::mids(zero, out.mean, out.mean_rad);
  detail::mids(ms, out.var, out.var_rad);
  detail::mids(rstd, out.rstd, out.rstd_rad);
  if (with_vjp) {
    std::vector<Ball> dgamma(columns.size());
    const double q_eta = up(static_cast<double>(rows) * kEta * (1 + dy_max));
    const double f_mu = up(abs_sum_factor(rows) * mu);  // sum |q| <= f A
    for (size_t j = 0; j < columns.size(); ++j) {
      const double value = columns[j].value(), a = columns[j].abs_sum();
      dgamma[j] = Ball(value, up(columns[j].error(column_factor) + f_mu * a + q_eta));
    }
    out.dgamma = detail::certify_all(dgamma, c.dtype, out);
  }
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

}  // namespace normcheck::oracle
