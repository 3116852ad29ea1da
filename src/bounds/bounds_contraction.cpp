// Bounds for the contracted block (docs/bounds.md section 12), following
// src/kernels/contracted_block.hpp operation by operation.
#include "bounds/bounds_contraction.hpp"

#include "bounds/bounds_model.hpp"
#include "bounds/error_pairs.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// A stored coefficient as an approximation of the exact one: |exact| <= |stored| + e, error e.
Em coefficient(double stored, double e) { return {std::fabs(stored) + e, e, false, std::fabs(stored)}; }

struct RowPairs {
  std::vector<Em> p;  ///< R xbar, against R_hat xbar (exact)
  Em s;               ///< the reciprocal, against the exact 1 / sqrt(|P h|^2 / n + eps)
  std::vector<double> xbar_abs;
  double r64_norm = 0;  ///< upper bound of |R64 xbar|
  double e_norm = 0;    ///< upper bound of |E xbar|, E = R_hat - R64 the storage rounding
};

/// |R_hat xbar|^2 - |T xbar|^2 = xbar^T dG64 xbar + 2 (R64 xbar)^T (E xbar) + |E xbar|^2, bounded with
/// the certified Gram error dG64 of the float64 R and the exact storage rounding E (section 12.2).
double gram_error(const oracle::StoredContraction& s, const oracle::CoefficientError& e, double q_upper, RowPairs& row) {
  const int64_t cols = s.d + 1;
  double g64 = 0;
  for (int64_t p = 0; p < cols; ++p)
    for (int64_t q = 0; q < cols; ++q) g64 += e.dG[p * cols + q] * row.xbar_abs[p] * row.xbar_abs[q];
  double ex2 = 0;
  for (int64_t l = 0; l < s.k; ++l) {
    double ex = 0;
    for (int64_t q = 0; q < cols; ++q) ex += std::fabs(s.R[l * cols + q] - s.R64[l * cols + q]) * row.xbar_abs[q];
    ex2 += ex * ex;
  }
  row.e_norm = std::sqrt(ex2) * kEvaluationSlack;
  row.r64_norm = std::sqrt(q_upper + g64) * kEvaluationSlack;
  return g64 + 2 * row.r64_norm * row.e_norm + row.e_norm * row.e_norm;
}

/// |(R_hat^T R_hat xbar)_q - (T^T T xbar)_q| with the same split.
double gram_column_error(const oracle::StoredContraction& s, const oracle::CoefficientError& e, const RowPairs& row, int64_t q) {
  const int64_t cols = s.d + 1;
  double g64 = 0, e_col = 0, r_col = 0;
  for (int64_t p = 0; p < cols; ++p) g64 += e.dG[q * cols + p] * row.xbar_abs[p];
  for (int64_t l = 0; l < s.k; ++l) {
    const double el = s.R[l * cols + q] - s.R64[l * cols + q];
    e_col += el * el;
    r_col += s.R64[l * cols + q] * s.R64[l * cols + q];
  }
  e_col = std::sqrt(e_col) * kEvaluationSlack;
  r_col = std::sqrt(r_col) * kEvaluationSlack;
  return g64 + e_col * row.r64_norm + r_col * row.e_norm + e_col * row.e_norm;
}

