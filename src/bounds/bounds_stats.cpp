// Error models of the row statistics (docs/bounds.md sections 2.1-2.3).
#include <stdexcept>

#include "bounds/bounds_model.hpp"
#include "core/float_format.hpp"
#include "core/reduction_block.hpp"

namespace normcheck::bounds_detail {
namespace {

/// Half the subnormal spacing of a dtype; for f64 that is 2^-1075, which double cannot hold, so
/// it is rounded up to 2^-1074 (the bound stays rigorous, 2x loose in the f64 underflow range).
double half_spacing(const DTypeInfo& d) {
  return std::max(0.5 * d.denorm_min, std::numeric_limits<double>::denorm_min());
}

double sum_abs(const double* x, int64_t n) {
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += std::fabs(x[j]);
  return s;
}

/// |mu_hat - mu| for mu_hat = fl(sum x) / n (two-pass and one-pass).
double mean_error_summed(const double* x, int64_t n, const Units& u) {
  const double s1 = sum_abs(x, n);
  if (s1 < u.min_normal_a) return u.eta_a;  // every partial sum is exact: only the division rounds
  const double g = sum_gamma(n, u);
  return quotient_up(mul_up(compose(g, division_error(n, u)), s1), static_cast<double>(n)) + u.eta_a;
}

/// Welford's running mean: the first step is exact; each later step rounds the difference, the
/// quotient (and k, when not representable) and the sum. E <= c (M + E) + n eta solves to below.
double mean_error_welford(const double* x, int64_t n, const Units& u) {
  double m = 0, harmonic = 0;
  for (int64_t j = 0; j < n; ++j) {
    m = std::max(m, std::fabs(x[j]));
    harmonic += 1.0 / static_cast<double>(j + 1);
  }
  // Divisions by k round once, plus once more when some k <= n is not representable.
  const bool k_exact = static_cast<double>(n) <= 1.0 / u.ua;
  const double quotient = k_exact ? 2 * u.ua + u.ua * u.ua : 3 * u.ua + 3 * u.ua * u.ua;
  const double c = (static_cast<double>(n - 1) * u.ua + 2.0 * quotient * (harmonic - 1.0)) * (1 + kRel);
  if (c >= 1 - 0x1p-20) return kInf;
  return quotient_up(mul_up(c, m) + static_cast<double>(n) * u.eta_a, 1 - c);
}

/// Two-pass: sum_j d_j = 0 exactly, so the mean error enters v only at second order.
double variance_error_two_pass(const RowError& r, int64_t n, const Units& u) {
  double lin = 0, quad = 0;
  for (int64_t j = 0; j < n; ++j) {
    lin += product_up({2 * r.d_abs[j], u.ua, r.d_abs[j] + r.e_mu});
    quad += mul_up(r.e_d[j], r.e_d[j]);
  }
  const double nn = static_cast<double>(n);
  const double e2 = quotient_up(lin + quad, nn);
  // n rounded squares, the sum's additions, one division.
  const double g = compose(compose(sum_gamma(n, u), u.ua), division_error(n, u));
  return e2 + mul_up(g, r.v + e2) + u.eta_a * std::max(nn, 3.0);
}

/// Welford: M2 = sum_k (x_k - m_{k-1})(x_k - m_k) with running means m_k. The running means are
/// recomputed here in double, with error at most 3 k 2^-53 max|x|, added to |a_k| and |b_k|.
double variance_error_welford(const double* x, int64_t n, double e_mu, const Units& u) {
  double m_prev = 0, acc = 0, mag = 0, max_abs = 0;
  for (int64_t k = 0; k < n; ++k) max_abs = std::max(max_abs, std::fabs(x[k]));
  for (int64_t k = 0; k < n; ++k) {
    const double m_k = m_prev + (x[k] - m_prev) / static_cast<double>(k + 1);
    // The recomputed means' relative error, plus k + 2 subnormal steps for their underflows.
    const double slack = mul_up(3.0 * static_cast<double>(k + 2) * 0x1p-53, max_abs) + static_cast<double>(k + 2) * kEvalEta;
    const double a = std::fabs(x[k] - m_prev) * (1 + 0x1p-52) + slack;
    const double b = std::fabs(x[k] - m_k) * (1 + 0x1p-52) + slack;
    const double ea = e_mu + mul_up(u.ua, a + e_mu), eb = e_mu + mul_up(u.ua, b + e_mu);
    acc += mul_up(a, eb) + mul_up(b, ea) + mul_up(ea, eb) + product_up({u.ua, a + ea, b + eb});
    mag += mul_up(a + ea, b + eb);
    m_prev = m_k;
  }
  const double nn = static_cast<double>(n);
  return quotient_up(acc + mul_up(compose(gamma_k(nn, u.ua), division_error(n, u)), mag), nn) + u.eta_a * nn;
}

/// Op by op: a stored square st(d_hat^2), the stored v_hat + eps_hat or r_hat may reach the storage
/// dtype's largest finite value (section 4.5; the accumulator's range is row_regime's).
bool stored_statistics_overflow(const RowError& r, int64_t n, double eps, const BoundModel& m, const Units& u) {
  const double max_s = dtype_info(m.storage).max_finite, grow = (1 + u.ua) * (1 + u.us) * kEvaluationSlack;
  double squares = 0;  // the Accum sum of the stored squares, each rounded up by its store (bf16: 2^-8)
  for (int64_t j = 0; j < n; ++j) {
    const double square = (r.d_abs[j] + r.e_d[j]) * (r.d_abs[j] + r.e_d[j]) * grow + u.eta_a + u.eta_s;
    if (!(square < max_s)) return true;
    squares += square;
  }
  if (!(squares * growth(static_cast<double>(n + 1), u.ua) < u.max_a)) return true;
  // A void delta_r is the statistics left unresolved (row_regime's cancellation), not an overflow.
  return !((r.v + r.e_v + eps) * grow < max_s) || (std::isfinite(r.delta_r) && !(r.rstd * (1 + r.delta_r) < max_s));
}

/// Op by op (section 4.5): d_hat = st(fl(x - mu_hat)) and the squares st(fl(d_hat^2)) round twice,
/// v_hat = st(fl(sum)/n) once more; sum_j d_j = 0 still keeps the mean error at second order.
double variance_error_op_by_op(const RowError& r, int64_t n, const Units& u) {
  const double u_st = u.store_rounds ? u.us : 0, eta_st = u.store_rounds ? u.eta_s : 0;
  const double u_twice = compose(u.ua, u_st);
  double lin = 0, quad = 0;
  for (int64_t j = 0; j < n; ++j) {
    lin += mul_up(2 * r.d_abs[j], mul_up(u_twice, r.d_abs[j] + r.e_mu) + eta_st);
    quad += mul_up(r.e_d[j], r.e_d[j]);
  }
  const double nn = static_cast<double>(n);
  const double e2 = quotient_up(lin + quad, nn);
  // the squares (two roundings), the sum's additions, one division, the store of v.
  const double g = compose(compose(compose(sum_gamma(n, u), u_twice), division_error(n, u)), u_st);
  return e2 + mul_up(g, r.v + e2) + 3 * (1 + g) * (u.eta_a + eta_st);
}

/// One-pass: v_hat = fl(fl(sum x^2)/n - fl(mu_hat^2)); the subtraction cancels n mu^2 / S-fold.
double variance_error_one_pass(const double* x, int64_t n, double mu_abs, const RowError& r, const Units& u) {
  double s2 = 0;
  for (int64_t j = 0; j < n; ++j) s2 += mul_up(x[j], x[j]);
  const double nn = static_cast<double>(n);
  const double e_q = quotient_up(mul_up(compose(compose(sum_gamma(n, u), u.ua), division_error(n, u)), s2), nn) + u.eta_a * nn;
  const double e_msq = (mul_up(2 * mu_abs, r.e_mu) + mul_up(r.e_mu, r.e_mu)) * (1 + u.ua) + product_up({u.ua, mu_abs, mu_abs}) + u.eta_a;
  return e_q + e_msq + mul_up(u.ua, r.v + e_q + e_msq);
}

}  // namespace

namespace {

/// std::frexp of a finite positive double without the library call (exact, as frexp is; the call
/// was 9 % of the default suite through product_up_exact): a = m 2^e, m in [1/2, 1).
inline double split_exponent(double a, int& e) {
  e = float_format_detail::exponent_of(a) + 1;
  return scale_by_pow2(a, -e);  // into [1/2, 1): exact
}

/// m 2^e for m in [1/2, 2), rounded up: exact in the normal range; below it the scaling rounds to
/// nearest, so one subnormal step up unless that rounding was exact or upward (scaling the result
/// back up is exact); the smallest subnormal below the subnormal range, +inf beyond the range.
/// scale_by_pow2 is std::ldexp bit for bit, without the library call.
double scaled_up(double m, int64_t e) {
  if (e > 1025) return kInf;
  if (e < -1074) return std::numeric_limits<double>::denorm_min();
  const double p = scale_by_pow2(m, static_cast<int>(e));
  return p >= 0x1p-1022 || scale_by_pow2(p, static_cast<int>(-e)) >= m ? p : std::nextafter(p, kInf);
}

}  // namespace

double product_up_exact(std::initializer_list<double> factors) {
  double m = 1;
  int64_t e = 0;
  bool zero = false, infinite = false;
  for (const double f : factors) {
    const double a = std::fabs(f);
    if (std::isnan(a)) return a;
    if (a == 0) zero = true;
    else if (std::isinf(a)) infinite = true;
    else {
      int ef = 0, em = 0;
      m = split_exponent(m * split_exponent(a, ef), em);  // m in [1/2, 1): the product of two such never underflows
      e += ef + em;
    }
  }
  if (infinite) return kInf;  // 0 * inf: a void term
  return zero ? 0.0 : scaled_up(m, e);
}

double quotient_up(double a, double b) {
  const double q = std::fabs(a) / b;
  if (a == 0 || (q >= 0x1p-1022 && q <= std::numeric_limits<double>::max())) return q;
  if (!(b > 0) || std::isnan(q)) return kInf;  // no positive lower bound: void
  if (std::isinf(a) || std::isinf(b)) return q;
  int ea = 0, eb = 0;
  const double ma = split_exponent(std::fabs(a), ea), mb = split_exponent(b, eb);
  return scaled_up(ma / mb, static_cast<int64_t>(ea) - eb);  // ma / mb in (1/2, 2), rounded: the slack's
}

/// Relative error of r_hat = 1 / sqrt(fl(v_hat + eps_hat)) (section 2.3). delta is rounded up
/// (factor 1 + 2^-50) and treated as void within 2^-20 of 1, where (1 - delta)^-1.5 would amplify
/// the evaluation's own rounding beyond the slack.
double rstd_relative_error(double v, double v_low, double e_v, double eps, const Units& u) {
  const double w = (v + eps) * (1 + kRel), w_low = (v_low + eps) * (1 - kRel);
  const double e_w = e_v + mul_up(u.ua, eps) + 2 * u.eta_a + mul_up(u.ua, w + e_v + mul_up(u.ua, eps) + u.eta_a);
  const double delta = quotient_up(e_w, w_low) * (1 + kRel);
  if (!(delta < 1 - 0x1p-20)) return kInf;
  const double a = quotient_up(delta, 2 * std::pow(1 - delta, 1.5));
  return a + (1 + a) * u.rsqrt;
}

double rstd_relative_error_stored(double v, double v_low, double e_v, double eps, const Units& u) {
  const double u_st = u.store_rounds ? u.us : 0, eta_st = u.store_rounds ? u.eta_s : 0;
  const double w = (v + eps) * (1 + kRel), w_low = (v_low + eps) * (1 - kRel);
  const double e_sum = e_v + mul_up(u.ua, eps) + 2 * u.eta_a + mul_up(u.ua, w + e_v + mul_up(u.ua, eps) + u.eta_a);
  const double e_w = e_sum + mul_up(u_st, w + e_sum) + eta_st;  // ve = st(fl(v_hat + eps_hat))
  const double delta = quotient_up(e_w, w_low) * (1 + kRel);
  if (!(delta < 1 - 0x1p-20)) return kInf;
  const double a = quotient_up(delta, 2 * std::pow(1 - delta, 1.5));
  return compose(a + (1 + a) * u.rsqrt, u_st);  // r = st(1 / sqrt(ve)): r >= 1/sqrt(max) is normal
}

Units units_of(const BoundModel& m) {
  const DTypeInfo& s = dtype_info(m.storage);
  const DTypeInfo& a = dtype_info(m.accum);
  const double rsqrt = m.rsqrt_error >= 0 ? m.rsqrt_error : 2 * a.unit_roundoff / (1 - a.unit_roundoff);
  // Round to nearest overflows at max + ulp(max) / 2: exact in double for the narrower accumulators.
  const double threshold = m.accum == DType::f64 ? kInf : a.max_finite + 0.5 * ulp_at(a.max_finite, *a.format);
  return {s.unit_roundoff, a.unit_roundoff, half_spacing(s), half_spacing(a), m.storage != m.accum,
          a.max_finite,    rsqrt,           m.order,         a.min_normal,    threshold};
}

double sum_gamma(int64_t terms, const Units& u) {
  if (terms <= 1) return 0;
  const double adds = u.order == SumOrder::pairwise ? std::ceil(std::log2(static_cast<double>(terms)))
                      : u.order == SumOrder::blocked ? static_cast<double>(blocked_reduction_depth(terms))
                                                     : static_cast<double>(terms - 1);
  return gamma_k(adds, u.ua);
}

double division_error(int64_t k, const Units& u) {
  if ((k & (k - 1)) == 0) return 0.0;
  // Integers up to 2^p = 1/u are exact in a p-bit accumulator.
  return static_cast<double>(k) <= 1.0 / u.ua ? u.ua : 2 * u.ua + u.ua * u.ua;
}

RowError row_error(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i,
                   const BoundModel& m, const Units& u) {
  const double* x = &c.x[static_cast<size_t>(i * c.n)];
  const double mu = ref.mean[i];
  RowError r;
  r.mu = mu;
  // Upper bounds of the exact statistics from the oracle's certified radii (kRel: evaluation margin).
  r.v = (ref.var[i] + ref.var_rad[i]) * (1 + kRel);
  r.v_low = std::max(0.0, (ref.var[i] - ref.var_rad[i]) * (1 - kRel));
  r.rstd = (ref.rstd[i] + ref.rstd_rad[i]) * (1 + kRel);
  r.e_mu = m.stats == StatsModel::welford         ? mean_error_welford(x, c.n, u)
           : m.stats == StatsModel::welford_merge ? mean_error_welford_merge(x, c.n, welford_merge_depth(c.n, m.order), u)
                                                  : mean_error_summed(x, c.n, u);
  const bool op_by_op = m.stats == StatsModel::op_by_op;  // mu_hat and every d_hat stored (section 4.5)
  if (op_by_op) r.e_mu = stored_error(std::fabs(mu) + ref.mean_rad[i] * (1 + kRel) + mul_up(kRel, mu), r.e_mu, u);
  r.d.resize(static_cast<size_t>(c.n));
  r.d_abs.resize(static_cast<size_t>(c.n));
  r.e_d.resize(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) {
    r.d[j] = x[j] - mu;  // exact where it is subnormal (gradual underflow)
    // |x - mu_exact| <= |fl(x - mu)| (1 + 2^-52) + |mu - mu_exact| (certified radius).
    // No margin on |mu| (issue 42): with it, n = 1 and constant rows of large |x| had void bounds.
    r.d_abs[j] = std::fabs(r.d[j]) * (1 + 0x1p-52) + ref.mean_rad[i] * (1 + kRel);
    r.e_d[j] = r.e_mu + relative_rounding(r.d_abs[j] + r.e_mu, u);  // d_hat = fl(x - mu_hat): exact below the normal range
    if (op_by_op) r.e_d[j] = stored_error(r.d_abs[j], r.e_d[j], u);
  }
  switch (m.stats) {
    case StatsModel::two_pass: r.e_v = variance_error_two_pass(r, c.n, u); break;
    case StatsModel::welford: r.e_v = variance_error_welford(x, c.n, r.e_mu, u); break;
    case StatsModel::one_pass: r.e_v = variance_error_one_pass(x, c.n, std::fabs(mu) * (1 + kRel), r, u); break;
    case StatsModel::op_by_op: r.e_v = variance_error_op_by_op(r, c.n, u); break;
    case StatsModel::welford_merge: r.e_v = variance_error_welford_merge(x, c.n, r, welford_merge_depth(c.n, m.order), u); break;
    case StatsModel::rms: throw std::logic_error("row_error is the LayerNorm model; RMSNorm uses bounds_rms.cpp");
  }
  r.delta_r = op_by_op ? rstd_relative_error_stored(r.v, r.v_low, r.e_v, c.eps, u) : rstd_relative_error(r.v, r.v_low, r.e_v, c.eps, u);
  r.regime = row_regime(c, i, r, m, u);
  if (op_by_op && stored_statistics_overflow(r, c.n, c.eps, m, u)) r.regime |= kRegimeOverflow;
  return r;
}

}  // namespace normcheck::bounds_detail
