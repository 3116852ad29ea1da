#include "bounds/bounds_budget.hpp"

#include <algorithm>
#include <cmath>

#include "bounds/bounds.hpp"
#include "bounds/error_pairs.hpp"

namespace normcheck {
namespace {

constexpr double kUp = 1 + 0x1p-40;  // relative inflation of double evaluations of bounds (n <= 2^12 terms)

double sqrt_n(int64_t n) { return std::sqrt(static_cast<double>(n)); }

/// Per-element absolute underflow allowance of one stored dot product of length k.
double dot_eta(const BudgetUnits& u, int64_t k) { return static_cast<double>(k + 1) * u.eta_a + u.eta_s; }

}  // namespace

BudgetUnits budget_units(DType storage, DType accum) {
  const DTypeInfo &s = dtype_info(storage), &a = dtype_info(accum);
  BudgetUnits u;
  u.storage = storage;
  u.accum = accum;
  const bool rounds = storage != accum;
  u.us = rounds ? s.unit_roundoff : 0;
  u.eta_s = rounds ? s.denorm_min / 2 : 0;
  u.ua = a.unit_roundoff;
  u.eta_a = a.denorm_min / 2;
  u.exact_products = 2 * s.precision <= a.precision;
  return u;
}

double tanh_relative_error(const BudgetUnits& u) { return 8 * u.ua; }

double frobenius_up(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s) * (1 + static_cast<double>(v.size() + 4) * 0x1p-52);
}

double certified_gram_defect(const std::vector<double>& C, int64_t n) {
  // Binary128 (p = 113): a product of two doubles is exact; the sum of n products is within
  // gamma_n(2^-113) sum |c_ki c_kj|; subtracting delta_ij rounds once more (2^-113 relative).
  const double g113 = gamma_k(static_cast<double>(n + 1), 0x1p-113);
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      __float128 s = 0, a = 0;
      for (int64_t k = 0; k < n; ++k) {
        const __float128 p = static_cast<__float128>(C[k * n + i]) * static_cast<__float128>(C[k * n + j]);
        s += p;
        a += p < 0 ? -p : p;
      }
      if (i == j) s -= 1;
      const double e = std::fabs(static_cast<double>(s)) * kUp + g113 * static_cast<double>(a) * kUp + 0x1p-1074;
      total += e * e;
    }
  return std::sqrt(total) * kUp;
}

double cayley_solve_error(const BudgetUnits& u, int64_t n, double h, double s_fro, const kernels::CayleyDiagnostics& d) {
  // ||M^ - M||_F = ||N^ - N||_F <= u_m (h/2) ||S||_F (u_m = 0 when the products are exact);
  // (M^ + dM_j) c~_j = n^_j, |dM_j| <= gamma_3n |L^||U^| (Higham Thm 9.4); ||M^-1||_2 <= 1.
  const double um = u.exact_products ? 0.0 : u.ua;
  const double dm = (um * 0.5 * h * s_fro + static_cast<double>(n) * u.eta_a) * kUp;
  const double a = dm + gamma_k(3.0 * static_cast<double>(n), u.ua) * d.lu_abs_fro * kUp;
  if (!(a < 1) || d.singular) return HUGE_VAL;
  const double e = (dm + a * sqrt_n(n)) / (1 - a) * kUp;
  return (e + u.us * (sqrt_n(n) + e) + static_cast<double>(n) * u.eta_s) * kUp;
}

double cayley_inverse_error(const BudgetUnits& u, int64_t n, double h, double s_fro, const kernels::CayleyDiagnostics& d) {
  // ||X^ - M^-1||_F <= (||M^ - M|| + gamma_3n G) ||X^||_F; C~ - C = (X^ - M^-1) N^ + M^-1 (N^ - N)
  // + (fl(X^ N^) - X^ N^), the last within gamma_n ||X^||_F ||N^||_F.
  if (d.singular) return HUGE_VAL;
  const double um = u.exact_products ? 0.0 : u.ua;
  const double dm = (um * 0.5 * h * s_fro + static_cast<double>(n) * u.eta_a) * kUp;
  const double ex = (dm + gamma_k(3.0 * static_cast<double>(n), u.ua) * d.lu_abs_fro) * d.inverse_fro * kUp;
  const double gn = gamma_k(static_cast<double>(n), u.ua);
  const double e = (ex * d.rhs_fro + dm + gn * d.inverse_fro * d.rhs_fro + static_cast<double>(n * n) * u.eta_a) * kUp;
  return (e + u.us * (sqrt_n(n) + e) + static_cast<double>(n) * u.eta_s) * kUp;
}

double defect_from_error(double e) { return (2 * e + e * e) * kUp; }

