#include "core/port_hamiltonian_case.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"

namespace normcheck {

int64_t ph_ports(int64_t n) { return std::min<int64_t>(n, 8); }

PhStep ph_step_params(const PhCase& c, int64_t t) {
  PhStep p;
  const int64_t n = c.n, m = c.m;
  p.n = n;
  p.m = m;
  Rng rng(derive_seed(c.seed, 0x9417, static_cast<uint64_t>(t)));
  const auto r = [&](double sigma) { return round_to_dtype(sigma * rng.normal(), c.dtype); };
  const double sn = 1.0 / std::sqrt(static_cast<double>(n)), sm = 1.0 / std::sqrt(static_cast<double>(m));
  p.S.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      const double s = r(sn);
      p.S[i * n + j] = s;
      p.S[j * n + i] = -s;
    }
  for (int64_t i = 0; i < n; ++i) p.theta.push_back(r(c.theta_scale));
  for (int64_t i = 0; i < n; ++i) p.v.push_back(r(1.0));
  if (std::all_of(p.v.begin(), p.v.end(), [](double x) { return x == 0; })) p.v[0] = 1;
  for (int64_t i = 0; i < n * m; ++i) p.B.push_back(r(sm));
  for (int64_t i = 0; i < m; ++i) p.u.push_back(r(1.0));
  if (static_cast<int64_t>(c.u.size()) == c.depth * m) p.u.assign(c.u.begin() + t * m, c.u.begin() + (t + 1) * m);
  return p;
}

PhCase make_ph_case(DType dt, int64_t n, int64_t depth, double h, uint64_t seed) {
  PhCase c;
  c.dtype = dt;
  c.n = n;
  c.m = ph_ports(n);
  c.depth = depth;
  c.h = round_to_dtype(h, dt);
  c.seed = seed;
  Rng rng(derive_seed(seed, 0x9418));
  for (int64_t i = 0; i < n; ++i) c.x0.push_back(round_to_dtype(rng.normal(), dt));
  return c;
}

std::vector<double> ph_cotangent(const PhCase& c) {
  Rng rng(derive_seed(c.seed, 0x941a));
  std::vector<double> g;
  for (int64_t i = 0; i < c.n; ++i) g.push_back(round_to_dtype(rng.normal(), c.dtype));
  if (std::all_of(g.begin(), g.end(), [](double x) { return x == 0; })) g[0] = 1;
  return g;
}

ResidualStep residual_step_params(DType dt, int64_t n, double gain, uint64_t seed, int64_t t) {
  ResidualStep s;
  Rng rng(derive_seed(seed, 0x9419, static_cast<uint64_t>(t)));
  const double s1 = std::sqrt(2.0 / static_cast<double>(n)), s2 = gain / std::sqrt(static_cast<double>(n));
  for (int64_t i = 0; i < n * n; ++i) s.W1.push_back(round_to_dtype(s1 * rng.normal(), dt));
  for (int64_t i = 0; i < n * n; ++i) s.W2.push_back(round_to_dtype(s2 * rng.normal(), dt));
  return s;
}

}  // namespace normcheck
