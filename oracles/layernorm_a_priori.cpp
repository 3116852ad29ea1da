// The a priori double level of the LayerNorm oracle (docs/bounds.md section 18.2), tried before the
// double ball for f16, bf16 and f32 outputs: every midpoint is the double ball's, operation for
// operation (oracles/layernorm.hpp on Ball), and every radius comes from a bound derived once per
// row (mean and rstd as balls, Sum2's error bound for the sums). Rows and columns it cannot certify
// go on to the double ball.
#include <boost/multiprecision/mpfi.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "oracles/a_priori.hpp"
#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {
namespace {

using namespace a_priori;

/// A row's statistics as balls with layernorm_row_stats<Ball>'s midpoints, and the bound
/// |fl(fl(x - mu_m) r_m) - (x - mu) r| <= kappa |z| + zeta + eta (infinite when the row is left to
/// the double ball).
struct RowNormal {
  Ball mean, var, r;
  double rho = HUGE_VAL, kappa = HUGE_VAL, zeta = HUGE_VAL;  // rho >= r_r / r_m
};

RowNormal row_normal(const double* x, int64_t n, double eps, double sum_factor) {
  const double nd = static_cast<double>(n);
  Sum2 s1;
  for (int64_t j = 0; j < n; ++j) s1.add(x[j]);  // exact terms
  RowNormal out;
  out.mean = Ball(s1.value(), s1.error(sum_factor)) / Ball(nd);
  const double mu_m = out.mean.mid, mu_r = out.mean.rad;
  Sum2 s2;
  double abs_d = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = x[j] - mu_m;
    s2.add(d * d);
    abs_d += std::fabs(d);
  }
  // The squares against (x - mu)^2: sum |fl(d^2) - (x - mu)^2| <= 4u A2 + n eta + 4 mu_r D1 + n mu_r^2 (section 18.2).
  const double a2 = s2.abs_sum();
  const double sq = up(4 * kU * a2 + nd * kEta + 4 * mu_r * abs_d + nd * mu_r * mu_r);
  out.var = Ball(s2.value(), up(s2.error(sum_factor) + sq)) / Ball(nd);
  out.r = Ball(1) / sqrt(out.var + Ball(eps));
  if (!out.mean.bounded() || !out.r.bounded() || !(out.r.mid > 0)) return out;
  const double rho = up(out.r.rad / out.r.mid);
  if (!(rho <= kMaxRowRelativeRadius)) return out;
  out.rho = rho;
  out.kappa = up(kU + rho * (1 + 2 * kU) + kU * (1 + rho) * (1 + 2 * kU));
  out.zeta = up(mu_r * (out.r.mid + out.r.rad));
  return out;
}

/// The VJP's per-row constants: rad(dx_j) <= up(u |dx_j| + c1 |b_j| + c2 |g_j| + c3 |z_j| + c4).
struct DxBound {
  double mean_g = 0, mean_zg = 0, c1 = HUGE_VAL, c2 = HUGE_VAL, c3 = HUGE_VAL, c4 = HUGE_VAL;
};

/// `g_exact`: every g = fl(gamma dy) is exact (narrow inputs).
DxBound dx_bound(const Sum2& sum_g, const Sum2& sum_zg, int64_t n, double sum_factor, const RowNormal& rn, double z_max, bool g_exact) {
  DxBound b;
  const double nd = static_cast<double>(n);
  b.mean_g = sum_g.value() / nd;  // the ball's total(sum_g) / n_real
  b.mean_zg = sum_zg.value() / nd;
  if (!(rn.kappa < HUGE_VAL)) return b;
  const double kappa = rn.kappa, zeta = rn.zeta, a_g = sum_g.abs_sum(), a_p = sum_zg.abs_sum();
  const double f = abs_sum_factor(n);  // sum_j |t_j| <= f A for a row's plain sum A of |t_j|
  // The terms' own roundings, u |g| + eta / 2 each, unless g is exact.
  const double e_sg = g_exact ? sum_g.error(sum_factor) : up(sum_g.error(sum_factor) + kU * f * a_g + nd * kEta);
  const double e_mg = up(kU * std::fabs(b.mean_g) + kEta + e_sg / nd);
  // Section 18.2's E_Szg: each product off by its own roundings (c_theta: fl(x - mu_m), fl(. r_m),
  // fl(z g), and g's unless exact) and underflow, then the common factors r_m against r (rho, times the
  // exact sum) and mu_m against mu (zeta, times the exact sum of g).
  const double c_theta = up(f * gamma_ratio_up(g_exact ? 3 : 4));
  const double under = up(2 * kEta * (f * a_g + nd * (z_max + 2)));
  const double e_szg = with_common_factor(up(sum_zg.error(sum_factor) + c_theta * a_p + zeta * up(std::fabs(sum_g.value()) + e_sg) + under),
                                          rn.rho, std::fabs(sum_zg.value()));
  const double e_mzg = up(kU * std::fabs(b.mean_zg) + kEta + e_szg / nd);
  const double r_m = rn.r.mid, r_r = rn.r.rad, big_r = up(r_m + r_r), mg = std::fabs(b.mean_g), mzg = std::fabs(b.mean_zg);
  b.c1 = up(r_r + big_r * kU);
  b.c2 = up(big_r * kU * (2 + 2 * kU));
  // Every factor of big_r is bounded above by up() first: a product that underflowed and was then
  // multiplied by R > 1 would lose R times its rounding's absolute error, which no final up() covers.
  b.c3 = up(big_r * up(e_mzg + (mzg + e_mzg) * kappa + kU * (1 + 2 * kU) * mzg));
  b.c4 = up(big_r * up(kU * (1 + 2 * kU) * mg + e_mg + 2 * kEta + up((mzg + e_mzg) * (zeta + kEta))) + kEta);
  return b;
}

}  // namespace

