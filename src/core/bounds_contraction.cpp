// Bounds for the contracted block (docs/bounds.md section 12), following
// src/kernels/contracted_block.hpp operation by operation.
#include "core/bounds_contraction.hpp"

#include "core/bounds_model.hpp"
#include "core/error_pairs.hpp"

namespace normcheck {

using namespace bounds_detail;

namespace {

/// A stored coefficient as an approximation of the exact one: |exact| <= |stored| + e, error e.
Em coefficient(double stored, double e) { return {std::fabs(stored) + e, e, false}; }

struct RowPairs {
  std::vector<Em> p;  ///< R xbar, against R_hat xbar (exact)
  Em s;               ///< the reciprocal, against the exact 1 / sqrt(|P h|^2 / n + eps)
  std::vector<double> xbar_abs;
};

/// p = R_hat xbar and s for row r (contracted_reciprocal).
RowPairs row_pairs(const ContractionCase& c, const oracle::StoredContraction& s, const oracle::CoefficientError& e,
                   const oracle::CertifiedAffineLn& ref, const EmArith& a, int64_t r) {
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
  // |R_hat xbar|^2 - |T xbar|^2 = xbar^T (R_hat^T R_hat - T^T T) xbar.
  double gram = 0;
  for (int64_t p = 0; p < cols; ++p)
    for (int64_t q = 0; q < cols; ++q) gram += e.dG[p * cols + q] * row.xbar_abs[p] * row.xbar_abs[q];
  const double nn = static_cast<double>(s.n);
  const double v = (ref.var[r] + ref.var_rad[r]) * (1 + kRel);
  const double v_low = std::max(0.0, (ref.var[r] - ref.var_rad[r]) * (1 - kRel));
  const Em ms = a.div({nn * v, ss.err + gram, ss.over}, s.n);
  const double delta = rstd_relative_error(v, v_low, ms.err, s.eps, a.u);
  const double rstd = (ref.rstd[r] + ref.rstd_rad[r]) * (1 + kRel);
  row.s = {rstd, rstd * delta, ms.over || !(delta < kInf) || reaches(rstd * (1 + delta), a.u.max_a)};
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
}

}  // namespace

ContractionBound contracted_bound(const ContractionCase& c, const oracle::StoredContraction& s,
                                  const oracle::CoefficientError& e, const oracle::CertifiedAffineLn& ref, DType accum) {
  const BoundModel model{StatsModel::two_pass, c.dtype, accum, SumOrder::sequential, -1, 0};
  const EmArith a{units_of(model), dtype_info(c.dtype).max_finite, c.dtype};
  const int64_t cols = s.d + 1;
  ContractionBound out;
  out.f = {std::vector<double>(ref.f.size()), std::vector<uint8_t>(ref.f.size())};
  if (!ref.dx.empty()) out.dx = {std::vector<double>(ref.dx.size()), std::vector<uint8_t>(ref.dx.size())};
  for (int64_t r = 0; r < c.rows; ++r) {
    const RowPairs row = row_pairs(c, s, e, ref, a, r);
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
      // (R_hat^T R_hat xbar)_q - (T^T T xbar)_q = sum_p dG_qp xbar_p.
      double gram = 0;
      for (int64_t p = 0; p < cols; ++p) gram += e.dG[q * cols + p] * row.xbar_abs[p];
      g = {g.mag + gram, g.err + gram, g.over};
      const Em dx = a.add(a.mul(row.s, ev), a.mul(coef, g));
      finish(out.dx, static_cast<size_t>(r * s.d + q), dx, ref.dx[r * s.d + q], a);
    }
  }
  return out;
}

}  // namespace normcheck
