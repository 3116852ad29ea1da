// Per-element bounds for the RMSNorm kernels (docs/bounds.md section 10). Same model as the
// LayerNorm bounds (bounds_model.hpp); the statistics are only the mean of squares, and the weak
// variants' extra roundings (RmsFlags) enter as extra unit roundoffs.
#include "bounds/bounds.hpp"
#include "bounds/bounds_model.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

constexpr double kUBf16 = 0x1p-8;
constexpr double kEtaBf16 = 0x1p-134;

}  // namespace

namespace bounds_detail {

RmsUnits rms_units(const BoundModel& m, const Units& u) {
  const DTypeInfo& s = dtype_info(m.storage);
  const bool sumsq_storage = m.rms_flags & kRmsSumsqStorage, dg = m.rms_flags & kRmsDgBf16;
  const bool xr = m.rms_flags & kRmsXrBf16;
  return {sumsq_storage ? s.unit_roundoff : u.ua,
          sumsq_storage ? u.eta_s : u.eta_a,
          sumsq_storage ? s.max_finite : u.max_a,
          xr ? compose(u.ua, kUBf16) : u.ua,
          xr ? u.eta_a + kEtaBf16 : u.eta_a,
          xr ? dtype_info(DType::bf16).max_finite : u.max_a,
          (m.rms_flags & kRmsRstdBf16) ? kUBf16 : 0.0,
          dg ? kUBf16 : 0.0,
          dg ? kUBf16 : u.ua,
          dg ? kEtaBf16 : u.eta_a,
          !(m.rms_flags & kRmsGainOffset) ? 0.0 : (m.rms_flags & kRmsGainStorage) ? compose(s.unit_roundoff, u.ua) : u.ua};
}

RmsRow rms_row(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i, const BoundModel& m,
               const Units& u, const RmsUnits& ru) {
  const double nn = static_cast<double>(c.n);
  const double v = (ref.var[i] + ref.var_rad[i]) * (1 + kRel);
  const double v_low = std::max(0.0, (ref.var[i] - ref.var_rad[i]) * (1 - kRel));
  const double s = nn * v;  // sum of squares, upper bound
  Units us = u;
  us.ua = ru.u_sum;
  // The squares' underflow errors also pass through the n - 1 additions (finding 27).
  const double e_s = mul_up(compose(sum_gamma(c.n, us), ru.u_sum), s) + nn * ru.eta_sum * (1 + sum_gamma(c.n, us));
  const double e_ms = quotient_up(e_s + mul_up(division_error(c.n, u), s + e_s), nn) + u.eta_a;
  RmsRow row;
  row.ms = v;
  row.e_ms = e_ms;
  row.rstd = (ref.rstd[i] + ref.rstd_rad[i]) * (1 + kRel);
  const double d = rstd_relative_error(v, v_low, e_ms, c.eps, u);
  row.delta_r = d;
  bool rounding_overflows = false;
  if (ru.rstd_extra > 0) {  // r rounded to bf16: relative u, plus eta / r where r is subnormal in bf16
    const double r_low = std::max(0.0, (ref.rstd[i] - ref.rstd_rad[i]) * (1 - kRel)) * (1 - d);
    row.delta_r = r_low > 0 ? compose(d, ru.rstd_extra) + quotient_up(kEtaBf16, r_low) : kInf;
    rounding_overflows = std::isfinite(d) && row.rstd * (1 + d) >= dtype_info(DType::bf16).max_finite;
  }
  const double eps_hat = round_to_dtype(c.eps, m.accum);
  if (eps_hat == 0) row.regime |= kRegimeEpsVanishes;
  const bool void_rstd = !(d < kInf);
  // A mean of squares beyond double's range (var = inf) is an overflow too (finding 28).
  if (!std::isfinite(s) || s * growth(nn + 1, ru.u_sum) >= ru.max_sum || (void_rstd && (row.regime & kRegimeEpsVanishes)) || rounding_overflows ||
      (!void_rstd && row.rstd * (1 + row.delta_r) >= u.max_a) || variance_plus_eps_overflows(v, e_ms, eps_hat, u))
    row.regime |= kRegimeOverflow;
  const double* x = &c.x[static_cast<size_t>(i * c.n)];
  for (int64_t j = 0; j < c.n; ++j)
    if (x[j] != 0 && std::fabs(x[j]) < dtype_info(c.dtype).min_normal) row.regime |= kRegimeUnderflow;
  return row;
}

}  // namespace bounds_detail

