// Growth-table references of the residual controls on a 168-bit MPFR point type (the one
// multiprecision type of this TU). Not interval-certified (docs/port-hamiltonian.md).
#include <algorithm>

#include <boost/multiprecision/mpfr.hpp>

#include "oracles/certified_port_hamiltonian.hpp"
#include "oracles/port_hamiltonian.hpp"

namespace normcheck::oracle {
namespace {
using Real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<50>, boost::multiprecision::et_off>;

double norm_of(const std::vector<Real>& x) {
  Real s(0);
  for (const Real& e : x) s += e * e;
  return Real(sqrt(s)).convert_to<double>();
}
}  // namespace

ResidualStreamReference residual_stream_reference_mpfr(int kind, DType dt, const std::vector<double>& x0, const std::vector<double>& g,
                                                       double gain, uint64_t seed, const std::vector<int64_t>& depths, double eps) {
  const int64_t n = static_cast<int64_t>(x0.size()), D = *std::max_element(depths.begin(), depths.end());
  ResidualStreamReference ref;
  std::vector<std::vector<Real>> xs{std::vector<Real>(x0.begin(), x0.end())};  // the state before step t
  ref.norms.push_back(norm_of(xs.back()));
  std::vector<ResidualStep> steps;
  for (int64_t t = 0; t < D; ++t) {
    steps.push_back(residual_step_params(dt, n, gain, seed, t));
    std::vector<Real> x = xs.back();
    const std::vector<Real> f = ph::branch(steps.back().W1, steps.back().W2, kind == 1 ? ph::layer_norm(x, eps) : x);
    for (int64_t i = 0; i < n; ++i) x[i] += f[i];
    if (kind == 2) x = ph::layer_norm(x, eps);
    ref.norms.push_back(norm_of(x));
    if (t + 1 < D) xs.push_back(std::move(x));
  }
  const std::vector<Real> gL(g.begin(), g.end());
  for (int64_t d : depths) {
    std::vector<Real> gt = gL;
    for (int64_t t = d - 1; t >= 0; --t) {
      const ResidualStep& p = steps[static_cast<size_t>(t)];
      const std::vector<Real>& x = xs[static_cast<size_t>(t)];
      std::vector<Real> next;
      if (kind == 1) {
        next = ph::layer_norm_vjp(x, ph::branch_vjp(p.W1, p.W2, ph::layer_norm(x, eps), gt), eps);
        for (int64_t i = 0; i < n; ++i) next[i] += gt[i];
      } else {
        std::vector<Real> gs = gt;
        if (kind == 2) {
          std::vector<Real> s = x;
          const std::vector<Real> f = ph::branch(p.W1, p.W2, x);
          for (int64_t i = 0; i < n; ++i) s[i] += f[i];
          gs = ph::layer_norm_vjp(s, gt, eps);
        }
        next = ph::branch_vjp(p.W1, p.W2, x, gs);
        for (int64_t i = 0; i < n; ++i) next[i] += gs[i];
      }
      gt = std::move(next);
    }
    ref.grad_ratios.push_back(norm_of(gt) / norm_of(gL));
  }
  return ref;
}

}  // namespace normcheck::oracle