CertifiedLayerNorm evaluate_layernorm_a_priori(const LayerNormCase& c, bool with_vjp) {
  CertifiedLayerNorm out;
  out.precision_bits = 53;
  const int64_t n = c.n, rows = c.rows;
  const double row_factor = sum2_factor(n), column_factor = sum2_factor(rows);
  const double y_eta = up(kEta * (1 + max_abs(c.gamma)));
  // y and dx are certified row by row, from one row's balls (still in cache).
  std::vector<Ball> y(static_cast<size_t>(n)), dx(with_vjp ? y.size() : 0), mean(static_cast<size_t>(rows)), var(mean.size()), rstd(mean.size());
  out.y.reserve(c.x.size());
  out.dx.reserve(with_vjp ? c.x.size() : 0);
  std::vector<double> z(static_cast<size_t>(n)), g(z.size());
  std::vector<Sum2> dgamma_sums(with_vjp ? z.size() : 0), dbeta_sums(dgamma_sums.size());
  const bool g_exact = with_vjp && narrow(c.gamma) && narrow(c.dy);  // section 18.2: g = gamma dy exact
  double mu = 0, zeta_max = 0;  // over rows: |fl(dy z) - dy z| <= mu |fl(dy z)| + |dy| (zeta + eta) + eta
  for (int64_t i = 0; i < rows; ++i) {
    const size_t base = static_cast<size_t>(i * n);
    const double* x = &c.x[base];
    const RowNormal rn = row_normal(x, n, c.eps, row_factor);
    mean[static_cast<size_t>(i)] = rn.mean;
    var[static_cast<size_t>(i)] = rn.var;
    rstd[static_cast<size_t>(i)] = rn.r;
    const double mu_m = rn.mean.mid, r_m = rn.r.mid, alpha = up(kU + rn.kappa * (1 + 2 * kU)), zeta = rn.zeta;
    mu = std::max(mu, alpha);
    zeta_max = std::max(zeta_max, zeta);
    for (int64_t j = 0; j < n; ++j) {
      z[j] = (x[j] - mu_m) * r_m;  // layernorm_z: (Real(x) - mean) * rstd
      const double p = c.gamma[j] * z[j], yj = p + c.beta[j];  // layernorm_affine: Real(gamma) * z + Real(beta)
      const double rad = c.gamma[j] == 0 ? 0.0  // the ball's exact-zero product: y = beta exactly
                                         : up(kU * std::fabs(yj) + alpha * std::fabs(p) + zeta * std::fabs(c.gamma[j]) + y_eta);
      y[j] = Ball(yj, rad);
    }
    detail::certify_into(y.data(), y.size(), c.dtype, out.y, out);
    if (!with_vjp) continue;
    const double* dy = &c.dy[base];
    Sum2 sum_g, sum_zg;
    double z_max = 0;
    for (int64_t j = 0; j < n; ++j) {
      g[j] = c.gamma[j] * dy[j];  // layernorm_vjp_normalized: Real(gamma) * dy
      sum_g.add(g[j]);
      sum_zg.add(z[j] * g[j]);
      dgamma_sums[j].add(dy[j] * z[j]);
      dbeta_sums[j].add(dy[j]);
      z_max = std::max(z_max, std::fabs(z[j]));
    }
    const DxBound b = dx_bound(sum_g, sum_zg, n, row_factor, rn, z_max, g_exact);
    for (int64_t j = 0; j < n; ++j) {
      const double a = g[j] - b.mean_g, w = z[j] * b.mean_zg, bj = a - w, dxj = r_m * bj;  // r * (g - mean_g - z * mean_zg)
      dx[j] = Ball(dxj, up(kU * std::fabs(dxj) + b.c1 * std::fabs(bj) + b.c2 * std::fabs(g[j]) + b.c3 * std::fabs(z[j]) + b.c4));
    }
    detail::certify_into(dx.data(), dx.size(), c.dtype, out.dx, out);
  }
  detail::mids(mean, out.mean, out.mean_rad);
  detail::mids(var, out.var, out.var_rad);
  detail::mids(rstd, out.rstd, out.rstd_rad);
  if (with_vjp) {
    std::vector<Ball> dgamma(dgamma_sums.size()), dbeta(dgamma.size());
    const double n_eta = static_cast<double>(rows) * kEta, f = abs_sum_factor(rows);
    const double f_mu = up(f * mu), f_zeta = up(f * (zeta_max + kEta));  // sum |q| <= f A_q, sum |dy| <= f A_dy
    for (size_t j = 0; j < dgamma.size(); ++j) {
      const double a_q = dgamma_sums[j].abs_sum(), a_dy = dbeta_sums[j].abs_sum();
      dgamma[j] = Ball(dgamma_sums[j].value(),
                       up(dgamma_sums[j].error(column_factor) + f_mu * a_q + f_zeta * a_dy + n_eta));
      dbeta[j] = Ball(dbeta_sums[j].value(), dbeta_sums[j].error(column_factor));  // exact terms
    }
    out.dgamma = detail::certify_all(dgamma, c.dtype, out);
    out.dbeta = detail::certify_all(dbeta, c.dtype, out);
  }
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

}  // namespace normcheck::oracle
