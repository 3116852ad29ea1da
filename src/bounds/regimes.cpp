// Regime classification and overflow prediction (docs/bounds.md section 5).
#include "bounds/bounds_model.hpp"

namespace normcheck {

std::vector<std::string> regime_names(uint8_t flags) {
  std::vector<std::string> out;
  if (flags & kRegimeCancellation) out.emplace_back("cancellation");
  if (flags & kRegimeOverflow) out.emplace_back("overflow");
  if (flags & kRegimeUnderflow) out.emplace_back("underflow");
  if (flags & kRegimeEpsVanishes) out.emplace_back("eps_vanishes");
  return out;
}

namespace bounds_detail {
namespace {

/// Welford's largest intermediate: the M2 partial sums of (x_k - m_{k-1})(x_k - m_k) and the
/// differences themselves, with running means recomputed in double (error <= 3 k 2^-53 max|x|).
double welford_bound(const double* x, int64_t n, double e_mu, const Units& u) {
  double max_abs = 0, m_prev = 0, s = 0, biggest = 0;
  for (int64_t k = 0; k < n; ++k) max_abs = std::max(max_abs, std::fabs(x[k]));
  for (int64_t k = 0; k < n; ++k) {
    const double m_k = m_prev + (x[k] - m_prev) / static_cast<double>(k + 1);
    const double slack = 3.0 * static_cast<double>(k + 2) * 0x1p-53 * max_abs + e_mu;
    const double a = (std::fabs(x[k]) + std::fabs(m_prev) + slack) * (1 + u.ua);
    const double b = (std::fabs(x[k]) + std::fabs(m_k) + slack) * (1 + u.ua);
    s += std::fabs(x[k] - m_prev) * std::fabs(x[k] - m_k) + a * slack + b * slack + slack * slack;
    biggest = std::max(biggest, a);
    m_prev = m_k;
  }
  return std::max(biggest, s * growth(static_cast<double>(n + 1), u.ua));
}

/// Largest partial sum of squares (or other intermediate) the statistics pass can form.
double squares_bound(const LayerNormCase& c, int64_t row, const RowError& r, const BoundModel& m, const Units& u) {
  const double* x = &c.x[static_cast<size_t>(row * c.n)];
  if (m.stats == StatsModel::welford) return welford_bound(x, c.n, r.e_mu, u);
  if (m.stats == StatsModel::welford_merge) return welford_merge_intermediates(x, c.n, r, u);
  const double nn = static_cast<double>(c.n);
  double s1 = 0;
  for (int64_t j = 0; j < c.n; ++j) s1 += std::fabs(x[j]);
  // |mu_hat| <= S1 (1+u)^(n+1) / n even where the error bound e_mu is void.
  const double mu_hat = s1 * growth(nn + 1, u.ua) / nn;
  double s = 0;
  for (int64_t j = 0; j < c.n; ++j) {
    const double d_hat = m.stats == StatsModel::two_pass || m.stats == StatsModel::op_by_op ? std::min(r.d_abs[j] + r.e_d[j], (std::fabs(x[j]) + mu_hat) * (1 + u.ua))
                                                         : std::fabs(x[j]);
    s += d_hat * d_hat;
  }
  return s * growth(nn + 1, u.ua);
}

bool has_subnormal(const double* x, int64_t n, double min_normal) {
  for (int64_t j = 0; j < n; ++j)
    if (x[j] != 0 && std::fabs(x[j]) < min_normal) return true;
  return false;
}

}  // namespace

/// eps_hat itself, or fl(v_hat + eps_hat), may overflow: then r_hat = 0 and the kernel's output
/// collapses to beta (eps = 2^128 in f32, or eps = 3e38 with v = 2^126). fl(v_hat + eps_hat) is
/// +-inf exactly when v_hat + eps_hat reaches the accumulator's overflow threshold, and v_hat is at
/// most v + e_v: an eps at the largest finite value with a small variance does not overflow (issue
/// 42: such rows had void bounds, and an RMSNorm returning y = 0 there passed).
bool variance_plus_eps_overflows(double v, double e_v, double eps_hat, const Units& u) {
  if (!std::isfinite(eps_hat)) return true;
  const double v_hat = (v + e_v * kEvaluationSlack) * (1 + 0x1p-52);  // an upper bound of v_hat despite the roundings here
  return std::isfinite(e_v) && !(v_hat + eps_hat < overflow_threshold(u));
}

uint8_t row_regime(const LayerNormCase& c, int64_t row, const RowError& r, const BoundModel& m, const Units& u) {
  const double* x = &c.x[static_cast<size_t>(row * c.n)];
  const double mu = std::fabs(r.mu);
  uint8_t flags = 0;
  double s1 = 0;
  for (int64_t j = 0; j < c.n; ++j) s1 += std::fabs(x[j]);
  const double eps_hat = round_to_dtype(c.eps, m.accum);
  if (eps_hat == 0) flags |= kRegimeEpsVanishes;
  const bool void_rstd = !(r.delta_r < kInf);  // the computed v_hat + eps may be 0: rsqrt(0) = inf
  if (s1 * growth(static_cast<double>(c.n), u.ua) >= u.max_a || squares_bound(c, row, r, m, u) >= u.max_a ||
      (void_rstd && (flags & kRegimeEpsVanishes)) || (!void_rstd && r.rstd * (1 + r.delta_r) >= u.max_a) ||
      variance_plus_eps_overflows(r.v, r.e_v, eps_hat, u))
    flags |= kRegimeOverflow;
  if (void_rstd) flags |= kRegimeCancellation;  // the statistics are not resolved: no guarantee
  const double min_normal_a = dtype_info(m.accum).min_normal;
  if (has_subnormal(x, c.n, dtype_info(c.dtype).min_normal) || (r.v > 0 && r.v < min_normal_a))
    flags |= kRegimeUnderflow;
  // kappa = sqrt(1 + mu^2 / v) >= 100 (Chan, Golub, LeVeque's condition number of the variance).
  if (mu > 0 && (r.v == 0 || mu * mu >= 1e4 * r.v)) flags |= kRegimeCancellation;
  return flags;
}

uint8_t output_regime(double value_abs, double magnitude, DType storage) {
  uint8_t flags = 0;
  if (value_abs * 64 < magnitude) flags |= kRegimeCancellation;
  if (value_abs > 0 && value_abs < dtype_info(storage).min_normal) flags |= kRegimeUnderflow;
  return flags;
}

}  // namespace bounds_detail
}  // namespace normcheck