std::vector<double> dissipation_error_bounds(const BudgetUnits& u, const std::vector<double>& theta, const std::vector<double>& v) {
  using bounds_detail::Em;
  const auto n = static_cast<int64_t>(v.size());
  const bounds_detail::EmArith ar{bounds_detail::Units{u.us, u.ua, u.eta_s, u.eta_a, u.us > 0, dtype_info(u.accum).max_finite, 0,
                                        SumOrder::sequential},
                                  dtype_info(u.storage).max_finite, u.storage};
  std::vector<Em> d;
  Em vv{}, kappa{};
  double vv_exact = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double mag = std::min(1.0, std::fabs(theta[k]));
    d.push_back({mag, tanh_relative_error(u) * mag + u.eta_a, false});
    const Em v2 = ar.mul(bounds_detail::EmArith::exact(v[k]), bounds_detail::EmArith::exact(v[k]));
    vv = ar.add(vv, v2);
    kappa = ar.add(kappa, ar.mul(d.back(), v2));
    vv_exact += v[k] * v[k];
  }
  // q = fl(2 / vv^): vv >= s_lo; |2/vv^ - 2/vv| <= 2 e / ((s_lo - e) s_lo), then one rounding.
  const double s_lo = vv_exact * (1 - static_cast<double>(n + 2) * 0x1p-52);
  if (!(s_lo > vv.err)) return std::vector<double>(static_cast<size_t>(n * n), HUGE_VAL);
  const double qm = 2 / s_lo * kUp, qe0 = 2 * vv.err / ((s_lo - vv.err) * s_lo) * kUp;
  const Em q{qm, qe0 + u.ua * (qm + qe0) + u.eta_a, false};
  const Em qk = ar.mul(q, kappa);
  std::vector<double> out(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) {
      const Em outer = ar.mul(ar.mul(q, bounds_detail::EmArith::exact(v[i])), bounds_detail::EmArith::exact(v[j]));
      Em e = ar.mul(outer, ar.add(ar.add(qk, d[i]), d[j]));
      if (i == j) e = ar.add(e, d[i]);
      const Em st = ar.store(e);
      out[i * n + j] = out[j * n + i] = st.over ? HUGE_VAL : st.err * kUp;
    }
  return out;
}

StepBound step_bound(const BudgetUnits& u, const StepNorms& s, double X) {
  const double gn = gamma_k(static_cast<double>(s.n), u.ua), gm = gamma_k(static_cast<double>(s.m), u.ua);
  const double rn = sqrt_n(s.n);
  const double Z = ((1 + u.us) * (s.c2 + gn * s.cF) * X + rn * dot_eta(u, s.n)) * kUp;
  const double W = ((1 + u.us) * (s.l2 + gn * s.lF) * Z + rn * dot_eta(u, s.n)) * kUp;
  const double Pe = (((1 + u.us) * (1 + u.ua) * (1 + gm) - 1) * s.port_abs + rn * (dot_eta(u, s.m) + u.eta_a)) * kUp;
  const double S = (W + s.port + Pe) * kUp;
  StepBound b;
  b.next = ((1 + u.ua) * (1 + u.us) * S + rn * (u.eta_s + u.eta_a)) * kUp;
  b.rounding = (s.l2 * (Z - s.c2 * X) + (W - s.l2 * Z) + Pe + (b.next - S)) * kUp;
  return b;
}

StepBound grad_step_bound(const BudgetUnits& u, const StepNorms& s, double G) {
  const double gn = gamma_k(static_cast<double>(s.n), u.ua), rn = sqrt_n(s.n);
  const double A = ((1 + u.us) * (s.l2 + gn * s.lF) * G + rn * dot_eta(u, s.n)) * kUp;
  StepBound b;
  b.next = ((1 + u.us) * (s.c2 + gn * s.cF) * A + rn * dot_eta(u, s.n)) * kUp;
  b.rounding = (s.c2 * (A - s.l2 * G) + (b.next - s.c2 * A)) * kUp;
  return b;
}

double port_grad_bound(const BudgetUnits& u, int64_t n, int64_t m, double h, double hb, double G) {
  const double gn = gamma_k(static_cast<double>(n), u.ua), rm = sqrt_n(m);
  return ((1 + u.us) * ((1 + u.ua) * ((1 + gn) * hb * G + h * rm * dot_eta(u, n)) + rm * u.eta_a) + rm * u.eta_s) * kUp;
}

double lambda_upper_double(const std::vector<double>& theta) {
  double m = 0;
  for (double t : theta) m = std::max(m, std::tanh(std::fabs(t)));
  return std::min(1.0, m * (1 + 0x1p-48));
}

}  // namespace normcheck