namespace {

/// mag + err reaches `limit` (also when the sum overflows in double); an infinite err alone is a
/// void bound, not an overflow (bounds.cpp's reaches).
bool reaches(double mag, double err, double limit) { return !(mag < limit) || (std::isfinite(err) && !(mag + err < limit)); }

/// Where the bound of an RMSNorm y is void but the mean of squares is still bounded (no overflow),
/// the side of the envelope that sign(x) fixes: z_hat = fl(x r_hat) with r_hat >= r_low > 0, so a
/// kernel returning 0 there fails (section 15.7; issue 42: eps near the dtype's largest value).
void tighten_void_rms_forward(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m, const Units& u,
                              const RmsUnits& ru, TensorBound& out) {
  const double eps_hat = round_to_dtype(c.eps, m.accum);
  for (int64_t i = 0; i < c.rows; ++i) {
    const size_t base = static_cast<size_t>(i * c.n);
    bool any_void = false;
    for (int64_t j = 0; j < c.n; ++j) any_void |= !(out.bound[base + j] < kInf);
    if (!any_void) continue;
    const RmsRow row = rms_row(c, ref, i, m, u, ru);
    if (row.regime & kRegimeOverflow) continue;
    const double r_low = reciprocal_low(row.ms + row.e_ms * kEvaluationSlack, eps_hat, u);
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = base + static_cast<size_t>(j);
      if (out.bound[k] < kInf) continue;
      const double x = c.x[k];
      const double z_low = x != 0 ? mul_down(x, r_low) * (1 - u.ua) - u.eta_a : 0.0;
      const Envelope e = signed_forward_envelope(x < 0 ? -1 : 1, z_low, c.gamma[j], 0.0, false, u, out.envelope(k));
      if (e.lower > -kInf || e.upper < kInf) out.set_limits(k, e.lower, e.upper);
    }
  }
}

}  // namespace

TensorBound rmsnorm_forward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  const Units u = units_of(m);
  const RmsUnits ru = rms_units(m, u);
  TensorBound out{std::vector<double>(c.x.size()), std::vector<uint8_t>(c.x.size())};
  for (int64_t i = 0; i < c.rows; ++i) {
    const RmsRow row = rms_row(c, ref, i, m, u, ru);
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t k = static_cast<size_t>(i * c.n + j);
      const double xa = std::fabs(c.x[k]);
      // |g| (and with the gain offset |g_k| >= |g|: the kernel's fl(1 + w), and |g| >= |hi| (1 - 2^-53)).
      const double g_exact = ru.u_gain > 0 ? mul_up(std::fabs(c.gamma[j]), 1 + 0x1p-52) : std::fabs(c.gamma[j]);
      const double ga = ru.u_gain > 0 ? mul_up(g_exact, 1 + ru.u_gain) : g_exact;
      const double t = product_up({ga, xa, row.rstd});
      // ga |z_hat - z| as one product chain (rms_z_error's terms times ga), not ga times a rounded-up sum;
      // with the gain offset also |z| |g_k - g| <= |z| u_gain |g| (section 10.6).
      const double e = (product_up({ga, xa, row.rstd, compose(row.delta_r, ru.u_xr)}) + mul_up(ga, ru.eta_xr)) * (1 + u.ua) + relative_rounding(t, u) +
                       u.eta_a + (ru.u_gain > 0 ? product_up({g_exact, xa, row.rstd, ru.u_gain}) : 0.0);
      const double y = upper_abs(ref.y[k]);
      out.regime[k] = row.regime | output_regime(y, t, c.dtype);
      const bool may_overflow = (row.regime & kRegimeOverflow) || reaches(t, e, u.max_a) ||
                                reaches(y, e, dtype_info(c.dtype).max_finite) ||
                                (ru.u_xr > u.ua && reaches(product_up({xa, row.rstd, 1 + row.delta_r}), 0, ru.max_xr));
      if (may_overflow) out.regime[k] |= kRegimeOverflow;
      out.bound[k] = may_overflow ? kInf : with_store(y, e, u);
    }
  }
  add_forward_envelope(c, m, out);
  if (has_envelope(m)) tighten_void_rms_forward(c, ref, m, u, ru, out);
  return out;
}

