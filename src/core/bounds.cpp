#include "core/bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace normcheck {
namespace {

/// Slack for the double rounding of the bound's own sums of nonnegative terms (at most
/// (n + 8) 2^-53 < 1e-11 relative for n <= 2^20; docs/bounds.md section 1.4). Quantities that
/// come from the oracle or suffer cancellation are inflated explicitly instead (kRel below).
constexpr double kEvaluationSlack = 1.0 + 1e-6;
/// Relative inflation turning a nearest-double oracle statistic into an upper bound (its
/// rounding 2^-53 plus the certified radius, far below 2^-60 relative).
constexpr double kRel = 0x1p-50;

struct Units {
  double us, ua;    ///< unit roundoffs of storage and accumulator
  double eta_s, eta_a;  ///< half the subnormal spacing: absolute error of a rounding in underflow
  bool store_rounds;    ///< the final conversion Accum -> Storage rounds
};

/// Half the subnormal spacing of a dtype; for f64 that is 2^-1075, which double cannot hold, so
/// it is rounded up to 2^-1074 (the bound stays rigorous, 2x loose in the f64 underflow range).
double half_spacing(const DTypeInfo& d) {
  return std::max(0.5 * d.denorm_min, std::numeric_limits<double>::denorm_min());
}

Units units_of(const BoundModel& m) {
  const DTypeInfo& s = dtype_info(m.storage);
  const DTypeInfo& a = dtype_info(m.accum);
  return {s.unit_roundoff, a.unit_roundoff, half_spacing(s), half_spacing(a), m.storage != m.accum};
}

/// Error model of one row's statistics (section 2.1 and 2.2 of docs/bounds.md).
struct RowError {
  double e_mu;     ///< |mu_hat - mu|
  double e_v;      ///< |v_hat - v|
  double delta_r;  ///< |r_hat - r| / r
  double rstd;     ///< upper bound of the exact r
  std::vector<double> d;      ///< d_j = x_j - mu, nearest double (signed, for cancelling sums)
  std::vector<double> d_abs;  ///< upper bound of |x_j - mu|
  std::vector<double> e_d;    ///< bound of |d_hat_j - d_j|
};

/// Relative error of dividing by k in floating point: 0 when k is a power of two (exact).
double division_error(int64_t k, double u) { return (k & (k - 1)) == 0 ? 0.0 : u; }

double row_mean_error_two_pass(const double* x, int64_t n, const Units& u) {
  double s1 = 0;
  for (int64_t j = 0; j < n; ++j) s1 += std::fabs(x[j]);
  // n - 1 additions, then one division by n.
  const double g = gamma_k(static_cast<double>(n - 1), u.ua);
  return (g * s1 + division_error(n, u.ua) * (1 + g) * s1) / static_cast<double>(n) + u.eta_a;
}

double row_mean_error_welford(const double* x, int64_t n, const Units& u) {
  double m = 0, harmonic = 0;
  for (int64_t j = 0; j < n; ++j) {
    m = std::max(m, std::fabs(x[j]));
    harmonic += 1.0 / static_cast<double>(j + 1);
  }
  // The first step is exact (mean = 0 + (x_1 - 0) / 1); each later step rounds three times.
  const double c = static_cast<double>(n - 1) * u.ua + 2.0 * (2.0 * u.ua + u.ua * u.ua) * (harmonic - 1.0);
  if (c >= 1) return std::numeric_limits<double>::infinity();
  return (c * m + static_cast<double>(n) * u.eta_a) / (1 - c);
}

/// Two-pass: sum_j d_j = 0 exactly, so the mean error enters v only at second order.
double variance_error_two_pass(const RowError& r, double v, int64_t n, const Units& u) {
  double lin = 0, quad = 0;
  for (int64_t j = 0; j < n; ++j) {
    lin += 2 * r.d_abs[j] * u.ua * (r.d_abs[j] + r.e_mu);
    quad += r.e_d[j] * r.e_d[j];
  }
  const double e2 = (lin + quad) / static_cast<double>(n);
  return e2 + gamma_k(static_cast<double>(n + 1), u.ua) * (v + e2) + u.eta_a * static_cast<double>(n);
}

/// Welford: M2 = sum_k (x_k - m_{k-1})(x_k - m_k) with running means m_k. The running means are
/// recomputed here in double, with error at most 3 k 2^-53 max|x|, added to |a_k| and |b_k|.
double variance_error_welford(const double* x, int64_t n, double e_mu, const Units& u) {
  double m_prev = 0, acc = 0, mag = 0, max_abs = 0;
  for (int64_t k = 0; k < n; ++k) max_abs = std::max(max_abs, std::fabs(x[k]));
  for (int64_t k = 0; k < n; ++k) {
    const double m_k = m_prev + (x[k] - m_prev) / static_cast<double>(k + 1);
    const double slack = 3.0 * static_cast<double>(k + 2) * 0x1p-53 * max_abs;
    const double a = std::fabs(x[k] - m_prev) * (1 + 0x1p-52) + slack;
    const double b = std::fabs(x[k] - m_k) * (1 + 0x1p-52) + slack;
    const double ea = e_mu + u.ua * (a + e_mu), eb = e_mu + u.ua * (b + e_mu);
    acc += a * eb + b * ea + ea * eb + u.ua * (a + ea) * (b + eb);
    mag += (a + ea) * (b + eb);
    m_prev = m_k;
  }
  const double nn = static_cast<double>(n);
  return (acc + gamma_k(nn + 1, u.ua) * mag) / nn + u.eta_a * nn;
}

/// Relative error of r_hat = 1 / sqrt(fl(v_hat + eps_hat)) (section 2.3).
double rstd_relative_error(double v, double e_v, double eps, const Units& u) {
  const double w = (v + eps) * (1 + kRel), w_low = (v + eps) * (1 - kRel);
  const double e_w = e_v + u.ua * eps + 2 * u.eta_a + u.ua * (w + e_v + u.ua * eps);
  const double delta = e_w / w_low;
  if (!(delta < 1)) return std::numeric_limits<double>::infinity();
  const double a = delta / (2 * std::pow(1 - delta, 1.5));
  return a + (1 + a) * 2 * u.ua / (1 - u.ua);
}

RowError row_error(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i,
                   const BoundModel& m, const Units& u) {
  const double* x = &c.x[static_cast<size_t>(i * c.n)];
  const double mu = ref.mean[i], v = ref.var[i] * (1 + kRel);
  RowError r;
  r.rstd = ref.rstd[i] * (1 + kRel);
  r.e_mu = m.stats == StatsModel::two_pass ? row_mean_error_two_pass(x, c.n, u)
                                            : row_mean_error_welford(x, c.n, u);
  r.d.resize(static_cast<size_t>(c.n));
  r.d_abs.resize(static_cast<size_t>(c.n));
  r.e_d.resize(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) {
    r.d[j] = x[j] - mu;
    // |x - mu_exact| <= |fl(x - mu)| (1 + 2^-52) + |mu - mu_exact|, the latter below kRel |mu|.
    r.d_abs[j] = std::fabs(r.d[j]) * (1 + 0x1p-52) + kRel * std::fabs(mu);
    r.e_d[j] = r.e_mu + u.ua * (r.d_abs[j] + r.e_mu);
  }
  r.e_v = m.stats == StatsModel::two_pass ? variance_error_two_pass(r, v, c.n, u)
                                           : variance_error_welford(x, c.n, r.e_mu, u);
  r.delta_r = rstd_relative_error(v, r.e_v, c.eps, u);
  return r;
}

/// Adds the Accum -> Storage store rounding to an accumulated-value error bound.
double with_store(double exact_abs, double err, const Units& u) {
  if (std::isnan(err)) return std::numeric_limits<double>::infinity();  // 0 * inf: void bound
  const double stored = u.store_rounds ? err + u.us * (exact_abs + err) + u.eta_s : err;
  return stored * kEvaluationSlack;
}

/// |z_hat - z| for z_hat = fl(d_hat * r_hat).
double normalized_error(const RowError& r, int64_t j, const Units& u) {
  const double z = r.d_abs[j] * r.rstd;
  return r.rstd * (r.d_abs[j] * r.delta_r + r.e_d[j] * (1 + r.delta_r)) * (1 + u.ua) + u.ua * z + u.eta_a;
}

/// Upper bound of |oracle value| from its nearest double.
double upper_abs(const CertifiedValue& v) { return std::fabs(v.approx()) * (1 + kRel); }

}  // namespace

