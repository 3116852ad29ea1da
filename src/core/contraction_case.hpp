#pragma once
/// The affine -> LayerNorm -> affine block of the QR contraction (seed:
/// qr-contraction-across-layernorm): h = A x + a, f(x) = W LN_{gamma,beta,eps}(h) + b, with d
/// inputs, n intermediate features and m outputs. Several downstream consumers sharing one
/// normalization are stacked in W (rows) and b; `consumer_rows` gives their sizes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

struct AffineLnAffine {
  int64_t d = 0, n = 0, m = 0;
  double eps = 1e-5;
  std::vector<double> A;      ///< n x d, row-major
  std::vector<double> a;      ///< n, or empty (no producer bias)
  std::vector<double> gamma;  ///< n, or empty (no LayerNorm affine parameters: gamma = 1, beta = 0)
  std::vector<double> beta;   ///< n, or empty (absent with gamma, or beta-free LayerNorm)
  std::vector<double> W;      ///< m x n, row-major: every consumer's rows, stacked
  std::vector<double> b;      ///< m, or empty (no consumer bias)
  std::vector<int64_t> consumer_rows;  ///< sizes of the stacked consumers (sum m); empty: one consumer

  int64_t k() const { return std::min(n, d + 1); }  ///< rows of R
  std::vector<int64_t> consumers() const { return consumer_rows.empty() ? std::vector<int64_t>{m} : consumer_rows; }
};

/// One clear message when the block is malformed: eps <= 0 or not finite, empty or mismatched
/// shapes, consumer sizes that do not sum to m, non-finite parameters; else nullopt.
std::optional<std::string> validate_block(const AffineLnAffine& blk);

/// Parameter counts (seed): N_old = n d + n + 2n + m n + m with every bias and affine parameter
/// present (absent ones not counted), N_new = m (d + 1) + k (d + 1) + m with one shared R, and
/// N_new with one R per consumer.
/// Modules that stay beside the contraction because other consumers still read their outputs (seed:
/// "any source modules needed by other consumers must be included in the net storage comparison")
/// count in N_new.
struct RetainedParts {
  bool producer = false, norm = false;
};
struct ParameterCounts {
  int64_t n_old = 0, n_new = 0, n_new_separate_r = 0;
  int64_t n_retained = 0;  ///< parameters of the retained producer and LayerNorm (included in n_new)
  double reduction() const { return 1.0 - static_cast<double>(n_new) / static_cast<double>(n_old); }
};
ParameterCounts parameter_counts(const AffineLnAffine& blk, const RetainedParts& retained = {});

/// One judged case: the block and its parameters and inputs, all exact in `dtype`.
struct ContractionCase {
  DType dtype = DType::f32;
  AffineLnAffine block;
  int64_t rows = 0;       ///< input rows
  std::vector<double> x;  ///< rows x d
  std::vector<double> dy; ///< rows x m output cotangent (for the input gradient)
  std::string generator;
  uint64_t seed = 0;
};

}  // namespace normcheck
