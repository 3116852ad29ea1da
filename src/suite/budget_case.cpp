#include "suite/budget_case.hpp"

#include <algorithm>
#include <cmath>

#include "core/bounds_budget.hpp"
#include "core/tolerance_table.hpp"
#include "kernels/port_hamiltonian.hpp"
#include "kernels/storage_io.hpp"
#include "oracles/certified_port_hamiltonian.hpp"

namespace normcheck {
namespace {

BudgetCheck& check(BudgetCaseResult& r, const std::string& variant, const std::string& property, const std::string& output) {
  for (BudgetCheck& c : r.checks)
    if (c.variant == variant && c.property == property) return c;
  r.checks.push_back({variant, property, output, {}, false, 0, 0, 0, 0});
  return r.checks.back();
}

/// Entrywise judgement of a stored matrix against certified values with per-entry bounds.
void judge_entries(BudgetCheck& k, const std::vector<double>& got, const oracle::CertifiedMatrix& ref,
                   const std::vector<double>& bound, DType dt) {
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref.a[i], dt, bound[i]);
    k.acc.add(e, static_cast<int64_t>(i));
    if (e.violation || e.nonfinite_mismatch) k.failed = true;
    if (e.uncertified) ++k.uncertified;
  }
}

void note_ratio(BudgetCheck& k, double value, double bound) {
  const double tol = budget_tolerance_for(k.variant, k.property).max_ratio;
  k.max_value = std::max(k.max_value, value);
  k.max_bound = std::max(k.max_bound, bound);
  const double ratio = bound > 0 ? value / bound : (value > 0 ? HUGE_VAL : 0.0);
  k.max_ratio = std::max(k.max_ratio, ratio);
  if (!(ratio <= tol)) k.failed = true;
}

/// ||v||_2 of exact doubles: (lower, upper), inf when non-finite.
std::pair<double, double> norm2(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  if (!std::isfinite(s)) return {HUGE_VAL, HUGE_VAL};
  const double r = std::sqrt(s), m = static_cast<double>(v.size() + 4) * 0x1p-52;
  return {r * (1 - m), r * (1 + m)};
}

template <class S>
kernels::CayleyDiagnostics run_cayley(const std::string& name, const std::vector<S>& Ss, int64_t n, S h, std::vector<S>& C) {
  C.resize(static_cast<size_t>(n * n));
  if (name == "cayley_half_step") return kernels::cayley_half_step<S>(Ss.data(), n, h, C.data());
  if (name == "cayley_explicit_inverse") return kernels::cayley_explicit_inverse<S>(Ss.data(), n, h, C.data());
  return kernels::cayley_solve<S>(Ss.data(), n, h, C.data());
}

/// Cayley kernel `name` at one step: certified defect against its a priori bound, entries when judged.
template <class S>
std::vector<double> cayley_step(BudgetCaseResult& r, const std::string& name, const PhStep& p, const BudgetUnits& u,
                                const oracle::CertifiedMatrix* ref, double& eps_c) {
  const PhCase& c = r.c;
  std::vector<S> C;
  const auto d = run_cayley<S>(name, to_storage<S>(p.S), p.n, dtype_traits<S>::from_double(c.h), C);
  const std::vector<double> Cd = to_double(C);
  const double s_fro = frobenius_up(p.S);
  eps_c = name == "cayley_explicit_inverse" ? cayley_inverse_error(u, p.n, c.h, s_fro, d) : cayley_solve_error(u, p.n, c.h, s_fro, d);
  BudgetCheck& k = check(r, name, "orthogonality_defect", "C");
  note_ratio(k, certified_gram_defect(Cd, p.n), defect_from_error(eps_c));
  if (ref) judge_entries(k, Cd, *ref, std::vector<double>(Cd.size(), eps_c), c.dtype);
  return Cd;
}

