// Bounds for the grouped normalization kernels (docs/bounds.md section 13). Each group runs the
// LayerNorm two-pass arithmetic on its gathered entries, so y and dx are bounded by LN-TWOPASS-SEQ
// on a one-row LayerNorm case per group (sections 2-3); an RMSNorm group runs the RMSNorm row
// arithmetic and is bounded by RMS-SEQ on its one-row case (section 10); the per-channel sums dgamma, dbeta, the
// running statistics and inference-mode batch norm follow with (magnitude, error) pairs.
#include "bounds/bounds_grouped.hpp"

#include "bounds/bounds_model.hpp"
#include "bounds/error_pairs.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

CertifiedValue exact_value(double v) {
  CertifiedValue c;
  c.hi = v;
  c.rounded = v;
  return c;
}

/// Group g as a one-row LayerNorm case with its certified reference.
void group_as_row(const GroupedNormCase& c, const oracle::GroupedNormLayout& l, const oracle::CertifiedGroupedNorm& ref,
                  const std::vector<int64_t>& entries, int64_t g, bool with_vjp, LayerNormCase& row,
                  oracle::CertifiedLayerNorm& rref) {
  row.dtype = c.dtype;
  row.rows = 1;
  row.n = static_cast<int64_t>(entries.size());
  row.eps = c.eps;
  for (int64_t e : entries) {
    const int64_t ch = l.param_of[e];
    row.x.push_back(c.x[e]);
    row.gamma.push_back(c.gamma[ch]);
    if (l.centred) row.beta.push_back(c.beta[ch]);
    rref.y.push_back(ref.y[e]);
    if (with_vjp) {
      row.dy.push_back(c.dy[e]);
      rref.dx.push_back(ref.dx[e]);
      rref.dgamma.push_back(ref.contrib[e]);
      if (l.centred) rref.dbeta.push_back(exact_value(c.dy[e]));
    }
  }
  rref.mean = {ref.mean[g]};
  rref.mean_rad = {ref.mean_rad[g]};
  rref.var = {ref.var[g]};
  rref.var_rad = {ref.var_rad[g]};
  rref.rstd = {ref.rstd[g]};
  rref.rstd_rad = {ref.rstd_rad[g]};
}

/// An oracle statistic as a pair: |exact| <= upper, computed error e, |computed| <= hat; `over`
/// when the channel's statistics pass may overflow (its row regime; issue 42: the running mean of
/// (2^127, 2^127) in f32 was +inf against a finite bound).
Em statistic(double mid, double rad, double e, double hat, bool over) {
  return {(std::fabs(mid) + rad) * (1 + kRel), e, over || !std::isfinite(e), hat};
}

/// Upper bounds of the kernel's computed two-pass mean and variance of a group whose entries have
/// magnitudes summing to s1 with maximum mx (section 15.3): |mu_hat| <= fl(sum)/n, and every
/// |d_hat| <= (mx + |mu_hat|)(1 + u), so v_hat <= max d_hat^2 (1 + u)^(n + 2).
struct GroupHats {
  double mean = 0, var = 0;
};
GroupHats group_hats(double s1, double mx, int64_t n, const Units& u) {
  GroupHats h;
  h.mean = mean_hat(sum_hat(s1, n, u), n, u);
  const double d = (mx + h.mean) * (1 + u.ua);
  h.var = mean_hat(sum_hat(static_cast<double>(n) * product_hat(d, d, u), n, u), n, u);
  return h;
}