double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
}

std::vector<double> layernorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                            const BoundModel& m) {
  const Units u = units_of(m);
  const double g2 = gamma_k(2, u.ua);
  std::vector<double> bound(c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    const double rstd = r.rstd;
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const double ga = std::fabs(c.gamma[j]);
      const double t = ga * r.d_abs[j] * rstd;
      const double e_t = ga * rstd * (r.d_abs[j] * r.delta_r + r.e_d[j] * (1 + r.delta_r)) * (1 + g2) +
                         g2 * t + u.eta_a * (1 + ga * (1 + g2));  // underflow of d*r, scaled by gamma
      const double y = upper_abs(ref.y[k]);
      const double e_s = e_t * (1 + u.ua) + u.ua * y + u.eta_a;
      bound[k] = with_store(y, e_s, u);
    }
  }
  return bound;
}

BackwardBound layernorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                       const BoundModel& m) {
  const Units u = units_of(m);
  const double nn = static_cast<double>(c.n);
  const double gn = gamma_k(nn, u.ua), gm = gamma_k(static_cast<double>(c.rows), u.ua);
  BackwardBound out;
  out.dx.resize(c.x.size());
  std::vector<double> dg_err(static_cast<size_t>(c.n), 0.0), dg_mag(static_cast<size_t>(c.n), 0.0);
  std::vector<double> db_mag(static_cast<size_t>(c.n), 0.0);
  std::vector<double> z(static_cast<size_t>(c.n)), za(static_cast<size_t>(c.n)), ez(static_cast<size_t>(c.n));
  std::vector<double> dz(static_cast<size_t>(c.n));
  std::vector<double> g(static_cast<size_t>(c.n));
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    const double rstd = r.rstd;
    const size_t base = static_cast<size_t>(i * c.n);
    double sum_g = 0, sum_abs_g = 0, sum_eg = 0, sum_gz = 0, sum_abs_gz = 0, sum_g_dz = 0, acc_b = 0, mag_b = 0;
    for (int64_t j = 0; j < c.n; ++j) {
      const double dy = c.dy[base + j];
      z[j] = r.d[j] * ref.rstd[i];  // signed, nearest: only in the cancelling sums below
      za[j] = r.d_abs[j] * rstd;
      dz[j] = (r.d_abs[j] - std::fabs(r.d[j])) * rstd + std::fabs(z[j]) * kRel;  // |z_j - z_exact|
      ez[j] = normalized_error(r, j, u);
      g[j] = dy * c.gamma[j];
      const double eg = u.ua * std::fabs(g[j]) + u.eta_a;
      sum_g += g[j];
      sum_abs_g += std::fabs(g[j]) + eg;
      sum_eg += eg;
      sum_gz += g[j] * z[j];
      sum_abs_gz += std::fabs(g[j]) * za[j];
      sum_g_dz += std::fabs(g[j]) * dz[j];
      acc_b += std::fabs(g[j]) * ez[j] + za[j] * eg + eg * ez[j] +
               u.ua * (std::fabs(g[j]) + eg) * (za[j] + ez[j]) + u.eta_a;
      mag_b += (std::fabs(g[j]) + eg) * (za[j] + ez[j]);
      dg_err[j] += std::fabs(dy) * ez[j];
      dg_mag[j] += std::fabs(dy) * (za[j] + ez[j]);
      db_mag[j] += std::fabs(dy);
    }
    // The exact A = mean(g) and B = mean(g z) are evaluated here in double: bound that evaluation.
    const double mean_g = sum_g / nn, mean_gz = sum_gz / nn;
    const double e_mg = (nn + 1) * 0x1p-53 * sum_abs_g / nn;
    const double e_mgz = sum_g_dz / nn + (nn + 2) * 0x1p-53 * sum_abs_gz / nn;
    const double mg_abs = std::fabs(mean_g) + e_mg, mgz_abs = std::fabs(mean_gz) + e_mgz;
    // A = fl(sum g_hat) / n: the products' errors, the sum's gamma_n (n - 1 additions and the
    // division); B sums rounded products g_hat * z_hat, so gamma_{n+1}.
    const double e_a = (sum_eg + gn * sum_abs_g) / nn + u.eta_a;
    const double e_b = (acc_b + gamma_k(nn + 1, u.ua) * mag_b) / nn + u.eta_a;
    for (int64_t j = 0; j < c.n; ++j) {
      const double eg = u.ua * std::fabs(g[j]) + u.eta_a;
      const double q1 = std::fabs(g[j] - mean_g) + e_mg + 0x1p-52 * (std::fabs(g[j]) + mg_abs);
      const double e_q1 = eg + e_a + u.ua * (q1 + eg + e_a) + u.eta_a;
      const double e_q2 = za[j] * e_b + mgz_abs * ez[j] + ez[j] * e_b + u.ua * (za[j] + ez[j]) * (mgz_abs + e_b) +
                          u.eta_a;
      // Upper bound of the exact |g - A - z B| from its double evaluation.
      const double cj = std::fabs(g[j] - mean_g - z[j] * mean_gz) + e_mg + dz[j] * mgz_abs +
                        std::fabs(z[j]) * e_mgz + 4 * 0x1p-53 * (std::fabs(g[j]) + mg_abs + za[j] * mgz_abs);
      const double e_c = e_q1 + e_q2 + u.ua * (cj + e_q1 + e_q2) + u.eta_a;
      const double dx = upper_abs(ref.dx[base + j]);
      const double e = rstd * (cj * r.delta_r + e_c * (1 + r.delta_r)) * (1 + u.ua) + u.ua * dx + u.eta_a;
      out.dx[base + j] = with_store(dx, e, u);
    }
  }
  out.dgamma.resize(static_cast<size_t>(c.n));
  out.dbeta.resize(static_cast<size_t>(c.n));
  const double rows = static_cast<double>(c.rows);
  for (int64_t j = 0; j < c.n; ++j) {
    const double e_g = dg_err[j] * (1 + u.ua) + gm * dg_mag[j] + rows * u.eta_a;
    out.dgamma[j] = with_store(upper_abs(ref.dgamma[j]), e_g, u);
    const double e_b = gamma_k(rows - 1, u.ua) * db_mag[j] + rows * u.eta_a;
    out.dbeta[j] = with_store(upper_abs(ref.dbeta[j]), e_b, u);
  }
  return out;
}

}  // namespace normcheck
