#pragma once
/// One port-Hamiltonian stream case (issue 9): the kernels (Cayley by solve and by explicit
/// inverse, dissipation, step) run in the case dtype on the storage-rounded parameters; the
/// certified oracle runs on the same values; the a priori bounds of docs/bounds.md section 14 are
/// evaluated alongside. Every check compares a kernel only with the certified oracle.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/certified_value.hpp"
#include "core/metrics.hpp"
#include "core/port_hamiltonian_case.hpp"

namespace normcheck {

/// One (variant, property) of one case.
struct BudgetCheck {
  std::string variant, property, output;
  ErrorAccumulator acc;      ///< entrywise errors against the certified oracle (when any)
  bool failed = false;
  double max_value = 0;      ///< e.g. the certified orthogonality defect, ||x^_t|| / B^_t
  double max_bound = 0;      ///< its a priori bound (when any)
  double max_ratio = 0;      ///< max value / bound
  int64_t uncertified = 0;   ///< oracle values too wide to judge
};

struct BudgetCaseOptions {
  std::string cayley = "cayley_solve";      ///< the stream's Cayley kernel (or the planted cayley_half_step)
  std::string dissipation = "dissipation";  ///< the stream's dissipation kernel (or dissipation_hardtanh)
  std::string step = "ph_step";             ///< the stream's step kernel (or the planted ph_step_residual_leak)
  std::string step_vjp = "ph_step_vjp";     ///< the backward stream's VJP kernel (or ph_step_vjp_untransposed, _residual_leak)
  bool forward = true;                      ///< run the forward stream and its checks
  bool backward = true;                     ///< run the backward stream and its checks (docs/bounds.md section 14.7)
  /// Also the gradient growth of the networks of these depths (the growth table's gradient column),
  /// each by its own backward stream on the same steps' matrices; depths beyond the case's are the case's.
  std::vector<int64_t> grad_depths;
  bool explicit_inverse = true;             ///< also measure cayley_explicit_inverse at every step
  int64_t judge_max_n = 48;                 ///< judge C^ and Lambda^ entrywise (first and last step) up to this width
};

/// ||dL/dx_0|| / ||dL/dx_d|| of the network of depth d: the VJP kernel and the certified backward stream.
struct GradientGrowth {
  double kernel = 0, oracle = 0;
};

struct BudgetCaseResult {
  PhCase c;
  std::deque<BudgetCheck> checks;  ///< a deque: check() hands out references that later checks must not invalidate
  std::vector<double> kernel_norms;     ///< ||x^_t||, t = 0..L (inf once non-finite)
  std::vector<double> oracle_norms;     ///< certified ||x_t|| (midpoint), t = 0..L
  std::vector<double> fp_budget, exact_budget;  ///< B^_t and B_t, t = 0..L
  std::vector<double> grad_kernel_norms;  ///< ||g^_t|| of the VJP kernel, t = 0..L (g_L = ph_cotangent)
  std::vector<double> grad_oracle_norms;  ///< certified ||g_t|| (midpoint), t = 0..L
  std::vector<double> grad_fp_budget;     ///< G^_t, the floating-point gradient budget, t = 0..L
  std::vector<GradientGrowth> grad_growth;  ///< at BudgetCaseOptions::grad_depths
  int64_t slack_depth = -1;             ///< first t with B^_t / B_t - 1 > the table's threshold; -1: none
  int64_t overflow_depth = -1;          ///< first t with a non-finite state element; -1: none
  int oracle_precision_bits = 0;
  bool failed() const;
};

BudgetCaseResult run_budget_case(const PhCase& c, const BudgetCaseOptions& o = {});


}  // namespace normcheck