/// running_mean' = fl(fl(keep rm) + fl(mom mean_hat)), running_var' = fl(fl(keep rv) + fl(mom fl(var_hat unbias))).
void running_stats_bound(const GroupedNormCase& c, const oracle::CertifiedGroupedNorm& ref, const std::vector<RowError>& rows,
                         const std::vector<int64_t>& counts, const std::vector<GroupHats>& hats, const EmArith& a,
                         GroupedBound& out) {
  const double mom = c.momentum;
  // keep = fl_a(fl_64(1 - mom)): the double subtraction and the conversion each round once.
  const double keep_err = std::fabs(1 - mom) * (0x1p-53 + a.u.ua) * 1.01 + a.u.eta_a;
  const Em keep_pair{std::fabs(1 - mom), keep_err, false, std::fabs(1 - mom) + keep_err};
  const Em mom_pair{mom, mom * a.u.ua + a.u.eta_a, false, mom * (1 + a.u.ua) + a.u.eta_a};
  out.running_mean = sized_tensor_bound(ref.running_mean.size());
  out.running_var = sized_tensor_bound(ref.running_var.size());
  for (size_t ch = 0; ch < ref.running_mean.size(); ++ch) {
    const RowError& r = rows[ch];
    const bool over = (r.regime & kRegimeOverflow) != 0;
    const Em mean = statistic(ref.mean[ch], ref.mean_rad[ch], r.e_mu, hats[ch].mean, over);
    const Em rm = a.add(a.mul(keep_pair, EmArith::exact(c.running_mean[ch])), a.mul(mom_pair, mean));
    finish_element(out.running_mean, ch, rm, ref.running_mean[ch], a);
    const int64_t n = counts[ch];
    const double unbias_exact = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
    const double unbias_err = n > 1 ? unbias_exact * (1 + kRel) * division_error(n - 1, a.u) + a.u.eta_a : 0.0;
    const Em unbias{unbias_exact * (1 + kRel), unbias_err, false, unbias_exact * (1 + kRel) + unbias_err};
    const Em var = statistic(ref.var[ch], ref.var_rad[ch], r.e_v, hats[ch].var, over);
    const Em rv = a.add(a.mul(keep_pair, EmArith::exact(c.running_var[ch])), a.mul(mom_pair, a.mul(var, unbias)));
    finish_element(out.running_var, ch, rv, ref.running_var[ch], a);
  }
}

/// y = fl(fl(fl(x - rm) r) gamma + beta) with r = fl(1 / fl(sqrt(fl(rv + eps)))).
void inference_bound(const GroupedNormCase& c, const oracle::GroupedNormLayout& l, const oracle::CertifiedGroupedNorm& ref,
                     const EmArith& a, double eps_hat, GroupedBound& out) {
  out.y_inference = sized_tensor_bound(ref.y_inference.size());
  std::vector<Em> r(static_cast<size_t>(l.params));
  for (int64_t ch = 0; ch < l.params; ++ch) {
    const double v = c.running_var[ch];
    const double delta = rstd_relative_error(v, v, 0.0, c.eps, a.u);
    const double upper = quotient_up(1, std::hypot(std::sqrt(v), std::sqrt(c.eps))) * (1 + 0x1p-50);  // no overflow of v + eps
    const bool over = variance_plus_eps_overflows(v, 0.0, eps_hat, a.u);
    // r_hat <= (1 + u)(1 - u)^(-3/2) / sqrt(v + eps_hat) (section 15.1 with v_hat = v exact).
    const double hat = eps_hat > 0 || v > 0 ? reciprocal_root_of_sum(std::sqrt(v), std::sqrt(eps_hat), a.u) : kInf;
    r[ch] = {upper, mul_up(upper, delta), !(delta < kInf) || over, hat};
  }
  for (size_t e = 0; e < c.x.size(); ++e) {
    const int64_t ch = l.param_of[e];
    const Em d = a.add(EmArith::exact(c.x[e]), EmArith::exact(c.running_mean[ch]));
    const Em y = a.add(a.mul(a.mul(d, r[ch]), EmArith::exact(c.gamma[ch])), EmArith::exact(c.beta[ch]));
    finish_element(out.y_inference, e, y, ref.y_inference[e], a);
  }
}

}  // namespace

