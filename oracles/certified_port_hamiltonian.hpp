#pragma once
/// Certified references of the port-Hamiltonian stream (issue 9), free of multiprecision types.
/// The stream is carried as an l2 ball (center at oracle precision, certified radius): the Cayley
/// image is solved approximately (double LU, iterative refinement with MPFI residuals) and
/// certified by the residual, since ||(I - (h/2) S)^(-1)||_2 <= 1 for skew S; C is orthogonal and
/// ||Lambda||_2 = max |tanh theta_i| < 1, so the radius never grows multiplicatively
/// (docs/bounds.md section 14.1).
#include <cstdint>
#include <vector>

#include "core/certified_value.hpp"
#include "core/port_hamiltonian_case.hpp"

namespace normcheck::oracle {

struct CertifiedPhStream {
  std::vector<CertifiedValue> x_final;     ///< x_L, per component, in the case dtype
  std::vector<double> norm_lo, norm_hi;    ///< enclosure of ||x_t||_2, t = 0..L
  std::vector<double> port_lo, port_hi;    ///< enclosure of h ||B_t u_t||_2, t = 0..L-1
  std::vector<double> budget_lo, budget_hi;  ///< enclosure of ||x_0|| + sum_{s<t} h ||B_s u_s||, t = 0..L
  double max_radius_rel = 0;    ///< max_t radius_t / ||x_t||
  double max_residual = 0;      ///< largest certified Cayley residual norm
  double lambda_max = 0;        ///< max over steps of the certified upper bound of max_i |tanh theta_i|
  bool contractive = true;      ///< lambda_max < 1, certified
  bool budget_holds = true;     ///< upper ||x_t|| <= lower budget_t for every t (the theorem)
  int precision_bits = 0;
  double max_err_ulps = 0;      ///< of x_final, in ULPs of the dtype
  bool certified = false;
};

/// The stream of case c (depth c.depth), escalating 168 -> 500 bits until x_L is certified.
CertifiedPhStream certified_ph_stream(const PhCase& c);
CertifiedPhStream certified_ph_stream_mpfi50(const PhCase& c);
CertifiedPhStream certified_ph_stream_mpfi150(const PhCase& c);

/// The backward stream of case c for the cotangent g_L = ph_cotangent(c) (docs/bounds.md section
/// 14.7): g_t = C_t^T Lambda_t g_{t+1}, the port gradients h B_t^T g_{t+1}, carried as an l2 ball
/// like the forward stream (C^T = C(-S) is applied by the same certified solve).
struct CertifiedPhBackward {
  std::vector<CertifiedValue> grad_x0;       ///< dL/dx_0 per component, in the case dtype
  std::vector<double> norm_lo, norm_hi;      ///< enclosure of ||g_t||, t = 0..L (g_L = the cotangent)
  std::vector<double> port_lo, port_hi;      ///< enclosure of ||h B_t^T g_{t+1}||, t = 0..L-1
  std::vector<double> port_budget_lo;        ///< lower bound of h ||B_t||_F ||g_L||, t = 0..L-1
  double lambda_max = 0;
  bool contractive = true;      ///< lambda_max < 1, certified
  bool budget_holds = true;     ///< upper ||g_t|| <= lower ||g_L|| for every t < L (backward decay)
  bool port_budget_holds = true;  ///< upper ||h B_t^T g_{t+1}|| <= lower h ||B_t||_F ||g_L||
  int precision_bits = 0;
  double max_err_ulps = 0;      ///< of grad_x0, in ULPs of the dtype
  bool certified = false;
};

/// Escalating 168 -> 500 bits until dL/dx_0 is certified.
CertifiedPhBackward certified_ph_backward(const PhCase& c);
CertifiedPhBackward certified_ph_backward_mpfi50(const PhCase& c);
CertifiedPhBackward certified_ph_backward_mpfi150(const PhCase& c);

/// A certified matrix (row-major) in the case dtype.
struct CertifiedMatrix {
  int64_t n = 0;
  std::vector<CertifiedValue> a;
  double max_err_ulps = 0;
  int precision_bits = 0;
  bool certified = false;
  /// Cayley: the certified columns satisfy C^T C = I within their radii (the oracle is orthogonal
  /// to its certified precision). Dissipation: max |tanh theta_i| < 1 certified.
  bool structure_certified = false;
  double structure_value = 0;  ///< Cayley: max |(C~^T C~ - I)_ij| of the centers; dissipation: upper max |tanh theta_i|
};

/// C = (I - (h/2) S)^(-1) (I + (h/2) S) of step p (O(n^3) MPFI operations: small n or few steps).
CertifiedMatrix certified_cayley(const PhStep& p, double h, DType dt);
/// Lambda = H diag(tanh theta) H of step p.
CertifiedMatrix certified_dissipation(const PhStep& p, DType dt);
CertifiedMatrix certified_cayley_mpfi50(const PhStep& p, double h, DType dt);
CertifiedMatrix certified_cayley_mpfi150(const PhStep& p, double h, DType dt);
CertifiedMatrix certified_dissipation_mpfi50(const PhStep& p, DType dt);
CertifiedMatrix certified_dissipation_mpfi150(const PhStep& p, DType dt);

/// Growth-table references of the residual controls (not interval-certified: relu and LayerNorm
/// streams over 300 steps are evaluated at 168-bit MPFR point arithmetic, docs/port-hamiltonian.md);
/// kind 0 plain x + f(x), 1 x + f(LN(x)), 2 LN(x + f(x)).
struct ResidualStreamReference {
  std::vector<double> norms;        ///< ||x_t||, t = 0..max(depths)
  std::vector<double> grad_ratios;  ///< ||d<g, x_d>/dx_0|| / ||g|| for each d of depths
};
ResidualStreamReference residual_stream_reference_mpfr(int kind, DType dt, const std::vector<double>& x0, const std::vector<double>& g,
                                                       double gain, uint64_t seed, const std::vector<int64_t>& depths, double eps);

}  // namespace normcheck::oracle
