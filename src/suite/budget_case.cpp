#include "suite/budget_case.hpp"

#include <algorithm>
#include <cmath>

#include "bounds/bounds_budget.hpp"
#include "bounds/tolerance_table.hpp"
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

/// A final state (or gradient) judged entrywise against the certified one with the normwise bound
/// `bound` (loose per component), and the observed ||got - exact|| against the oracle's centers
/// (their radius is far below the bound).
void judge_final(BudgetCheck& k, const std::vector<double>& got, const std::vector<CertifiedValue>& ref, DType dt, double bound) {
  double err2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref[i], dt, bound);
    k.acc.add(e, static_cast<int64_t>(i));
    if (e.violation || e.nonfinite_mismatch) k.failed = true;
    if (e.uncertified) ++k.uncertified;
    err2 += (got[i] - ref[i].approx()) * (got[i] - ref[i].approx());
  }
  note_ratio(k, std::sqrt(err2), bound);
}

template <class S>
kernels::CayleyDiagnostics run_cayley(const std::string& name, const std::vector<S>& Ss, int64_t n, S h, std::vector<S>& C) {
  C.resize(static_cast<size_t>(n * n));
  if (name == "cayley_half_step") return kernels::cayley_half_step<S>(Ss.data(), n, h, C.data());
  if (name == "cayley_explicit_inverse") return kernels::cayley_explicit_inverse<S>(Ss.data(), n, h, C.data());
  return kernels::cayley_solve<S>(Ss.data(), n, h, C.data());
}

/// A Cayley kernel's stored C, its a priori ||C^ - C||_F and its certified orthogonality defect.
struct CayleyResult {
  std::vector<double> C;
  double eps = 0, defect = 0;
};

template <class S>
CayleyResult cayley_kernel(const std::string& name, const PhCase& c, const PhStep& p, const BudgetUnits& u) {
  std::vector<S> C;
  const auto d = run_cayley<S>(name, to_storage<S>(p.S), p.n, dtype_traits<S>::from_double(c.h), C);
  CayleyResult k{to_double(C), 0, 0};
  const double s_fro = frobenius_up(p.S);
  k.eps = name == "cayley_explicit_inverse" ? cayley_inverse_error(u, p.n, c.h, s_fro, d) : cayley_solve_error(u, p.n, c.h, s_fro, d);
  k.defect = certified_gram_defect(k.C, p.n);
  return k;
}

/// Certified defect against its a priori bound, entries when judged.
void judge_cayley(BudgetCaseResult& r, const std::string& name, const CayleyResult& k, const oracle::CertifiedMatrix* ref) {
  BudgetCheck& chk = check(r, name, "orthogonality_defect", "C");
  note_ratio(chk, k.defect, defect_from_error(k.eps));
  if (ref) judge_entries(chk, k.C, *ref, std::vector<double>(k.C.size(), k.eps), r.c.dtype);
}

/// The stored matrices of one step (the stream's Cayley and dissipation kernels) and the norm data
/// the forward and backward bounds need (StepNorms without the port terms).
struct StepMatrices {
  CayleyResult cayley;
  std::vector<double> L, lbounds;
  double eps_l = 0, lam = 0;
  StepNorms sn;
};

template <class S>
StepMatrices step_matrices(const PhCase& c, const BudgetCaseOptions& o, const PhStep& p, const BudgetUnits& u) {
  StepMatrices m;
  m.cayley = cayley_kernel<S>(o.cayley, c, p, u);
  std::vector<S> L(static_cast<size_t>(p.n * p.n));
  const std::vector<S> theta = to_storage<S>(p.theta), v = to_storage<S>(p.v);
  if (o.dissipation == "dissipation_hardtanh") kernels::dissipation_hardtanh<S>(theta.data(), v.data(), p.n, L.data());
  else kernels::dissipation<S>(theta.data(), v.data(), p.n, L.data());
  m.L = to_double(L);
  m.lbounds = dissipation_error_bounds(u, p.theta, p.v);
  m.eps_l = frobenius_up(m.lbounds);
  m.lam = lambda_upper_double(p.theta);
  m.sn = StepNorms{p.n, p.m, std::sqrt(1 + m.cayley.defect) * (1 + 0x1p-50), frobenius_up(m.cayley.C), m.lam + m.eps_l, frobenius_up(m.L),
                   0, 0};
  return m;
}

