// Envelopes (docs/bounds.md section 15): upper bounds of the values a kernel's arithmetic can
// produce, derived from the structure of the normalisation and valid in every regime, also where
// the a priori error bound is void. They judge those elements: a kernel that blows up fails.
#include "bounds/bounds_model.hpp"

namespace normcheck::bounds_detail {
namespace {

/// n as the kernel's count in the accumulator: exact up to 2^p, else rounded (relative u).
double count_upper(int64_t n, const Units& u) {
  const double nn = static_cast<double>(n);
  return nn <= 1 / u.ua ? nn : nn * (1 + u.ua);
}
double count_lower(int64_t n, const Units& u) {
  const double nn = static_cast<double>(n);
  return nn <= 1 / u.ua ? nn : nn * (1 - u.ua);
}

/// r_hat = fl(1 / fl(sqrt(fl(v_hat + eps_hat)))) <= (1+u)(1-u)^(-3/2) / sqrt(v_hat + eps_hat)
/// for v_hat >= max(a D^2 - b, 0), D a lower bound of the largest |d_hat_j| (section 15.1).
/// Evaluated without forming D^2 or v + eps, either of which may overflow: a kernel whose v_hat + eps_hat
/// overflows has r_hat = 0, but one computing in a wider type (or the exact map) has r > 0, and the
/// envelope must hold it too.
double reciprocal_upper(double a, double b, double d_low, double eps_hat, const Units& u) {
  const double s = std::sqrt(a) * d_low;  // sqrt(a D^2)
  const double t = s > 0 ? (b / s) / s : 1.0;  // b / (a D^2)
  const double root_v = t < 1 ? s * std::sqrt(1 - t) : 0.0;  // sqrt(max(a D^2 - b, 0))
  return reciprocal_root_of_sum(root_v, std::sqrt(eps_hat), u);
}

}  // namespace

bool has_envelope(const BoundModel& m) {
  if (m.stats == StatsModel::rms) return m.rms_flags == 0;
  return m.stats == StatsModel::two_pass || m.stats == StatsModel::welford || m.stats == StatsModel::welford_merge;
}

double sum_hat(double sum_abs, int64_t n, const Units& u) {
  return sum_abs * growth(static_cast<double>(std::max<int64_t>(n - 1, 0)), u.ua) * kEvaluationSlack;
}

double mean_hat(double sum_hat_value, int64_t n, const Units& u) {
  return quotient_up(sum_hat_value, count_lower(n, u)) * (1 + u.ua) * kEvaluationSlack + u.eta_a;
}

RowEnvelope row_envelope(const LayerNormCase& c, int64_t row, const BoundModel& m, const Units& u) {
  RowEnvelope env;
  const double eps_hat = round_to_dtype(c.eps, m.accum);
  if (!has_envelope(m) || !(eps_hat > 0)) return env;  // eps_hat = 0: r_hat may be +inf
  const double* x = &c.x[static_cast<size_t>(row * c.n)];
  double lo = x[0], hi = x[0];
  for (int64_t j = 1; j < c.n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  // v_hat >= a d_hat_j^2 - b for every j: one rounded square, the monotone sum of nonnegative
  // terms (any order), the rounded division by the rounded count.
  const double a = (1 - u.ua) * (1 - u.ua) / count_upper(c.n, u), b = 2 * u.eta_a;
  // x in [lo, hi]: every d = x - m with m in [lo, hi] is <= width. Halves first: hi - lo may exceed
  // the largest double (a row spanning -1e308 .. 1e308), and an infinite D would give r = 0. Halving
  // a subnormal rounds to nearest (0.5 * 2^-1074 is 0): one subnormal step up covers both halvings
  // (issue 42: the width of (-2^-1074, 2^-1074) became 0 and a sound Welford kernel failed).
  const double half_width = (0.5 * hi - 0.5 * lo) * (1 + 0x1p-52) + kEvalEta;
  const double width = 2 * half_width;
  env.valid = true;
  if (m.stats == StatsModel::welford || m.stats == StatsModel::welford_merge) {
    // The running (merged) means stay in [lo, hi]; the M2 terms are >= 0: only v_hat >= 0 is known.
    env.r = reciprocal_upper(a, b, 0.0, eps_hat, u);
    env.z.assign(static_cast<size_t>(c.n), product_hat(width * (1 + u.ua), env.r, u));
    return env;
  }
  // Two-pass and RMS: the largest |d_hat| is at least width / 2 (any centre) or max |x| (RMS).
  const double d_low = m.stats == StatsModel::rms ? std::max(std::fabs(lo), std::fabs(hi))
                                                  : std::max(0.0, (0.5 * hi - 0.5 * lo) * (1 - 0x1p-52) * (1 - u.ua) - u.eta_a);
  env.r = reciprocal_upper(a, b, d_low, eps_hat, u);
  env.z.assign(static_cast<size_t>(c.n), normalized_hat(c.n, eps_hat, u));
  return env;
}

double normalized_hat(int64_t n, double eps_hat, const Units& u) {
  if (!(eps_hat > 0)) return kInf;
  const double a = (1 - u.ua) * (1 - u.ua) / count_upper(n, u), b = 2 * u.eta_a;
  // sup_d d / sqrt(max(a d^2 - b, 0) + eps_hat) (section 15.1).
  const double ratio = std::max(1 / std::sqrt(a), eps_hat < b ? std::sqrt(b / (a * eps_hat)) : 0.0);
  return (1 + u.ua) * (1 + u.ua) / std::pow(1 - u.ua, 1.5) * ratio * kEvaluationSlack + u.eta_a;
}

double shifted_radius(double z_hat, double gamma, double beta, const Units& u) {
  const double t = product_hat(z_hat, std::fabs(gamma), u);  // fl(z_hat gamma)
  const double b = std::fabs(beta);
  // |fl(t_hat + beta) - beta| <= t + u (t + |beta|), then the store.
  const double store = u.store_rounds ? mul_up(u.us * (1 + u.ua), t + b) + u.eta_s : 0.0;
  return (t + mul_up(u.ua, t + b) + store) * kEvaluationSlack;
}

void backward_dx_hats(const double* g, const double* z, int64_t n, double r, bool rms, const Units& u, double* out) {
  double sum_g = 0, sum_gz = 0;
  for (int64_t j = 0; j < n; ++j) {
    sum_g += g[j];
    sum_gz += product_hat(g[j], z[j], u);
  }
  const double a = rms ? 0.0 : mean_hat(sum_hat(sum_g, n, u), n, u);
  const double b = mean_hat(sum_hat(sum_gz, n, u), n, u);
  for (int64_t j = 0; j < n; ++j) {
    // fl(fl(g - A) - fl(z B)) for LayerNorm, fl(v - fl(z B)) for RMSNorm; then fl(r_hat c), stored.
    const double centred = rms ? g[j] : (g[j] + a) * (1 + u.ua);
    const double c_hat = (centred + product_hat(z[j], b, u)) * (1 + u.ua);
    out[j] = stored_hat(product_hat(r, c_hat, u), u);
  }
}

double eps_reciprocal_hat(double eps_hat, const Units& u) {
  return eps_hat > 0 ? reciprocal_upper(1.0, 0.0, 0.0, eps_hat, u) : kInf;
}

double reciprocal_low(double v_up, double eps_hat, const Units& u) {
  if (!std::isfinite(v_up) || variance_plus_eps_overflows(v_up, 0.0, eps_hat, u)) return 0.0;
  // fl(v_hat + eps_hat) <= (v_up + eps_hat)(1 + u); the square root and the division (rsqrt beyond
  // the argument's error) lower it by at most (1 - rsqrt); the factors 1 -+ 2^-50 cover this evaluation.
  // w is finite (the test above); the factor 1 + u under the root is applied outside it, so that an eps
  // at the largest double does not overflow here.
  const double w = v_up * (1 + 0x1p-52) + eps_hat;
  return std::max(0.0, (1 - u.rsqrt) * (1 - 0x1p-50) / (std::sqrt(w) * std::sqrt((1 + u.ua) * (1 + 0x1p-50))));
}

Envelope signed_forward_envelope(double sign, double z_low, double gamma, double beta, bool shifted, const Units& u,
                                 const Envelope& structural) {
  Envelope e = structural;
  if (!(structural.radius < kInf)) return e;
  if (gamma == 0) {  // fl(z_hat 0) = 0, fl(0 + beta) = beta, stored exactly
    e.lower = e.upper = beta;
    return e;
  }
  const double t_low = z_low > 0 ? mul_down(z_low, gamma) * (1 - u.ua) - u.eta_a : 0.0;  // |fl(z_hat gamma)| >= this
  if (!(t_low > 0) || !(sign != 0)) return e;
  const double s = sign * (gamma < 0 ? -1 : 1);  // the sign of t_hat
  // The sum with beta and the store move the output toward beta by at most u |.| each, and eta_s.
  const double drift = (shifted ? u.ua : 0.0) + (u.store_rounds ? u.us * (1 + u.ua) : 0.0) + 0x1p-51;
  const double near = beta + s * t_low;  // the output's limit on beta's side
  const double limit = near - s * (std::fabs(near) * drift + (u.store_rounds ? u.eta_s : 0.0) + kEvalEta);
  if (s > 0) e.lower = limit;
  else e.upper = limit;
  return e;
}

}  // namespace normcheck::bounds_detail

namespace normcheck {

using namespace bounds_detail;

namespace {

/// Where the bound of elements [first, first + count) is void but their envelope (valid: derived, not
/// "none") lets the stored output reach the dtype's largest value, or overflowed in its own evaluation,
/// the kernel may overflow: the overflow regime (issue 42: a sound two-pass kernel returned +inf on an
/// unresolved row with gamma near the maximum, and nothing had predicted it).
void flag_envelope_overflow(TensorBound& t, size_t first, size_t count, DType storage) {
  const double max_s = dtype_info(storage).max_finite;
  for (size_t k = first; k < first + count; ++k)
    if (!(t.bound[k] < kInf) && !(std::fabs(t.env_center[k]) + t.env_radius[k] < max_s)) t.regime[k] |= kRegimeOverflow;
}

/// Sizes the envelope vectors of t for `count` elements (radius +inf: none yet).
void size_envelope(TensorBound& t, size_t count) {
  t.env_center.assign(count, 0.0);
  t.env_radius.assign(count, kInf);
}

}  // namespace

void add_forward_envelope(const LayerNormCase& c, const BoundModel& m, TensorBound& out) {
  const Units u = units_of(m);
  const bool rms = m.stats == StatsModel::rms;
  size_envelope(out, c.x.size());
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowEnvelope env = row_envelope(c, i, m, u);
    if (!env.valid) continue;
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      if (rms) {
        out.env_radius[k] = stored_hat(product_hat(env.z[j], std::fabs(c.gamma[j]), u), u);  // fl(z_hat g), stored
        continue;
      }
      out.env_center[k] = c.beta[j];
      out.env_radius[k] = shifted_radius(env.z[j], c.gamma[j], c.beta[j], u);
    }
    flag_envelope_overflow(out, static_cast<size_t>(i * c.n), static_cast<size_t>(c.n), c.dtype);
  }
}

