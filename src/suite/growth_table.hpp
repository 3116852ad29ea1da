#pragma once
/// The growth table of issue 9: trunk norm growth ||x_L|| / ||x_0|| at width 32 over depth for
/// (a) the plain residual stream x + f(x), (b) LayerNorm inside the branch, (c) LayerNorm on the
/// trunk, (d) the port-Hamiltonian stream, each kernel in its dtype against the arbitrary-precision
/// stream on the same rounded parameters, with the depth at which each overflows; and the gradient
/// growth of each (docs/bounds.md section 14.7).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "suite/budget_case.hpp"

namespace normcheck {

struct GrowthConfig {
  int64_t width = 32;
  std::vector<int64_t> depths = {24, 48, 120, 240, 300};
  double h = 0.25;     ///< port-Hamiltonian step size
  double gain = 1.0;   ///< W2 ~ N(0, gain^2 / n); W1 ~ N(0, 2 / n) (He)
  double eps = 1e-5;   ///< LayerNorm eps
  uint64_t seed = 20261130;
};

struct GrowthRow {
  std::string arch;  ///< plain_residual, ln_in_branch, ln_on_trunk, plain_residual_rescaled, port_hamiltonian
  DType dtype = DType::f64;
  std::vector<double> kernel_ratio, oracle_ratio;  ///< at cfg.depths (inf/nan once overflowed)
  int64_t overflow_depth = -1;                      ///< first depth with a non-finite element; -1 none
  /// Gradient growth ||d<g, x_d>/dx_0|| / ||g|| of the network of depth d, d in cfg.depths (g =
  /// ph_cotangent of the standard case): the step VJP kernels, and the oracle (certified backward
  /// stream for the port-Hamiltonian row, 168-bit MPFR for the controls).
  std::vector<double> grad_kernel_ratio, grad_oracle_ratio;
};

/// The five rows of one dtype (the plain stream also rescaled by a power of two after every step, as
/// the seed's harness did to stay in range); `ph` receives the port-Hamiltonian case.
std::vector<GrowthRow> run_growth(const GrowthConfig& cfg, DType dt, BudgetCaseResult& ph);

nlohmann::json growth_rows_json(const GrowthConfig& cfg, const std::vector<GrowthRow>& rows);

}  // namespace normcheck
