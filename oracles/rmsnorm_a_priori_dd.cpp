// The a priori double-double level of the RMSNorm oracle (docs/bounds.md section 18.3), the first
// 106-bit level of the cascade: tried before the double-double ball for f64 outputs and for the f16,
// bf16 and f32 outputs both 53-bit levels leave. Double-double midpoints by Dekker's product and
// TwoSum without a running radius (oracles/dd_a_priori.hpp); every radius comes from a formula
// whose constants are derived once per row (the row's reciprocal RMS as a double-double ball). Rows
// whose magnitudes could make a product inexact (section 18.3's tame test) get infinite radii and go
// on to the double-double ball. Its midpoints are not the double-double ball's (other algorithms);
// its enclosures are what the tests compare.
#include <boost/multiprecision/mpfi.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "oracles/dd_a_priori.hpp"
#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {
namespace {

using namespace dd_a_priori;

constexpr double kU2 = kU * kU;
/// Rows whose reciprocal RMS is wider than this (relative) are left to the double-double ball: a
/// f64 output needs about 2^-62.
constexpr double kMaxRowRelativeRadius = 0x1p-60;

/// The row's statistics as double-double balls and the constants of section 18.3: |z_hat - z| <=
/// kappa |z_hat.h| + 3 eta for z_hat = mul(r, x); |y_hat - y| <= alpha |y_hat.h| + eta (3 + 3G).
/// ok is false for a row left to the double-double ball (every radius infinite).
struct RowScale {
  DdBall ms, r;
  Dd rm;
  double kappa = kInf, alpha = kInf;
  bool ok = false;
};

RowScale row_scale(const double* x, int64_t n, double eps, double sum_factor, bool gain_tame) {
  DdSum s;
  bool ok = gain_tame;
  for (int64_t j = 0; j < n; ++j) {
    ok &= tame(x[j]);
    s.add(two_prod(x[j], x[j]));  // exact for tame x: x^2 is 0 or within [2^-240, 2^240]
  }
  const Dd v = s.value();
  RowScale out;
  // mean_of_squares and rms_reciprocal_of's formulas, as double-double balls.
  out.ms = DdBall(v.h, v.l, ok ? s.error(sum_factor) : kInf) / DdBall(static_cast<double>(n));
  out.r = DdBall(1) / sqrt(out.ms + DdBall(eps));
  out.rm = {out.r.hi, out.r.lo};
  if (!ok || !out.r.bounded() || !(out.r.hi > 0) || !tame(out.r.hi)) return out;
  const double rho = up(out.r.rad / ball_detail::down(std::fabs(out.r.hi) - std::fabs(out.r.lo)));  // >= r_r / |R|
  if (!(rho <= kMaxRowRelativeRadius)) return out;
  out.kappa = up(4 * kU2 + rho * (1 + 2 * kU));
  out.alpha = up(4 * kU2 + out.kappa * (1 + 5 * kU));
  out.ok = true;
  return out;
}

/// y = g * (r x) as a ball: exactly 0 when the input x or g is 0 (a computed z of 0 is not: r x
/// underflows in rows outside the level's premises, where every radius is infinite).
DdBall y_ball(const RowScale& rs, double x, const Dd& z, double g, double y_eta) {
  if (x == 0 || g == 0) return DdBall(0);
  const Dd y = mul(z, g);
  return {y.h, y.l, rs.ok ? up(rs.alpha * std::fabs(y.h) + y_eta) : kInf};
}

/// The VJP's row constants: rad(dx) <= up(9u^2 |dx.h| + c1 |d.h| + c2 |v.h| + c3 |w.h| + c4 |z.h| + c5)
/// with w = z m, d = v - w (section 18.3).
struct DxBound {
  Dd m;
  double c1 = kInf, c2 = kInf, c3 = kInf, c4 = kInf, c5 = kInf;
  bool ok = false;
  bool inputs_tame = false;  ///< the row and its cotangent are tame (what its dgamma terms need)
};

/// The products v = g dy (exact), z = r x and their row sum of v z, and the row's DxBound. Adds
/// dy z to `columns` when given.
DxBound vjp_row(const RowScale& rs, const double* x, const double* g, const double* dy, int64_t n, double sum_factor,
                std::vector<Dd>& z, std::vector<Dd>& v, DdSum* columns) {
  DdSum s;
  bool ok = rs.ok;
  double v_max = 0;
  for (int64_t j = 0; j < n; ++j) {
    ok &= tame(dy[j]);
    z[j] = mul(rs.rm, x[j]);
    v[j] = two_prod(g[j], dy[j]);
    s.add(mul(v[j], z[j]));
    v_max = std::max(v_max, std::fabs(v[j].h));
    if (columns != nullptr) columns[j].add(mul(z[j], dy[j]));
  }
  DxBound b;
  b.inputs_tame = ok;
  const double nd = static_cast<double>(n), a = s.abs_sum();
  const double lambda = up(9 * kU2 + rs.kappa * (1 + 8 * kU));  // |w - v z| <= lambda |w.h| + eta (3 + 3V)
  const double big_v = up(v_max * (1 + kU));
  const double e_s = ok ? up(s.error(sum_factor) + up(lambda * a_priori::abs_sum_factor(n)) * a + nd * kEta * (3 + 3 * big_v)) : kInf;
  const Dd sum = s.value();
  const DdBall m = DdBall(sum.h, sum.l, e_s) / DdBall(nd);
  b.m = {m.hi, m.lo};
  if (!ok || !m.bounded() || !(m.hi == 0 || std::fabs(m.hi) >= 0x1p-400)) return b;
  const double r_r = rs.r.rad, big_r = up(std::fabs(rs.r.hi) * (1 + kU) + r_r), big_m = up(std::fabs(m.hi) * (1 + kU));
  const double e_m = m.rad;
  b.c1 = up(r_r * (1 + kU));
  b.c2 = up(4 * kU2 * big_r);
  b.c3 = up(13 * kU2 * big_r);
  // Every factor of big_r is bounded above by up() first (an underflowed product times R > 1 would
  // lose R times its rounding's absolute error).
  b.c4 = up(big_r * up((1 + kU) * e_m + (big_m + e_m) * rs.kappa));
  b.c5 = up(2 * kEta + big_r * up(2 * kEta + 3 * kEta * (big_m + e_m)));
  b.ok = true;
  return b;
}

/// dx = r (v - z m) as a ball.
DdBall dx_ball(const RowScale& rs, const DxBound& b, const Dd& v, const Dd& z) {
  const Dd w = mul(z, b.m), d = add(v, neg(w)), dx = mul(rs.rm, d);
  // R d's Dekker product is exact when d is 0 or at least 2^-700 (|R| >= 2^-120).
  const bool ok = b.ok && (d.h == 0 || std::fabs(d.h) >= 0x1p-700);
  const double rad = 9 * kU2 * std::fabs(dx.h) + b.c1 * std::fabs(d.h) + b.c2 * std::fabs(v.h) + b.c3 * std::fabs(w.h) +
                     b.c4 * std::fabs(z.h) + b.c5;
  return {dx.h, dx.l, ok ? up(rad) : kInf};
}

bool gain_is_tame(const std::vector<double>& g) {
  return std::all_of(g.begin(), g.end(), [](double e) { return tame(e); });
}

double y_eta_of(const std::vector<double>& g) { return up(kEta * (3 + 3 * a_priori::max_abs(g))); }

/// The row statistics of out (mean 0, var = mean(x^2), rstd = r) from the rows' balls.
void put_statistics(const std::vector<DdBall>& ms, const std::vector<DdBall>& r, CertifiedLayerNorm& out) {
  const std::vector<DdBall> zero(ms.size(), DdBall(0));
  detail::mids(zero, out.mean, out.mean_rad);
  detail::mids(ms, out.var, out.var_rad);
  detail::mids(r, out.rstd, out.rstd_rad);
}

/// dgamma_j = sum over rows of dy z: rad = up(E + f_N mu A_j + N eta (3 + 3D)), mu the rows' largest alpha.
std::vector<DdBall> column_balls(const std::vector<DdSum>& columns, int64_t rows, double mu, double dy_max) {
  const double factor = DdSum::factor(rows), f_mu = up(a_priori::abs_sum_factor(rows) * mu);
  const double q_eta = up(static_cast<double>(rows) * kEta * (3 + 3 * dy_max));
  std::vector<DdBall> out;
  out.reserve(columns.size());
  for (const DdSum& col : columns) {
    const Dd v = col.value();
    out.emplace_back(v.h, v.l, up(col.error(factor) + f_mu * col.abs_sum() + q_eta));
  }
  return out;
}

}  // namespace

