#pragma once
/// Cases of the port-Hamiltonian stream x_{t+1} = Lambda_t C_t x_t + h B_t u_t (issue 9) and of the
/// residual-stream controls of the growth table. Every parameter is generated directly in the
/// storage dtype (exact doubles); step t's parameters are a pure function of (case seed, t), so
/// the kernels and the oracle regenerate them instead of holding depth x width^2 values.
#include <cstdint>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

/// Limits of the stream cases (bad input beyond them: one error line, exit 2).
inline constexpr int64_t kPhMinWidth = 2, kPhMaxWidth = 256, kPhMaxDepth = 300;

/// Parameters of one step (row-major, exact values of the storage dtype).
struct PhStep {
  int64_t n = 0, m = 0;
  std::vector<double> S;      ///< n x n, exactly skew: S_ji = -S_ij (negation is exact), S_ii = 0
  std::vector<double> theta;  ///< n: Lambda = H diag(tanh theta) H, spectrum tanh(theta_i) in (-1, 1)
  std::vector<double> v;      ///< n, nonzero: Householder vector, H = I - 2 v v^T / (v^T v)
  std::vector<double> B;      ///< n x m port matrix
  std::vector<double> u;      ///< m port input
};

/// A stream case: width n, ports m, depth L, step size h, the initial state and the seed of the steps.
struct PhCase {
  DType dtype = DType::f64;
  int64_t n = 32, m = 8, depth = 24;
  double h = 0.25;
  double theta_scale = 1.5;  ///< theta_i ~ N(0, theta_scale^2)
  uint64_t seed = 0;
  std::vector<double> x0;
  std::vector<double> u;  ///< port signals, depth x m step-major (the worst-case search's); empty: drawn from the seed
};

/// Number of ports used for width n: min(n, 8).
int64_t ph_ports(int64_t n);

/// Step t of case c (a pure function of c.seed, t, n, m, dtype).
PhStep ph_step_params(const PhCase& c, int64_t t);

/// The cotangent dL/dx_L of the backward stream (docs/bounds.md section 14.7): g_i ~ N(0, 1) rounded
/// to the dtype, a pure function of (c.seed, c.n, c.dtype); never all zero.
std::vector<double> ph_cotangent(const PhCase& c);

/// A stream case with x0_i ~ N(0, 1) rounded to the dtype.
PhCase make_ph_case(DType dt, int64_t n, int64_t depth, double h, uint64_t seed);

/// The residual branch f(x) = W2 relu(W1 x) of step t of the growth controls: W1 ~ N(0, 2/n)
/// (He), W2 ~ N(0, gain^2/n), both n x n, rounded to the dtype.
struct ResidualStep {
  std::vector<double> W1, W2;
};
ResidualStep residual_step_params(DType dt, int64_t n, double gain, uint64_t seed, int64_t t);

}  // namespace normcheck