template <class S>
BudgetCaseResult run_typed(const PhCase& c, const BudgetCaseOptions& o) {
  BudgetCaseResult r;
  r.c = c;
  const BudgetUnits u = budget_units(c.dtype, dtype_traits<default_accum_t<S>>::id);
  const oracle::CertifiedPhStream ref = oracle::certified_ph_stream(c);
  r.oracle_precision_bits = ref.precision_bits;
  BudgetCheck& ok = check(r, "oracle", "exact_budget", "norm");
  if (!ref.budget_holds || !ref.contractive) ok.failed = true;
  for (size_t t = 1; t < ref.norm_lo.size(); ++t) note_ratio(ok, ref.norm_hi[t], ref.budget_lo[t]);  // t = 0: equality
  const double slack_tol = budget_tolerance_for("stream", "slack").max_ratio;
  std::vector<S> x = to_storage<S>(c.x0);
  const S h = dtype_traits<S>::from_double(c.h);
  double fpb = norm2(c.x0).second, fwd = 0;
  r.fp_budget.push_back(fpb);
  r.kernel_norms.push_back(norm2(c.x0).first);
  for (size_t t = 0; t < ref.norm_lo.size(); ++t) {
    r.oracle_norms.push_back(0.5 * (ref.norm_lo[t] + ref.norm_hi[t]));
    r.exact_budget.push_back(0.5 * (ref.budget_lo[t] + ref.budget_hi[t]));
  }
  for (int64_t t = 0; t < c.depth; ++t) {
    const PhStep p = ph_step_params(c, t);
    const bool judged = p.n <= o.judge_max_n && (t == 0 || t == c.depth - 1);
    const oracle::CertifiedMatrix cref = judged ? oracle::certified_cayley(p, c.h, c.dtype) : oracle::CertifiedMatrix{};
    if (judged && !cref.structure_certified) ok.failed = true;  // the oracle's C must be orthogonal to its precision
    double eps_c = 0, eps_unused = 0;
    const std::vector<double> Cd = cayley_step<S>(r, o.cayley, p, u, judged ? &cref : nullptr, eps_c);
    if (o.explicit_inverse) cayley_step<S>(r, "cayley_explicit_inverse", p, u, judged ? &cref : nullptr, eps_unused);
    std::vector<S> L(static_cast<size_t>(p.n * p.n));
    const std::vector<S> theta = to_storage<S>(p.theta), v = to_storage<S>(p.v);
    if (o.dissipation == "dissipation_hardtanh") kernels::dissipation_hardtanh<S>(theta.data(), v.data(), p.n, L.data());
    else kernels::dissipation<S>(theta.data(), v.data(), p.n, L.data());
    const std::vector<double> Ld = to_double(L), lbounds = dissipation_error_bounds(u, p.theta, p.v);
    BudgetCheck& kd = check(r, o.dissipation, "entrywise_error", "Lambda");
    const double eps_l = frobenius_up(lbounds), lam = lambda_upper_double(p.theta);
    kd.max_value = std::max(kd.max_value, lam + eps_l);  // certified bound of ||Lambda^||_2 (reported)
    if (judged) {
      const oracle::CertifiedMatrix lref = oracle::certified_dissipation(p, c.dtype);
      if (!lref.structure_certified) ok.failed = true;
      judge_entries(kd, Ld, lref, lbounds, c.dtype);
    }
    double port_abs = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < p.m; ++j) s += std::fabs(p.B[i * p.m + j] * p.u[j]);
      port_abs += s * s;
    }
    StepNorms sn{p.n, p.m, std::sqrt(1 + certified_gram_defect(Cd, p.n)) * (1 + 0x1p-50), frobenius_up(Cd),
                 lam + eps_l, frobenius_up(Ld), ref.port_hi[t], c.h * std::sqrt(port_abs) * (1 + 0x1p-40)};
    const double Xu = norm2(to_double(x)).second;
    const StepBound sb = step_bound(u, sn, Xu);
    fwd = lam * fwd + (eps_l * sn.c2 + lam * eps_c) * Xu + sb.rounding;
    StepNorms budget_sn = sn;
    budget_sn.l2 = std::max(1.0, sn.l2);
    fpb = step_bound(u, budget_sn, fpb).next;
    std::vector<S> next(x.size());
    const std::vector<S> Ls = L, Cs = to_storage<S>(Cd), Bs = to_storage<S>(p.B), us = to_storage<S>(p.u);
    if (o.step == "ph_step_residual_leak")
      kernels::ph_step_residual_leak<S>(Cs.data(), Ls.data(), Bs.data(), us.data(), p.n, p.m, h, x.data(), next.data());
    else kernels::ph_step<S>(Cs.data(), Ls.data(), Bs.data(), us.data(), p.n, p.m, h, x.data(), next.data());
    x = std::move(next);
    const auto nx = norm2(to_double(x));
    r.kernel_norms.push_back(nx.first);
    r.fp_budget.push_back(fpb);
    if (!std::isfinite(nx.first) && r.overflow_depth < 0) r.overflow_depth = t + 1;
    note_ratio(check(r, "stream", "fp_budget", "norm"), nx.first, fpb);
    if (r.slack_depth < 0 && fpb / r.exact_budget[t + 1] - 1 > slack_tol) r.slack_depth = t + 1;
  }
  BudgetCheck& kf = check(r, "stream", "forward_error", "x_L");
  const std::vector<double> xd = to_double(x);
  for (size_t i = 0; i < xd.size(); ++i) {
    const ElementError e = measure_element(xd[i], ref.x_final[i], c.dtype, fwd);
    kf.acc.add(e, static_cast<int64_t>(i));
    if (e.violation || e.nonfinite_mismatch) kf.failed = true;
    if (e.uncertified) ++kf.uncertified;
  }
  double err2 = 0;  // observed ||x^_L - x_L|| against the oracle's centers (their radius is far below the bound)
  for (size_t i = 0; i < xd.size(); ++i) err2 += (xd[i] - ref.x_final[i].approx()) * (xd[i] - ref.x_final[i].approx());
  note_ratio(kf, std::sqrt(err2), fwd);
  return r;
}

}  // namespace

bool BudgetCaseResult::failed() const {
  return std::any_of(checks.begin(), checks.end(), [](const BudgetCheck& k) { return k.failed; });
}

BudgetCaseResult run_budget_case(const PhCase& c, const BudgetCaseOptions& o) {
  switch (c.dtype) {
    case DType::f16: return run_typed<f16>(c, o);
    case DType::bf16: return run_typed<bf16>(c, o);
    case DType::f32: return run_typed<float>(c, o);
    case DType::f64: break;
  }
  return run_typed<double>(c, o);
}

}  // namespace normcheck