CertifiedLayerNorm evaluate_rmsnorm_a_priori_dd(const LayerNormCase& c, bool with_vjp) {
  CertifiedLayerNorm out;
  out.precision_bits = 106;
  const int64_t n = c.n, rows = c.rows;
  const double row_factor = DdSum::factor(n), y_eta = y_eta_of(c.gamma);
  const bool gain_tame = gain_is_tame(c.gamma);
  std::vector<DdBall> y(static_cast<size_t>(n)), dx(with_vjp ? y.size() : 0), ms(static_cast<size_t>(rows)), rstd(ms.size());
  std::vector<Dd> z(y.size()), v(y.size());
  std::vector<DdSum> columns(with_vjp ? y.size() : 0);
  out.y.reserve(c.x.size());
  out.dx.reserve(with_vjp ? c.x.size() : 0);
  double mu = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const size_t base = static_cast<size_t>(i * n);
    const RowScale rs = row_scale(&c.x[base], n, c.eps, row_factor, gain_tame);
    ms[static_cast<size_t>(i)] = rs.ms;
    rstd[static_cast<size_t>(i)] = rs.r;
    if (!with_vjp)
      for (int64_t j = 0; j < n; ++j) z[j] = mul(rs.rm, c.x[base + j]);
    else {
      const DxBound b = vjp_row(rs, &c.x[base], c.gamma.data(), &c.dy[base], n, row_factor, z, v, columns.data());
      mu = std::max(mu, b.inputs_tame ? rs.alpha : kInf);
      for (int64_t j = 0; j < n; ++j) dx[j] = dx_ball(rs, b, v[j], z[j]);
      detail::certify_into(dx.data(), dx.size(), c.dtype, out.dx, out);
    }
    for (int64_t j = 0; j < n; ++j) y[j] = y_ball(rs, c.x[base + j], z[j], c.gamma[j], y_eta);
    detail::certify_into(y.data(), y.size(), c.dtype, out.y, out);
  }
  put_statistics(ms, rstd, out);
  if (with_vjp) out.dgamma = detail::certify_all(column_balls(columns, rows, mu, a_priori::max_abs(c.dy)), c.dtype, out);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