BackwardBound rmsnorm_backward_bound(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                     const BoundModel& m, BackwardBoundTrace* trace) {
  const Units u = units_of(m);
  const RmsUnits ru = rms_units(m, u);
  const double nn = static_cast<double>(c.n), max_s = dtype_info(c.dtype).max_finite;
  BackwardBound out;
  out.dx = {std::vector<double>(c.x.size()), std::vector<uint8_t>(c.x.size())};
  std::vector<double> dg_err(c.n, 0.0), dg_mag(c.n, 0.0), z(c.n), za(c.n), ez(c.n), dz(c.n), v(c.n);
  std::vector<uint8_t> col_regime(c.n, 0);
  // |v_hat - v|: the product's rounding; with the gain offset also the gain's, against the exact g dy (section 10.6).
  const auto v_error = [&](double v) {
    return ru.u_gain > 0 ? mul_up(compose(u.ua, ru.u_gain), mul_up(v, 1 + 0x1p-51)) + u.eta_a : mul_up(u.ua, v) + u.eta_a;
  };
  for (int64_t i = 0; i < c.rows; ++i) {
    const RmsRow row = rms_row(c, ref, i, m, u, ru);
    const size_t base = static_cast<size_t>(i * c.n);
    double acc_b = 0, mag_b = 0, sum_vz = 0, sum_abs_vz = 0, sum_v_dz = 0, sum_abs_v = 0;
    for (int64_t j = 0; j < c.n; ++j) {
      const double x = c.x[base + j], dy = c.dy[base + j];
      z[j] = x * ref.rstd[i];  // signed, nearest: only in the cancelling sums below
      za[j] = mul_up(x, row.rstd);
      // |z_j - z_exact|: the certified radius of r, the product's rounding (relative, or one subnormal step).
      dz[j] = mul_up(x, ref.rstd_rad[i]) + mul_up(z[j], kRel) + kEvalEta;
      ez[j] = rms_z_error(std::fabs(x), row, ru);
      v[j] = c.gamma[j] * dy;  // relative 2^-53 (f64 data), or one subnormal step where it underflows
      const double ev = v_error(v[j]);
      acc_b += mul_up(v[j], ez[j]) + mul_up(za[j], ev) + mul_up(ev, ez[j]) + product_up({u.ua, std::fabs(v[j]) + ev, za[j] + ez[j]}) +
               u.eta_a;
      mag_b += mul_up(std::fabs(v[j]) + ev, za[j] + ez[j]);
      sum_vz += v[j] * z[j];
      sum_abs_vz += mul_up(v[j], za[j]);
      sum_v_dz += mul_up(v[j], dz[j]) + mul_up(kEvalEta, za[j]) + kEvalEta;  // and v's and v z's underflow
      sum_abs_v += std::fabs(v[j]);
      // p = fl(dy z_hat) in Accum, then converted to the dg accumulator (exact unless dg is bf16).
      const double p_err = mul_up(dy, ez[j]) * (1 + u.ua) + product_up({u.ua, dy, za[j] + ez[j]}) + u.eta_a;
      const double p_mag = mul_up(dy, za[j] + ez[j]) * (1 + u.ua) + u.eta_a;
      const double conv_eta = ru.u_dg_conv > 0 ? ru.eta_dg : 0.0;
      dg_err[j] += p_err + mul_up(ru.u_dg_conv, p_mag) + conv_eta;
      dg_mag[j] += p_mag * (1 + ru.u_dg_conv) + conv_eta;
      col_regime[j] |= row.regime;
    }
    // B = fl(sum fl(v z)) / n and its exact value, evaluated here in double (section 10.2).
    const double e_b = quotient_up(acc_b + mul_up(compose_sum_products(c.n, u), mag_b + nn * u.eta_a), nn) + u.eta_a;
    const double mean_vz = sum_vz / nn;
    // With the gain offset, v = fl64(hi dy) is within 2^-52 |v| of the exact g dy, not 2^-53: two more steps.
    const double v_steps = ru.u_gain > 0 ? 4 : 2;
    const double e_mvz = quotient_up(sum_v_dz + mul_up((nn + v_steps) * 0x1p-53, sum_abs_vz), nn) + kEvalEta;
    const double b_abs = std::fabs(mean_vz) + e_mvz;
    const double row_growth = growth(nn, u.ua);  // the kernel's partial sums exceed the exact magnitudes by at most this
    const bool sums_overflow = (row.regime & kRegimeOverflow) || reaches(mag_b * row_growth, 0, u.max_a) ||
                               reaches(sum_abs_v * row_growth, 0, u.max_a);
    for (int64_t j = 0; j < c.n; ++j) {
      const double ev = v_error(v[j]);
      // Upper bound of the exact |v - z B| from its double evaluation (v's and z B's underflow: two steps).
      const double cj = std::fabs(v[j] - z[j] * mean_vz) + mul_up(dz[j], b_abs) + mul_up(z[j], e_mvz) +
                        mul_up((2 + v_steps) * 0x1p-53, std::fabs(v[j]) + mul_up(za[j], b_abs)) + 2 * kEvalEta;
      const double e_q2 = mul_up(za[j], e_b) + mul_up(b_abs, ez[j]) + mul_up(ez[j], e_b) + product_up({u.ua, za[j] + ez[j], b_abs + e_b}) +
                          u.eta_a;
      const double e_c = ev + e_q2 + mul_up(u.ua, cj + ev + e_q2) + u.eta_a;
      const double dx = upper_abs(ref.dx[base + j]);
      const double e = (product_up({row.rstd, cj, row.delta_r}) + product_up({row.rstd, e_c, 1 + row.delta_r})) * (1 + u.ua) + mul_up(u.ua, dx) + u.eta_a;
      const size_t k = base + static_cast<size_t>(j);
      const double magnitude = mul_up(row.rstd, std::fabs(v[j]) + mul_up(za[j], b_abs));
      out.dx.regime[k] = row.regime | output_regime(dx, magnitude, c.dtype);
      const bool may_overflow = sums_overflow || reaches(cj, e_c, u.max_a) || reaches(magnitude, e, u.max_a) ||
                                reaches(dx, e, max_s) || reaches(za[j] * (1 + row.delta_r), 0, ru.max_xr);
      if (may_overflow) out.dx.regime[k] |= kRegimeOverflow;
      out.dx.bound[k] = may_overflow ? kInf : with_store(dx, e, u);
      if (trace && trace->output == "dx" && trace->index == k)
        trace->terms = {{"v_j", "g_j dy_j (double evaluation) [10.2]", v[j]},
                        {"e_v_j", "|v_hat_j - v_j|: the product's rounding (and the gain's, 10.6) [10.2]", ev},
                        {"B", "mean of v z over the row (double evaluation) [10.2]", mean_vz},
                        {"e_B", "|B_hat - B|: the kernel's mean of v z [10.2]", e_b},
                        {"|c_j|", "upper bound of |v_j - z_j B| [10.2]", cj},
                        {"e_q2", "error of z_j B [10.2]", e_q2},
                        {"e_c", "|c_hat_j - c_j| = e_v + e_q2 + u_a (|c| + e_v + e_q2) + eta_a [10.2]", e_c},
                        {"e", "r (|c| delta_r + e_c (1 + delta_r))(1 + u_a) + u_a |dx| + eta_a [10.2]", e}};
    }
  }
  out.dgamma = {std::vector<double>(c.n), std::vector<uint8_t>(c.n)};
  const double rows = static_cast<double>(c.rows);
  const double g_sum = gamma_k(rows - 1, ru.u_dg_sum);
  const double dg_max = (m.rms_flags & kRmsDgBf16) ? dtype_info(DType::bf16).max_finite : u.max_a;
  for (int64_t j = 0; j < c.n; ++j) {
    const double e_g = dg_err[j] + mul_up(g_sum, dg_mag[j]) + rows * ru.eta_dg;
    const double vg = upper_abs(ref.dgamma[j]);
    const bool over = (col_regime[j] & kRegimeOverflow) || reaches(dg_mag[j] * growth(rows, ru.u_dg_sum), 0, dg_max) ||
                      reaches(vg, e_g, max_s);
    out.dgamma.regime[j] = col_regime[j] | output_regime(vg, dg_mag[j], c.dtype) | (over ? kRegimeOverflow : 0);
    out.dgamma.bound[j] = over ? kInf : with_store(vg, e_g, u);
    if (trace && trace->index == static_cast<size_t>(j) && trace->output == "dgamma")
      trace->terms = {{"sum e_p", "the rows' products' errors fl(dy z_hat) and their conversion [10.2]", dg_err[j]},
                      {"sum |p|", "magnitude of the column sum [10.2]", dg_mag[j]},
                      {"gamma_rows", "gamma of the m - 1 additions over rows in the dg accumulator [10.2]", g_sum},
                      {"e", "sum e_p + gamma_rows sum |p| + m eta_dg [10.2]", e_g}};
  }
  add_backward_envelope(c, m, out.dx, out.dgamma, nullptr);
  return out;
}

}  // namespace normcheck
