// Growth-table references of the residual controls on a 168-bit MPFR point type (the one
// multiprecision type of this TU). Not interval-certified (docs/port-hamiltonian.md).
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

std::vector<double> residual_stream_norms_mpfr(int kind, DType dt, const std::vector<double>& x0, double gain,
                                               uint64_t seed, int64_t depth, double eps) {
  std::vector<Real> x(x0.begin(), x0.end());
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<double> norms{norm_of(x)};
  for (int64_t t = 0; t < depth; ++t) {
    const ResidualStep p = residual_step_params(dt, n, gain, seed, t);
    const std::vector<Real> f = ph::branch(p.W1, p.W2, kind == 1 ? ph::layer_norm(x, eps) : x);
    for (int64_t i = 0; i < n; ++i) x[i] += f[i];
    if (kind == 2) x = ph::layer_norm(x, eps);
    norms.push_back(norm_of(x));
  }
  return norms;
}

}  // namespace normcheck::oracle
