// Per-element forward and backward bounds (docs/bounds.md sections 2 and 3).
#include "bounds/bounds.hpp"

#include "bounds/bounds_model.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// A magnitude mag with error bound err whose sum reaches `limit`: the value may overflow. A sum (or
/// mag alone) overflowing to +inf in double reaches it too (issue 42: a kernel returned +inf where
/// the bound, reading that +inf as void, predicted nothing); an infinite error term alone (a void
/// bound, e.g. unresolved statistics) says nothing about overflow: the envelope judges that element.
bool reaches(double mag, double err, double limit) { return !(mag < limit) || (std::isfinite(err) && !(mag + err < limit)); }

/// Where the bound of a LayerNorm y is void but the row's statistics model still bounds the
/// kernel's d_hat and v_hat (unresolved statistics, not overflow), the side of the envelope that
/// the sign of d_hat fixes (section 15.7): a kernel returning beta (or 0) there fails.
void tighten_void_forward(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m, const Units& u,
                          TensorBound& out) {
  const double eps_hat = round_to_dtype(c.eps, m.accum);
  for (int64_t i = 0; i < c.rows; ++i) {
    const size_t base = static_cast<size_t>(i * c.n);
    bool any_void = false;
    for (int64_t j = 0; j < c.n; ++j) any_void |= !(out.bound[base + j] < kInf);
    if (!any_void) continue;
    const RowError r = row_error(c, ref, i, m, u);
    if (r.regime & kRegimeOverflow) continue;
    const double r_low = reciprocal_low(r.v + r.e_v * kEvaluationSlack, eps_hat, u);
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = base + static_cast<size_t>(j);
      if (out.bound[k] < kInf) continue;
      // |x_j - mu| >= |fl(x_j - mu_tilde)| (1 - 2^-52) - rad_mu; |d_hat - d| <= e_d.
      const double d_low = (std::fabs(r.d[j]) * (1 - 0x1p-52) - ref.mean_rad[i] * (1 + kRel)) * (1 - 0x1p-52) - r.e_d[j] * (1 + 0x1p-50);
      const double z_low = d_low > 0 ? mul_down(d_low, r_low) * (1 - u.ua) - u.eta_a : 0.0;  // sign(z_hat) = sign(d) when > 0
      const Envelope e = signed_forward_envelope(r.d[j] < 0 ? -1 : 1, z_low, c.gamma[j], c.beta[j], true, u, out.envelope(k));
      if (e.lower > -kInf || e.upper < kInf) out.set_limits(k, e.lower, e.upper);
    }
  }
}

}  // namespace

double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1 ? ku / (1 - ku) : kInf;
}

std::string bound_id(const BoundModel& m) {
  const char* order = m.order == SumOrder::pairwise ? "PAIRWISE" : m.order == SumOrder::blocked ? "BLOCKED" : "SEQ";
  if (m.stats == StatsModel::welford_merge)  // the class (any merge tree) or welford_chunked's tree (section 2.7)
    return std::string("LN-WELFORDMERGE-") + (m.order == SumOrder::blocked ? "BLOCKED" : "ANY");
  if (m.stats == StatsModel::rms) {
    std::string id = std::string("RMS-") + order;
    if (m.rms_flags & kRmsSumsqStorage) id += "+SUMSQ-STORAGE";
    if (m.rms_flags & kRmsRstdBf16) id += "+RSTD-BF16";
    if (m.rms_flags & kRmsGainOffset) id += (m.rms_flags & kRmsGainStorage) ? "+GAIN-OFFSET-STORAGE" : "+GAIN-OFFSET";
    if (m.rms_flags & kRmsXrBf16) id += "+XR-BF16";
    if (m.rms_flags & kRmsDgBf16) id += "+DG-BF16";
    return id;
  }
  const char* stats = m.stats == StatsModel::two_pass  ? "TWOPASS"
                      : m.stats == StatsModel::welford ? "WELFORD"
                      : m.stats == StatsModel::op_by_op ? "OPBYOP"
                                                        : "ONEPASS";
  return std::string("LN-") + stats + "-" + order;
}

std::string bound_label(const BoundModel& m) {
  return bound_id(m) + "[" + std::string(dtype_info(m.storage).name) + "/" + std::string(dtype_info(m.accum).name) + "]";
}