CertifiedLayerNorm evaluate_rmsnorm_outputs_a_priori_dd(const LayerNormCase& c, const std::vector<int64_t>& ys,
                                                       const std::vector<int64_t>& dxs) {
  CertifiedLayerNorm out;
  out.precision_bits = 106;
  const int64_t n = c.n, rows = c.rows;
  const double row_factor = DdSum::factor(n), y_eta = y_eta_of(c.gamma);
  const bool gain_tame = gain_is_tame(c.gamma);
  std::vector<RowScale> scales;
  std::vector<DdBall> ms, rstd, y, dx;
  for (int64_t i = 0; i < rows; ++i) {
    scales.push_back(row_scale(&c.x[static_cast<size_t>(i * n)], n, c.eps, row_factor, gain_tame));
    ms.push_back(scales.back().ms);
    rstd.push_back(scales.back().r);
  }
  for (const int64_t k : ys) {
    const RowScale& rs = scales[static_cast<size_t>(k / n)];
    y.push_back(y_ball(rs, c.x[k], mul(rs.rm, c.x[k]), c.gamma[k % n], y_eta));
  }
  std::vector<Dd> z(static_cast<size_t>(n)), v(z.size());
  for (size_t next = 0; next < dxs.size();) {  // a row's whole VJP pass, then its wanted outputs
    const int64_t i = dxs[next] / n;
    const size_t base = static_cast<size_t>(i * n);
    const RowScale& rs = scales[static_cast<size_t>(i)];
    const DxBound b = vjp_row(rs, &c.x[base], c.gamma.data(), &c.dy[base], n, row_factor, z, v, nullptr);
    for (; next < dxs.size() && dxs[next] / n == i; ++next) dx.push_back(dx_ball(rs, b, v[dxs[next] % n], z[dxs[next] % n]));
  }
  out.y = detail::certify_all(y, c.dtype, out);
  out.dx = detail::certify_all(dx, c.dtype, out);
  put_statistics(ms, rstd, out);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

CertifiedLayerNorm evaluate_rmsnorm_columns_a_priori_dd(const LayerNormCase& c, const std::vector<int64_t>& cols) {
  CertifiedLayerNorm out;
  out.precision_bits = 106;
  const int64_t n = c.n, rows = c.rows;
  const double row_factor = DdSum::factor(n);
  const bool gain_tame = gain_is_tame(c.gamma);
  std::vector<DdSum> columns(cols.size());
  double mu = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const size_t base = static_cast<size_t>(i * n);
    const RowScale rs = row_scale(&c.x[base], n, c.eps, row_factor, gain_tame);
    const bool dy_tame = std::all_of(c.dy.begin() + static_cast<int64_t>(base), c.dy.begin() + static_cast<int64_t>(base) + n,
                                     [](double e) { return tame(e); });
    mu = std::max(mu, rs.ok && dy_tame ? rs.alpha : kInf);  // as vjp_row's inputs_tame in the whole evaluation
    for (size_t k = 0; k < cols.size(); ++k) {
      const size_t e = base + static_cast<size_t>(cols[k]);
      columns[k].add(mul(mul(rs.rm, c.x[e]), c.dy[e]));
    }
  }
  out.dgamma = detail::certify_all(column_balls(columns, rows, mu, a_priori::max_abs(c.dy)), c.dtype, out);
  out.certified = out.max_err_ulps <= kRequiredUlpFraction;
  return out;
}

}  // namespace normcheck::oracle