/// Step matrices kept for the backward stream up to this many entries (else recomputed).
constexpr int64_t kCachedStepEntries = int64_t{1} << 21;

template <class S>
void run_forward(BudgetCaseResult& r, const BudgetCaseOptions& o, const BudgetUnits& u, std::vector<StepMatrices>& cache) {
  const PhCase& c = r.c;
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
  const bool keep = o.backward && c.n * c.n * c.depth <= kCachedStepEntries;
  for (int64_t t = 0; t < c.depth; ++t) {
    const PhStep p = ph_step_params(c, t);
    const bool judged = p.n <= o.judge_max_n && (t == 0 || t == c.depth - 1);
    const oracle::CertifiedMatrix cref = judged ? oracle::certified_cayley(p, c.h, c.dtype) : oracle::CertifiedMatrix{};
    if (judged && !cref.structure_certified) ok.failed = true;  // the oracle's C must be orthogonal to its precision
    StepMatrices m = step_matrices<S>(c, o, p, u);
    judge_cayley(r, o.cayley, m.cayley, judged ? &cref : nullptr);
    if (o.explicit_inverse) judge_cayley(r, "cayley_explicit_inverse", cayley_kernel<S>("cayley_explicit_inverse", c, p, u), judged ? &cref : nullptr);
    BudgetCheck& kd = check(r, o.dissipation, "entrywise_error", "Lambda");
    kd.max_value = std::max(kd.max_value, m.lam + m.eps_l);  // certified bound of ||Lambda^||_2 (reported)
    if (judged) {
      const oracle::CertifiedMatrix lref = oracle::certified_dissipation(p, c.dtype);
      if (!lref.structure_certified) ok.failed = true;
      judge_entries(kd, m.L, lref, m.lbounds, c.dtype);
    }
    double port_abs = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < p.m; ++j) s += std::fabs(p.B[i * p.m + j] * p.u[j]);
      port_abs += s * s;
    }
    StepNorms sn = m.sn;
    sn.port = ref.port_hi[t];
    sn.port_abs = c.h * std::sqrt(port_abs) * (1 + 0x1p-40);
    const double Xu = norm2(to_double(x)).second;
    const StepBound sb = step_bound(u, sn, Xu);
    fwd = m.lam * fwd + (m.eps_l * sn.c2 + m.lam * m.cayley.eps) * Xu + sb.rounding;
    StepNorms budget_sn = sn;
    budget_sn.l2 = std::max(1.0, sn.l2);
    fpb = step_bound(u, budget_sn, fpb).next;
    std::vector<S> next(x.size());
    const std::vector<S> Ls = to_storage<S>(m.L), Cs = to_storage<S>(m.cayley.C), Bs = to_storage<S>(p.B), us = to_storage<S>(p.u);
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
    if (keep) cache.push_back(std::move(m));
  }
  judge_final(check(r, "stream", "forward_error", "x_L"), to_double(x), ref.x_final, c.dtype, fwd);
}

template <class S>
void run_vjp_kernel(const std::string& name, const StepMatrices& m, const PhStep& p, S h, const std::vector<S>& g, std::vector<S>& gx,
                    std::vector<S>& gu) {
  const std::vector<S> Ls = to_storage<S>(m.L), Cs = to_storage<S>(m.cayley.C), Bs = to_storage<S>(p.B);
  gx.assign(g.size(), S{});
  gu.assign(static_cast<size_t>(p.m), S{});
  if (name == "ph_step_vjp_untransposed")
    kernels::ph_step_vjp_untransposed<S>(Cs.data(), Ls.data(), Bs.data(), p.n, p.m, h, g.data(), gx.data(), gu.data());
  else if (name == "ph_step_vjp_residual_leak")
    kernels::ph_step_vjp_residual_leak<S>(Cs.data(), Ls.data(), Bs.data(), p.n, p.m, h, g.data(), gx.data(), gu.data());
  else kernels::ph_step_vjp<S>(Cs.data(), Ls.data(), Bs.data(), p.n, p.m, h, g.data(), gx.data(), gu.data());
}