std::vector<NamedConstant> bound_constants(const BoundModel& m, int64_t n, int64_t rows) {
  const Units u = units_of(m);
  return {{"u_s", "unit roundoff of the storage dtype", u.us},
          {"u_a", "unit roundoff of the accumulator", u.ua},
          {"eta_s", "absolute error of one rounding in the storage's subnormal range", u.eta_s},
          {"eta_a", "absolute error of one rounding in the accumulator's subnormal range", u.eta_a},
          {"gamma_sum", "gamma of one within-row sum of n terms (sequential n-1, pairwise ceil(log2 n) additions)",
           sum_gamma(n, u)},
          {"div_n", "relative error of dividing by n (0 for a power of two)", division_error(n, u)},
          {"rsqrt", "relative error of 1/sqrt beyond its argument's", u.rsqrt},
          {"gamma_2", "two roundings: (d r) gamma", gamma_k(2, u.ua)},
          {"gamma_rows", "gamma of the sum over rows (dgamma)", gamma_k(static_cast<double>(rows), u.ua)},
          {"max_acc", "largest finite accumulator value (overflow prediction)", u.max_a}};
}

std::vector<std::string> bound_formula(const BoundModel& m, bool backward) {
  std::vector<std::string> f;
  if (m.stats == StatsModel::rms) {
    f.push_back("S = sum x^2 in the sum accumulator (storage dtype for +SUMSQ-STORAGE): e_S = (gamma_sum (+) u_sum) S + n eta_sum");
    f.push_back("e_ms = (e_S + div_n (S + e_S)) / n + eta_a; delta_r from e_ms as in [2.3], (+) 2^-8 for +RSTD-BF16   [10.1]");
    f.push_back("e_z = |x| r (delta_r (+) u_xr) + eta_xr, u_xr = u_a (+) 2^-8 for +XR-BF16   [10.1]");
    if (!backward) {
      f.push_back("y: e = |g| e_z (1 + u_a) + u_a |g x r| + eta_a   [10.1]");
    } else {
      f.push_back("dx: B = mean(v z), v = g dy; e_B as e_B of [3.2]; c = v - z B; e = r (|c| delta_r + e_c (1 + delta_r))"
                  "(1 + u_a) + u_a |dx| + eta_a   [10.2]");
      f.push_back("dgamma: sum_rows (|dy| e_z (1+u_a) + u_a |dy|(|z|+e_z) + u_dg |p|) + gamma_{m-1}(u_dg) sum |p|;"
                  " u_dg = 2^-8 for +DG-BF16   [10.2]");
    }
    if (m.rms_flags & kRmsGainOffset)
      f.push_back(std::string("gain offset: gamma holds hi = fl64(1 + w); |g| <= |hi| (1 + 2^-52), the kernel's |g_k| <= |g| (1 + u_gain), u_gain = ") +
                  ((m.rms_flags & kRmsGainStorage) ? "u_s (+) u_a" : "u_a") +
                  (backward ? "; dx: |v_hat - v| = (u_a (+) u_gain) |v| (1 + 2^-51) + eta_a, two more 2^-53 steps in mean(v z) and |c|   [10.6]"
                            : "; y: e as above with |g_k| for |g|, + |x| r |g| u_gain   [10.6]"));
    f.push_back("store: bound = e + u_s (|exact| + e) + eta_s when storage != accumulator   [2.6]");
    return f;
  }
  switch (m.stats) {
    case StatsModel::two_pass:
      f.push_back("e_mu = (gamma_sum (+) div_n) * sum|x| / n + eta_a                                   [2.1]");
      f.push_back("e_v  = E2 + (gamma_sum (+) u_a (+) div_n) (v + E2) + max(n,3) eta_a,"
                  " E2 = (sum 2|d_j| u_a (|d_j| + e_mu) + sum e_d_j^2) / n   [2.1: sum d_j = 0]");
      break;
    case StatsModel::welford:
      f.push_back("e_mu = (c M + n eta_a) / (1 - c), c = (n-1) u_a + 2 (2u_a + u_a^2)(H_n - 1), M = max|x|  [2.2]");
      f.push_back("e_v  = (sum_k |a_k| e_b + |b_k| e_a + e_a e_b + u_a (|a_k|+e_a)(|b_k|+e_b) + (gamma_n (+) div_n)"
                  " sum (|a_k|+e_a)(|b_k|+e_b)) / n + n eta_a   [2.2]");
      break;
    case StatsModel::rms: break;
    case StatsModel::welford_merge:
      f.push_back("any merge tree of depth D (n-1: the class, any tree; blocked: welford_chunked), L = ceil(log2 n) weighted-mean"
                  " merges: e_mu = (min(D beta, path) + L xi) g, beta = (1+u_a)(gamma_4 R + n eta_a) + u_a M, path = (1+u_a)"
                  "(gamma_4 S1 (1+2H_n) + D n eta_a) + u_a S1 H_n, xi = (1+u_a) gamma_3 M, g = (1 + u_a + 3(1+u_a) gamma_4)^D  [2.7.2]");
      f.push_back("e_v = F (1 + div) / n + div v + eta_a, F = (B (1+gamma_2) + gamma_2 D S) / (1 - 2(n-1) gamma_2), B = 4 (1+gamma_10)"
                  " (sqrt(S Q) + Q) + gamma_10 S + (1+u_a)^3 (R + 2 e_mu) Lambda + (4Dn + n) eta_a, sqrt Q = min(g (beta sqrt((n^3-n)/3)"
                  " + L xi sqrt W), e_mu sqrt W), W = n min(D/4, log2(n)/2)  [2.7.3]");
      break;
    case StatsModel::op_by_op:
      f.push_back("e_mu = (gamma_sum (+) div_n) * sum|x| / n + eta_a, then stored: + u_s (|mu| + e_mu) + eta_s      [4.5]");
      f.push_back("e_d_j = e_mu + (u_a (+) u_s)(|d_j| + e_mu) + eta_s (d_hat = st(fl(x - mu_hat)))                 [4.5]");
      f.push_back("e_v  = E2 + (gamma_sum (+) u_a (+) u_s (+) div_n (+) u_s) (v + E2) + 3 (1 + that)(eta_a + eta_s),"
                  " E2 = (sum 2|d_j| ((u_a (+) u_s)(|d_j| + e_mu) + eta_s) + sum e_d_j^2) / n   [4.5: sum d_j = 0]");
      f.push_back("delta_r as in [2.3] with v_hat + eps_hat stored (+ u_s (w + e_w) + eta_s), then (+) u_s for the stored r");
      f.push_back(backward ? "dz = st(dy gamma); dr = st(sum st(dz d)); r3 = st(r r r); dv = st(-1/2 st(dr r3)); ds = st(dv / n);"
                             " dd = st(st(dz r) + st(ds st(2 d))); dmu = -st(sum dd); dx = st(dd + st(dmu / n));"
                             " dgamma = st(sum_rows st(dy z)), z = st(d r); dbeta = st(sum_rows dy)   [4.5]"
                           : "y = st(st(st(d r) gamma) + beta)   [4.5]");
      f.push_back("every step a (magnitude, error) pair: product, sum, division by n and store rules of [11.1]");
      f.push_back("overflow predicted (bound void) where a pair or a stored square, v + eps, r, r^3 may reach the"
                  " largest finite value   [4.5, 5]");
      return f;
    case StatsModel::one_pass:
      f.push_back("e_mu = (gamma_sum (+) div_n) * sum|x| / n + eta_a                                   [2.1]");
      f.push_back("e_v  = e_q + e_msq + u_a (v + e_q + e_msq), e_q = (gamma_sum (+) u_a (+) div_n) sum x^2 / n,"
                  " e_msq = (2|mu| e_mu + e_mu^2)(1+u_a) + u_a mu^2   [4]");
      break;
  }
  f.push_back("e_d_j = e_mu + u_a (|d_j| + e_mu)");
  f.push_back("delta = e_w / w_low (rounded up), w_low = lower bound of v + eps, e_w = e_v + u_a eps + 2 eta_a +"
              " u_a (v + eps + e_v + u_a eps + eta_a); delta_r = a + (1 + a) rsqrt, a = delta / (2 (1 - delta)^1.5)"
              "   [2.3]; void if delta >= 1 - 2^-20");
  if (!backward) {
    f.push_back("e_t = |gamma_j| r (|d_j| delta_r + e_d_j (1 + delta_r))(1 + gamma_2) + gamma_2 |gamma_j z_j| + eta_a"
                " (1 + |gamma_j|(1 + gamma_2))   [2.4]");
    f.push_back("e_s = e_t (1 + u_a) + u_a |y_j| + eta_a   [2.5]");
  } else {
    f.push_back("e_z = r (|d| delta_r + e_d (1 + delta_r))(1 + u_a) + u_a |z| + eta_a;"
                " e_A, e_B from the row sums of g = dy gamma and g z   [3.1-3.2]");
    f.push_back("dx: e = r (|c| delta_r + e_c (1 + delta_r))(1 + u_a) + u_a |dx| + eta_a,"
                " c = g - A - z B   [3.3]");
    f.push_back("dgamma: sum_i |dy| e_z (1 + u_a) + gamma_rows sum_i |dy| (|z| + e_z) + m eta_a;"
                " dbeta: gamma_{m-1} sum_i |dy| + m eta_a   [3.4]");
  }
  f.push_back("store: bound = e + u_s (|exact| + e) + eta_s when storage != accumulator   [2.6]");
  f.push_back("overflow predicted (bound void, Inf/NaN allowed) when a partial sum, square sum, product or the"
              " output may reach the largest finite value   [5]");
  return f;
}