GroupedBound grouped_norm_bound(const GroupedNormCase& c, const oracle::GroupedNormLayout& l,
                                const oracle::CertifiedGroupedNorm& ref, DType accum, bool with_vjp) {
  const BoundModel m{l.centred ? StatsModel::two_pass : StatsModel::rms, c.dtype, accum, SumOrder::sequential, -1, 0};
  const Units u = units_of(m);
  const EmArith a{u, dtype_info(c.dtype).max_finite, c.dtype};
  GroupedBound out;
  out.y = sized_tensor_bound(c.x.size());
  if (with_vjp) out.dx = sized_tensor_bound(c.x.size());
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(l.groups));
  for (size_t e = 0; e < c.x.size(); ++e) members[l.group_of[e]].push_back(static_cast<int64_t>(e));
  std::vector<double> dg_err(static_cast<size_t>(l.params), 0.0), dg_mag(dg_err), db_mag(dg_err), dg_hat(dg_err);
  std::vector<int64_t> per_channel(static_cast<size_t>(l.params), 0), counts;
  std::vector<RowError> rows;
  std::vector<GroupHats> hats;
  for (int64_t g = 0; g < l.groups; ++g) {
    LayerNormCase row;
    oracle::CertifiedLayerNorm rref;
    group_as_row(c, l, ref, members[g], g, with_vjp, row, rref);
    const TensorBound fwd = l.centred ? layernorm_forward_bound(row, rref, m) : rmsnorm_forward_bound(row, rref, m);
    BackwardBound bwd;
    if (with_vjp) bwd = l.centred ? layernorm_backward_bound(row, rref, m) : rmsnorm_backward_bound(row, rref, m);
    if (l.batch_norm) {  // the running statistics' inputs
      rows.push_back(row_error(row, rref, 0, m, u));
      counts.push_back(row.n);
      double s1 = 0, mx = 0;
      for (double v : row.x) {
        s1 += std::fabs(v);
        mx = std::max(mx, std::fabs(v));
      }
      hats.push_back(group_hats(s1, mx, row.n, u));
    }
    for (size_t i = 0; i < members[g].size(); ++i) {
      const int64_t e = members[g][i], ch = l.param_of[e];
      out.y.bound[e] = fwd.bound[i];
      out.y.regime[e] = fwd.regime[i];
      out.y.env_center[e] = fwd.env_center[i];
      out.y.env_radius[e] = fwd.env_radius[i];
      if (!fwd.env_lower.empty()) out.y.set_limits(static_cast<size_t>(e), fwd.env_lower[i], fwd.env_upper[i]);
      if (!with_vjp) continue;
      out.dx.bound[e] = bwd.dx.bound[i];
      out.dx.regime[e] = bwd.dx.regime[i];
      out.dx.env_radius[e] = bwd.dx.env_radius[i];
      // dgamma_c sums fl(dy z_hat) over the channel's entries: the one-row bound of each product.
      dg_err[ch] += bwd.dgamma.bound[i];
      dg_mag[ch] += upper_abs(ref.contrib[e]) + bwd.dgamma.bound[i];
      dg_hat[ch] += bwd.dgamma.env_radius[i];
      db_mag[ch] += std::fabs(c.dy[e]);
      ++per_channel[ch];
    }
  }
  if (with_vjp) {
    out.dgamma = sized_tensor_bound(static_cast<size_t>(l.params));
    if (l.centred) out.dbeta = sized_tensor_bound(static_cast<size_t>(l.params));
    for (int64_t ch = 0; ch < l.params; ++ch) {
      const double sum_gamma = gamma_k(static_cast<double>(per_channel[ch] - 1), u.ua);
      const int64_t terms = per_channel[ch];
      // The kernel's partial sums over the channel's entries exceed the exact magnitudes by at most
      // (1 + u)^terms: they may overflow the accumulator (issue 42: dbeta of dy = +-2^127 in f32 was
      // +inf against exact 0 and a finite bound).
      const double partial = growth(static_cast<double>(terms), u.ua);
      const bool g_over = !std::isfinite(dg_err[ch]) || !(dg_mag[ch] * partial < u.max_a);
      const bool b_over = !(db_mag[ch] * partial < u.max_a);
      finish_element(out.dgamma, ch, {dg_mag[ch], dg_err[ch] + mul_up(sum_gamma, dg_mag[ch]), g_over, sum_hat(dg_hat[ch], terms, u)},
             ref.dgamma[ch], a);
      if (l.centred) finish_element(out.dbeta, ch, {db_mag[ch], mul_up(sum_gamma, db_mag[ch]), b_over, sum_hat(db_mag[ch], terms, u)}, ref.dbeta[ch], a);
    }
  }
  if (l.batch_norm) {
    running_stats_bound(c, ref, rows, counts, hats, a, out);
    inference_bound(c, l, ref, a, round_to_dtype(c.eps, accum), out);
  }
  return out;
}

}  // namespace normcheck