/// The backward stream (docs/bounds.md section 14.7): the VJP kernel from g_L = ph_cotangent(c)
/// down to dL/dx_0 on the stream's stored matrices (cached by the forward, or recomputed), against
/// the floating-point gradient budget, the port-gradient bound and the certified backward stream.
template <class S>
void run_backward(BudgetCaseResult& r, const BudgetCaseOptions& o, const BudgetUnits& u, const std::vector<StepMatrices>& cache) {
  const PhCase& c = r.c;
  const oracle::CertifiedPhBackward ref = oracle::certified_ph_backward(c);
  r.oracle_precision_bits = std::max(r.oracle_precision_bits, ref.precision_bits);
  BudgetCheck& ok = check(r, "oracle", "exact_grad_budget", "grad");
  if (!ref.budget_holds || !ref.port_budget_holds || !ref.contractive) ok.failed = true;
  const auto L = static_cast<size_t>(c.depth);
  for (size_t t = 0; t < L; ++t) {
    note_ratio(ok, ref.norm_hi[t], ref.norm_lo[L]);
    note_ratio(ok, ref.port_hi[t], ref.port_budget_lo[t]);
  }
  const std::vector<double> gL = ph_cotangent(c);
  std::vector<S> g = to_storage<S>(gL), gx, gu;
  const S h = dtype_traits<S>::from_double(c.h);
  double Gb = norm2(gL).second, err = 0;
  std::vector<double> knorms{norm2(gL).first}, budget{Gb};
  for (int64_t t = c.depth - 1; t >= 0; --t) {
    const PhStep p = ph_step_params(c, t);
    StepMatrices fresh;
    if (cache.empty()) fresh = step_matrices<S>(c, o, p, u);
    const StepMatrices& m = cache.empty() ? fresh : cache[static_cast<size_t>(t)];
    const double Gu = norm2(to_double(g)).second;
    err = m.lam * err + (m.eps_l * m.sn.c2 + m.lam * m.cayley.eps) * Gu + grad_step_bound(u, m.sn, Gu).rounding;
    const double port_budget = port_grad_bound(u, p.n, p.m, c.h, c.h * frobenius_up(p.B) * (1 + 0x1p-50), Gb);
    StepNorms budget_sn = m.sn;
    budget_sn.l2 = std::max(1.0, m.sn.l2);
    Gb = grad_step_bound(u, budget_sn, Gb).next;
    run_vjp_kernel<S>(o.step_vjp, m, p, h, g, gx, gu);
    const double gn = norm2(to_double(gx)).first;
    knorms.push_back(gn);
    budget.push_back(Gb);
    note_ratio(check(r, "stream_vjp", "fp_grad_budget", "grad"), gn, Gb);
    note_ratio(check(r, "stream_vjp", "port_grad_budget", "grad_u"), norm2(to_double(gu)).first, port_budget);
    g = gx;
  }
  r.grad_kernel_norms.assign(knorms.rbegin(), knorms.rend());
  r.grad_fp_budget.assign(budget.rbegin(), budget.rend());
  for (size_t t = 0; t <= L; ++t) r.grad_oracle_norms.push_back(0.5 * (ref.norm_lo[t] + ref.norm_hi[t]));
  judge_final(check(r, "stream_vjp", "backward_error", "grad_x0"), to_double(g), ref.grad_x0, c.dtype, err);
}

template <class S>
BudgetCaseResult run_typed(const PhCase& c, const BudgetCaseOptions& o) {
  BudgetCaseResult r;
  r.c = c;
  const BudgetUnits u = budget_units(c.dtype, dtype_traits<default_accum_t<S>>::id);
  std::vector<StepMatrices> cache;
  if (o.forward) run_forward<S>(r, o, u, cache);
  if (!o.backward) return r;
  run_backward<S>(r, o, u, cache);
  for (int64_t d : o.grad_depths) {
    BudgetCaseResult rd;  // the network of depth d: its own backward stream, on the same steps' matrices
    rd.c = c;
    rd.c.depth = std::min(d, c.depth);
    if (rd.c.depth < c.depth) run_backward<S>(rd, o, u, cache);
    const BudgetCaseResult& g = rd.c.depth < c.depth ? rd : r;
    r.grad_growth.push_back({g.grad_kernel_norms.front() / g.grad_kernel_norms.back(), g.grad_oracle_norms.front() / g.grad_oracle_norms.back()});
  }
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