TensorBound layernorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                    const BoundModel& m) {
  if (m.stats == StatsModel::op_by_op) return op_by_op_forward_bound(c, ref, m);
  const Units u = units_of(m);
  const double g2 = gamma_k(2, u.ua);
  TensorBound out{std::vector<double>(c.x.size()), std::vector<uint8_t>(c.x.size())};
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const double ga = std::fabs(c.gamma[j]);
      // Products through product_up: |gamma| r below 2^-1074 lost the z-error term (issue 42).
      const double t = product_up({ga, r.d_abs[j], r.rstd});
      // Each term one product chain: an underflowed term rounded up and then multiplied by r would be loose.
      const double e_t = (product_up({ga, r.rstd, r.d_abs[j], r.delta_r}) + product_up({ga, r.rstd, r.e_d[j], 1 + r.delta_r})) * (1 + g2) +
                         mul_up(g2, t) +
                         u.eta_a * (1 + ga * (1 + g2));  // underflow of d*r, scaled by gamma
      const double y = upper_abs(ref.y[k]);
      const double e_s = e_t * (1 + u.ua) + relative_rounding(y, u) + u.eta_a;
      out.regime[k] = r.regime | output_regime(y, t + std::fabs(c.beta[j]), c.dtype);
      const bool may_overflow = (r.regime & kRegimeOverflow) || reaches(t + std::fabs(c.beta[j]), e_t, u.max_a) ||
                                reaches(y, e_s, dtype_info(c.dtype).max_finite);
      if (may_overflow) out.regime[k] |= kRegimeOverflow;
      out.bound[k] = may_overflow ? kInf : with_store(y, e_s, u);
    }
  }
  add_forward_envelope(c, m, out);
  if (has_envelope(m)) tighten_void_forward(c, ref, m, u, out);
  return out;
}