/// p = R_hat xbar and s for row r (contracted_reciprocal).
RowPairs row_pairs(const ContractionCase& c, const oracle::StoredContraction& s, const oracle::CoefficientError& e,
                   const oracle::CertifiedAffineLn& ref, const EmArith& a, DType accum, int64_t r) {
  const int64_t cols = s.d + 1;
  RowPairs row;
  for (int64_t q = 0; q < s.d; ++q) row.xbar_abs.push_back(std::fabs(c.x[r * s.d + q]));
  row.xbar_abs.push_back(1.0);
  Em ss;
  for (int64_t l = 0; l < s.k; ++l) {
    Em p;
    for (int64_t q = 0; q < s.d; ++q) p = a.add(p, a.mul(EmArith::exact(s.R[l * cols + q]), EmArith::exact(c.x[r * s.d + q])));
    p = a.add(p, EmArith::exact(s.R[l * cols + s.d]));
    row.p.push_back(p);
    ss = a.add(ss, a.mul(p, p));
  }
  const double nn = static_cast<double>(s.n);
  const double v = (ref.var[r] + ref.var_rad[r]) * (1 + kRel);
  const double v_low = std::max(0.0, (ref.var[r] - ref.var_rad[r]) * (1 - kRel));
  const double gram = gram_error(s, e, nn * v, row);
  const Em ms = a.div({nn * v, ss.err + gram, ss.over, ss.hat}, s.n);
  const double delta = rstd_relative_error(v, v_low, ms.err, s.eps, a.u);
  const double rstd = (ref.rstd[r] + ref.rstd_rad[r]) * (1 + kRel);
  // The eps floor: the computed mean of squares is >= 0, so fl(v_hat + eps_hat) >= eps_hat and
  // s_hat <= (1 + u) / ((1 - u) sqrt(eps_hat)); the exact s <= 1 / sqrt(eps). Both lie in
  // [0, cap], so |s_hat - s| <= cap even where the variance's error exceeds the variance itself.
  const double eps_hat = round_to_dtype(s.eps, accum);
  const double cap = eps_hat > 0 ? std::max((1 + a.u.ua) / ((1 - a.u.ua) * std::sqrt(eps_hat * (1 - a.u.ua))),
                                            1 / std::sqrt(s.eps)) * kEvaluationSlack
                                 : kInf;
  const double err = std::min(delta < kInf ? rstd * delta : kInf, cap);
  // The computed s_hat <= (1 + u)(1 - u)^(-3/2) / sqrt(eps_hat) in every regime (section 15.1).
  const double s_hat = eps_hat > 0 ? (1 + a.u.ua) / std::pow(1 - a.u.ua, 1.5) / std::sqrt(eps_hat) * kEvaluationSlack : kInf;
  const bool sum_overflows = variance_plus_eps_overflows(ms.mag, ms.err, eps_hat, a.u);
  row.s = {rstd, err, ms.over || sum_overflows || !(err < kInf) || reaches(rstd + err, a.u.max_a), s_hat};
  return row;
}

/// D_hat xbar against D xbar (dot_xbar: d products, then the bias column).
Em numerator(const ContractionCase& c, const oracle::StoredContraction& s, const oracle::CoefficientError& e,
             const EmArith& a, int64_t r, int64_t i) {
  const int64_t cols = s.d + 1;
  Em num;
  for (int64_t q = 0; q < s.d; ++q)
    num = a.add(num, a.mul(coefficient(s.D[i * cols + q], e.dD[i * cols + q]), EmArith::exact(c.x[r * s.d + q])));
  return a.add(num, coefficient(s.D[i * cols + s.d], e.dD[i * cols + s.d]));
}

void finish(TensorBound& t, size_t k, const Em& v, const CertifiedValue& ref, const EmArith& a) {
  const double exact = upper_abs(ref);
  const bool over = v.over || reaches(exact + v.err, a.max_s);
  t.regime[k] = output_regime(exact, v.mag, a.storage) | (over ? kRegimeOverflow : 0);
  t.bound[k] = over ? kInf : with_store(exact, v.err, a.u);
  set_envelope(t, k, v, a.u);
}

/// Element i of a stored affine map: fl_s(init_i + sum_q mat[i][q] in_q) with |in_q| <= in[q].
double affine_hat(const std::vector<double>& mat, const std::vector<double>& init, const std::vector<double>& in, int64_t i,
                  const Units& u) {
  const int64_t len = static_cast<int64_t>(in.size());
  double s = init.empty() ? 0.0 : std::fabs(init[i]);
  for (int64_t q = 0; q < len; ++q) s += product_hat(std::fabs(mat[i * len + q]), in[q], u);
  return stored_hat(sum_hat(s, len + 1, u), u);
}

/// Element q of a stored transposed map: fl_s(sum_j mat[j][q] in_j) with |in_j| <= in[j], mat rows x len.
double transposed_hat(const std::vector<double>& mat, const std::vector<double>& in, int64_t q, int64_t len, const Units& u) {
  double s = 0;
  for (size_t j = 0; j < in.size(); ++j) s += product_hat(std::fabs(mat[j * len + q]), in[j], u);
  return stored_hat(sum_hat(s, static_cast<int64_t>(in.size()), u), u);
}

}  // namespace

