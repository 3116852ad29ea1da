#pragma once
/// The block length of the blocked reductions (issue 42 item 3), shared by the kernels that run them
/// (src/kernels/layernorm_reductions.hpp) and the bounds that model them (docs/bounds.md section 2.7).
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace normcheck {

/// Elements per block: a block is summed (or Welford-accumulated) sequentially, the blocks' results
/// are combined by a pairwise tree, as a GPU thread block reduces a row (one block per warp lane).
inline constexpr int64_t kReductionBlock = 32;

/// The most rounded combinations any element passes through in a blocked reduction of n terms:
/// min(n, B) - 1 within its block, ceil(log2 ceil(n / B)) in the tree (0 for n <= 1).
inline int64_t blocked_reduction_depth(int64_t n) {
  if (n <= 1) return 0;
  const int64_t blocks = (n + kReductionBlock - 1) / kReductionBlock;
  int64_t levels = 0;
  while ((int64_t{1} << levels) < blocks) ++levels;
  return std::min(n, kReductionBlock) - 1 + levels;
}

}  // namespace normcheck