namespace {

/// Per-row sums the backward bound needs (first loop of section 3).
struct BackwardRowSums {
  double sum_g = 0, sum_abs_g = 0, sum_eg = 0, sum_gz = 0, sum_abs_gz = 0, sum_g_dz = 0, acc_b = 0, mag_b = 0;
};

}  // namespace

BackwardBound layernorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                       const BoundModel& m, BackwardBoundTrace* trace) {
  if (m.stats == StatsModel::op_by_op) return op_by_op_backward_bound(c, ref, m);  // no trace: its pairs are per step
  const Units u = units_of(m);
  const double nn = static_cast<double>(c.n);
  const double max_s = dtype_info(c.dtype).max_finite;
  BackwardBound out;
  out.dx = {std::vector<double>(c.x.size()), std::vector<uint8_t>(c.x.size())};
  std::vector<double> dg_err(static_cast<size_t>(c.n), 0.0), dg_mag(static_cast<size_t>(c.n), 0.0);
  std::vector<double> db_mag(static_cast<size_t>(c.n), 0.0);
  std::vector<uint8_t> col_regime(static_cast<size_t>(c.n), 0);
  std::vector<double> z(c.n), za(c.n), ez(c.n), dz(c.n), g(c.n);
  for (int64_t i = 0; i < c.rows; ++i) {
    const RowError r = row_error(c, ref, i, m, u);
    const size_t base = static_cast<size_t>(i * c.n);
    BackwardRowSums s;
    for (int64_t j = 0; j < c.n; ++j) {
      const double dy = c.dy[base + j];
      z[j] = r.d[j] * ref.rstd[i];  // signed, nearest: only in the cancelling sums below
      za[j] = mul_up(r.d_abs[j], r.rstd);
      // |z_j - z_exact| from the certified radii of mean and rstd, plus the product's rounding
      // (relative, or one subnormal step where it underflows).
      dz[j] = mul_up(r.d_abs[j] - std::fabs(r.d[j]), r.rstd) + mul_up(r.d[j], ref.rstd_rad[i]) + mul_up(z[j], kRel) + kEvalEta;
      ez[j] = normalized_error(r, j, u);
      g[j] = dy * c.gamma[j];  // relative 2^-53 (f64 data), or one subnormal step where it underflows
      const double eg = mul_up(u.ua, g[j]) + u.eta_a;
      s.sum_g += g[j];
      s.sum_abs_g += std::fabs(g[j]) + eg;
      s.sum_eg += eg;
      s.sum_gz += g[j] * z[j];
      s.sum_abs_gz += mul_up(g[j], za[j]);
      s.sum_g_dz += mul_up(g[j], dz[j]) + mul_up(kEvalEta, za[j]) + kEvalEta;  // and g's and g z's underflow
      s.acc_b += mul_up(g[j], ez[j]) + mul_up(za[j], eg) + mul_up(eg, ez[j]) +
                 product_up({u.ua, std::fabs(g[j]) + eg, za[j] + ez[j]}) + u.eta_a;
      s.mag_b += mul_up(std::fabs(g[j]) + eg, za[j] + ez[j]);
      dg_err[j] += mul_up(dy, ez[j]);
      dg_mag[j] += mul_up(dy, za[j] + ez[j]);
      db_mag[j] += std::fabs(dy);
      col_regime[j] |= r.regime & ~kRegimeCancellation;
    }
    // A = fl(sum g_hat) / n and B = fl(sum g_hat z_hat) / n (section 3.2); their exact values are
    // evaluated here in double, so that evaluation is bounded too (e_mg, e_mgz: relative roundings,
    // and one subnormal step per g_j, per product and for the division where they underflow).
    const double e_a = quotient_up(s.sum_eg + mul_up(compose_sum(c.n, u), s.sum_abs_g), nn) + u.eta_a;
    const double e_b = quotient_up(s.acc_b + mul_up(compose_sum_products(c.n, u), s.mag_b + nn * u.eta_a), nn) + u.eta_a;
    const double mean_g = s.sum_g / nn, mean_gz = s.sum_gz / nn;
    const double e_mg = quotient_up(mul_up((nn + 1) * 0x1p-53, s.sum_abs_g), nn) + 2 * kEvalEta;
    const double e_mgz = quotient_up(s.sum_g_dz + mul_up((nn + 2) * 0x1p-53, s.sum_abs_gz), nn) + kEvalEta;
    const double mg_abs = std::fabs(mean_g) + e_mg, mgz_abs = std::fabs(mean_gz) + e_mgz;
    const double row_growth = growth(nn, u.ua);  // the kernel's partial sums exceed the exact magnitudes by at most this
    const bool sums_overflow = (r.regime & kRegimeOverflow) || reaches(s.sum_abs_g * row_growth, 0, u.max_a) ||
                               reaches(s.mag_b * row_growth, 0, u.max_a);
    for (int64_t j = 0; j < c.n; ++j) {
      const double eg = mul_up(u.ua, g[j]) + u.eta_a;
      const double q1 = std::fabs(g[j] - mean_g) + e_mg + mul_up(0x1p-52, std::fabs(g[j]) + mg_abs) + kEvalEta;
      const double e_q1 = eg + e_a + mul_up(u.ua, q1 + eg + e_a) + u.eta_a;
      const double e_q2 = mul_up(za[j], e_b) + mul_up(mgz_abs, ez[j]) + mul_up(ez[j], e_b) +
                          product_up({u.ua, za[j] + ez[j], mgz_abs + e_b}) + u.eta_a;
      // Upper bound of the exact |g - A - z B| from its double evaluation (g's and z B's underflow: two steps).
      const double cj = std::fabs(g[j] - mean_g - z[j] * mean_gz) + e_mg + mul_up(dz[j], mgz_abs) + mul_up(z[j], e_mgz) +
                        mul_up(4 * 0x1p-53, std::fabs(g[j]) + mg_abs + mul_up(za[j], mgz_abs)) + 2 * kEvalEta;
      const double e_c = e_q1 + e_q2 + mul_up(u.ua, cj + e_q1 + e_q2) + u.eta_a;
      const double dx = upper_abs(ref.dx[base + j]);
      const double e = (product_up({r.rstd, cj, r.delta_r}) + product_up({r.rstd, e_c, 1 + r.delta_r})) * (1 + u.ua) + mul_up(u.ua, dx) + u.eta_a;
      const size_t k = base + static_cast<size_t>(j);
      const double magnitude = mul_up(r.rstd, std::fabs(g[j]) + mg_abs + mul_up(za[j], mgz_abs));
      out.dx.regime[k] = r.regime | output_regime(dx, magnitude, c.dtype);
      // c = (g - A) - z B itself (before the product with r), r c, and the store.
      const bool may_overflow = sums_overflow || reaches(cj, e_c, u.max_a) || reaches(magnitude, e, u.max_a) ||
                                reaches(dx, e, max_s);
      if (may_overflow) out.dx.regime[k] |= kRegimeOverflow;
      out.dx.bound[k] = may_overflow ? kInf : with_store(dx, e, u);
      if (trace && trace->output == "dx" && trace->index == k)
        trace->terms = {{"A", "mean of g = dy gamma over the row (double evaluation) [3.2]", mean_g},
                        {"e_A", "|A_hat - A|: the kernel's mean of g [3.2]", e_a},
                        {"B", "mean of g z over the row (double evaluation) [3.2]", mean_gz},
                        {"e_B", "|B_hat - B|: the kernel's mean of g z [3.2]", e_b},
                        {"|c_j|", "upper bound of |g_j - A - z_j B| [3.3]", cj},
                        {"e_q1", "error of g_j - A [3.3]", e_q1},
                        {"e_q2", "error of z_j B [3.3]", e_q2},
                        {"e_c", "|c_hat_j - c_j| = e_q1 + e_q2 + u_a (|c| + e_q1 + e_q2) + eta_a [3.3]", e_c},
                        {"e", "r (|c| delta_r + e_c (1 + delta_r))(1 + u_a) + u_a |dx| + eta_a [3.3]", e}};
    }
  }
  out.dgamma = {std::vector<double>(c.n), std::vector<uint8_t>(c.n)};
  out.dbeta = out.dgamma;
  const double rows = static_cast<double>(c.rows);
  const double gm = gamma_k(rows, u.ua), gm1 = gamma_k(rows - 1, u.ua);
  const double column_growth = growth(rows, u.ua);  // the kernel's partial sums over rows, at most this above the exact ones
  for (int64_t j = 0; j < c.n; ++j) {
    const double e_g = dg_err[j] * (1 + u.ua) + mul_up(gm, dg_mag[j] + rows * u.eta_a) + rows * u.eta_a;
    const double e_b = mul_up(gm1, db_mag[j]) + rows * u.eta_a;
    const double vg = upper_abs(ref.dgamma[j]), vb = upper_abs(ref.dbeta[j]);
    const bool g_over = (col_regime[j] & kRegimeOverflow) || reaches(dg_mag[j] * column_growth, 0, u.max_a) || reaches(vg, e_g, max_s);
    const bool b_over = reaches(db_mag[j] * column_growth, 0, u.max_a) || reaches(vb, e_b, max_s);
    out.dgamma.regime[j] = col_regime[j] | output_regime(vg, dg_mag[j], c.dtype) | (g_over ? kRegimeOverflow : 0);
    out.dbeta.regime[j] = output_regime(vb, db_mag[j], c.dtype) | (b_over ? kRegimeOverflow : 0);
    out.dgamma.bound[j] = g_over ? kInf : with_store(vg, e_g, u);
    out.dbeta.bound[j] = b_over ? kInf : with_store(vb, e_b, u);
    if (trace && trace->index == static_cast<size_t>(j) && trace->output == "dgamma")
      trace->terms = {{"sum |dy| e_z", "the rows' products' errors from z [3.4]", dg_err[j]},
                      {"sum |dy|(|z|+e_z)", "magnitude of the column sum [3.4]", dg_mag[j]},
                      {"gamma_rows", "gamma of the sum over rows [3.4]", gm},
                      {"e", "sum |dy| e_z (1 + u_a) + gamma_rows (sum |dy|(|z|+e_z) + m eta_a) + m eta_a [3.4]", e_g}};
    if (trace && trace->index == static_cast<size_t>(j) && trace->output == "dbeta")
      trace->terms = {{"sum |dy|", "magnitude of the column sum [3.4]", db_mag[j]},
                      {"gamma_{m-1}", "gamma of the m - 1 additions over rows [3.4]", gm1},
                      {"e", "gamma_{m-1} sum |dy| + m eta_a [3.4]", e_b}};
  }
  add_backward_envelope(c, m, out.dx, out.dgamma, &out.dbeta);
  return out;
}

}  // namespace normcheck