ContractionBound original_envelope(const ContractionCase& c, DType accum) {
  const AffineLnAffine& blk = c.block;
  const BoundModel model{StatsModel::two_pass, c.dtype, accum, SumOrder::sequential, -1, 0};
  const Units u = units_of(model);
  const double eps_hat = round_to_dtype(blk.eps, accum);
  // Every stored h is unknown but the two-pass normalisation bounds z_hat, and eps bounds r_hat.
  const double z = normalized_hat(blk.n, eps_hat, u), r = eps_reciprocal_hat(eps_hat, u);
  const auto gamma = [&](int64_t j) { return blk.gamma.empty() ? 1.0 : blk.gamma[j]; };
  const auto beta = [&](int64_t j) { return blk.beta.empty() ? 0.0 : blk.beta[j]; };
  std::vector<double> ln_hat(static_cast<size_t>(blk.n));
  for (int64_t j = 0; j < blk.n; ++j) ln_hat[j] = std::fabs(beta(j)) + shifted_radius(z, gamma(j), beta(j), u);
  ContractionBound out;
  out.f = sized_tensor_bound(static_cast<size_t>(c.rows * blk.m));
  for (size_t k = 0; k < out.f.bound.size(); ++k) out.f.bound[k] = kInf;
  for (int64_t i = 0; i < blk.m; ++i) {
    const double f = affine_hat(blk.W, blk.b, ln_hat, i, u);
    for (int64_t row = 0; row < c.rows; ++row) out.f.env_radius[row * blk.m + i] = f;
  }
  if (c.dy.empty()) return out;
  out.dx = sized_tensor_bound(static_cast<size_t>(c.rows * blk.d));
  for (size_t k = 0; k < out.dx.bound.size(); ++k) out.dx.bound[k] = kInf;
  std::vector<double> dy(static_cast<size_t>(blk.m)), g(static_cast<size_t>(blk.n)), zs(g.size(), z), dh(g.size());
  for (int64_t row = 0; row < c.rows; ++row) {
    for (int64_t i = 0; i < blk.m; ++i) dy[i] = std::fabs(c.dy[row * blk.m + i]);
    for (int64_t j = 0; j < blk.n; ++j)  // du = W^T dy stored, then g = du gamma
      g[j] = product_hat(transposed_hat(blk.W, dy, j, blk.n, u), std::fabs(gamma(j)), u);
    backward_dx_hats(g.data(), zs.data(), blk.n, r, false, u, dh.data());
    for (int64_t q = 0; q < blk.d; ++q) out.dx.env_radius[row * blk.d + q] = transposed_hat(blk.A, dh, q, blk.d, u);
  }
  return out;
}

ContractionBound contracted_bound(const ContractionCase& c, const oracle::StoredContraction& s,
                                  const oracle::CoefficientError& e, const oracle::CertifiedAffineLn& ref, DType accum) {
  const BoundModel model{StatsModel::two_pass, c.dtype, accum, SumOrder::sequential, -1, 0};
  const EmArith a{units_of(model), dtype_info(c.dtype).max_finite, c.dtype};
  const int64_t cols = s.d + 1;
  ContractionBound out;
  out.f = sized_tensor_bound(ref.f.size());
  if (!ref.dx.empty()) out.dx = sized_tensor_bound(ref.dx.size());
  for (int64_t r = 0; r < c.rows; ++r) {
    const RowPairs row = row_pairs(c, s, e, ref, a, accum, r);
    Em t;
    for (int64_t i = 0; i < s.m; ++i) {
      const Em num = numerator(c, s, e, a, r, i);
      const Em f = a.add(a.mul(num, row.s), coefficient(s.c[i], e.dc[i]));
      finish(out.f, static_cast<size_t>(r * s.m + i), f, ref.f[r * s.m + i], a);
      if (!ref.dx.empty()) t = a.add(t, a.mul(EmArith::exact(c.dy[r * s.m + i]), num));
    }
    if (ref.dx.empty()) continue;
    const Em coef = a.mul(a.div(a.mul(a.mul(row.s, row.s), row.s), s.n), t);
    for (int64_t q = 0; q < s.d; ++q) {
      Em ev, g;
      for (int64_t i = 0; i < s.m; ++i)
        ev = a.add(ev, a.mul(coefficient(s.D[i * cols + q], e.dD[i * cols + q]), EmArith::exact(c.dy[r * s.m + i])));
      for (int64_t l = 0; l < s.k; ++l) g = a.add(g, a.mul(EmArith::exact(s.R[l * cols + q]), row.p[l]));
      const double gram = gram_column_error(s, e, row, q);  // (R_hat^T R_hat xbar)_q against (T^T T xbar)_q
      g = {g.mag + gram, g.err + gram, g.over, g.hat};
      const Em dx = a.add(a.mul(row.s, ev), a.mul(coef, g));
      finish(out.dx, static_cast<size_t>(r * s.d + q), dx, ref.dx[r * s.d + q], a);
    }
  }
  return out;
}

}  // namespace normcheck