void add_backward_envelope(const LayerNormCase& c, const BoundModel& m, TensorBound& dx, TensorBound& dgamma,
                           TensorBound* dbeta) {
  const Units u = units_of(m);
  const bool rms = m.stats == StatsModel::rms;
  size_envelope(dx, c.x.size());
  size_envelope(dgamma, static_cast<size_t>(c.n));
  std::vector<double> dg_sum(static_cast<size_t>(c.n), 0.0), db_sum(static_cast<size_t>(c.n), 0.0), g(static_cast<size_t>(c.n));
  bool all_rows = true;
  for (int64_t i = 0; i < c.rows; ++i) {
    const size_t base = static_cast<size_t>(i * c.n);
    const RowEnvelope env = row_envelope(c, i, m, u);
    for (int64_t j = 0; j < c.n; ++j) db_sum[j] += std::fabs(c.dy[base + j]);
    if (!env.valid) {
      all_rows = false;
      continue;
    }
    for (int64_t j = 0; j < c.n; ++j) {
      g[j] = product_hat(std::fabs(c.dy[base + j]), std::fabs(c.gamma[j]), u);  // fl(dy gamma)
      dg_sum[j] += product_hat(std::fabs(c.dy[base + j]), env.z[j], u);   // fl(dy z_hat)
    }
    backward_dx_hats(g.data(), env.z.data(), c.n, env.r, rms, u, &dx.env_radius[base]);
    flag_envelope_overflow(dx, base, static_cast<size_t>(c.n), c.dtype);
  }
  if (dbeta) {  // sum of dy over rows: no statistics involved
    size_envelope(*dbeta, static_cast<size_t>(c.n));
    for (int64_t j = 0; j < c.n; ++j) dbeta->env_radius[j] = stored_hat(sum_hat(db_sum[j], c.rows, u), u);
  }
  if (dbeta) flag_envelope_overflow(*dbeta, 0, static_cast<size_t>(c.n), c.dtype);
  if (!all_rows) return;  // a row without an envelope leaves dgamma without one
  for (int64_t j = 0; j < c.n; ++j) dgamma.env_radius[j] = stored_hat(sum_hat(dg_sum[j], c.rows, u), u);
  flag_envelope_overflow(dgamma, 0, static_cast<size_t>(c.n), c.dtype);
}

}  // namespace normcheck
