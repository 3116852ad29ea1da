#pragma once
/// A priori bounds of the port-Hamiltonian kernels and the floating-point port budget
/// (docs/bounds.md section 14): the Cayley error ||C^ - C||_F and orthogonality defect, the
/// dissipation's entrywise error, and the per-step affine bound ||x^_{t+1}|| <= a_t ||x^_t|| + b_t.
#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/port_hamiltonian.hpp"

namespace normcheck {

/// Unit roundoffs and underflow terms of a (storage, accumulator) pair.
struct BudgetUnits {
  DType storage, accum;
  double us = 0, ua = 0;        ///< us = 0 when the store is the identity (Storage == Accum)
  double eta_s = 0, eta_a = 0;  ///< half the subnormal spacing (absolute error of a rounding in underflow)
  bool exact_products = false;  ///< a product of two storage values is exact in Accum (2 p_s <= p_a)
};
BudgetUnits budget_units(DType storage, DType accum);

/// Relative error bound of the accumulator's tanh (glibc's documented 2 ulp, doubled: 8 u).
double tanh_relative_error(const BudgetUnits& u);

/// sqrt(sum v^2) rounded up (v exact doubles; margin covers the evaluation).
double frobenius_up(const std::vector<double>& v);

/// Certified upper bound of ||C^T C - I||_F for the stored C (n x n, exact doubles): Gram entries
/// in binary128 (products of doubles exact), with the rigorous bound of the binary128 sums.
double certified_gram_defect(const std::vector<double>& C, int64_t n);

/// A priori ||C^ - C||_F of cayley_solve (section 14.2), from the kernel's own || |L^||U^| ||_F.
double cayley_solve_error(const BudgetUnits& u, int64_t n, double h, double s_fro, const kernels::CayleyDiagnostics& d);
/// A priori ||C^ - C||_F of cayley_explicit_inverse (section 14.2).
double cayley_inverse_error(const BudgetUnits& u, int64_t n, double h, double s_fro, const kernels::CayleyDiagnostics& d);
/// ||C^T C - I||_F <= 2 e + e^2 for ||C^ - C||_F <= e and C orthogonal.
double defect_from_error(double e);

/// A priori |Lambda^_ij - Lambda_ij| of `dissipation` (section 14.3), row-major n x n.
std::vector<double> dissipation_error_bounds(const BudgetUnits& u, const std::vector<double>& theta, const std::vector<double>& v);

/// Norm data of one step of the stream (all upper bounds).
struct StepNorms {
  int64_t n = 0, m = 0;
  double c2 = 1;    ///< ||C^||_2 <= sqrt(1 + ||C^T C - I||_F)
  double cF = 0;    ///< ||C^||_F
  double l2 = 1;    ///< ||Lambda^||_2 <= max|tanh theta| + ||Lambda^ - Lambda||_F
  double lF = 0;    ///< ||Lambda^||_F
  double port = 0;  ///< h ||B u||_2 (exact, certified upper)
  double port_abs = 0;  ///< h || |B| |u| ||_2
};

/// The step's norm bound and rounding bound at ||x^_t|| <= X (section 14.4):
/// next >= ||x^_{t+1}||, rounding >= ||x^_{t+1} - (Lambda^ C^ x^_t + h B u)||.
struct StepBound {
  double next = 0, rounding = 0;
};
StepBound step_bound(const BudgetUnits& u, const StepNorms& s, double X);

/// The VJP's bounds at ||g^_{t+1}|| <= G (section 14.7): next >= ||g^_t|| for g^_t = st(C^T st(Lambda g^)),
/// rounding >= ||g^_t - C^^T Lambda^ g^_{t+1}||. The same two stored matrix-vector products as the
/// forward's first two stages, in the other order (||C^T|| = ||C||).
StepBound grad_step_bound(const BudgetUnits& u, const StepNorms& s, double G);

/// ||g^u_t|| for g^u = st(fl(h fl(B^T g^))) at ||g^_{t+1}|| <= G, with hb >= h ||B||_F (section 14.7).
double port_grad_bound(const BudgetUnits& u, int64_t n, int64_t m, double h, double hb, double G);

/// max_i |tanh theta_i| rounded up (double tanh, 2 ulp, with margin), capped at 1.
double lambda_upper_double(const std::vector<double>& theta);

}  // namespace normcheck
