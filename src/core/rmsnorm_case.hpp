#pragma once
/// One case of the block Linear o RMSNorm (y = W (g * r x) + b): exact values of the kernel's inputs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

struct RmsBlockCase {
  DType dtype = DType::f32;
  int64_t rows = 0;       ///< batch rows
  int64_t n = 0;          ///< normalized features
  int64_t m = 0;          ///< outputs of the linear layer
  double eps = 1e-6;
  std::vector<double> x;  ///< rows * n
  std::vector<double> g;  ///< n (RMSNorm gain)
  std::vector<double> w;  ///< m * n, row-major (W[i][j] = w[i * n + j])
  std::vector<double> b;  ///< m, or empty for no bias
  std::vector<double> dy; ///< rows * m output cotangent
  std::string generator;  ///< how the case was made ("" for hand-built cases)
  uint64_t seed = 0;      ///< generator seed
};

/// One clear message if the case is malformed (eps <= 0, empty or mismatched shapes, values
/// that are not finite or not representable in the dtype), else nullopt.
std::optional<std::string> validate_block_case(const RmsBlockCase& c);

/// Digest of every input (dtype, shapes, eps, exact bit patterns), to check replays.
uint64_t block_case_digest(const RmsBlockCase& c);

}  // namespace normcheck
