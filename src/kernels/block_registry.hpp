#pragma once
/// Type-erased table of the built-in Linear o RMSNorm block kernels (src/kernels/rms_block.hpp).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rmsnorm_case.hpp"

namespace normcheck {

/// Block kernel results as exact doubles of storage values.
struct BlockOutputs {
  std::vector<double> y;   ///< rows x m
  std::vector<double> dx;  ///< rows x n
  std::vector<double> dw;  ///< m x n
  std::vector<double> dg;  ///< n
  std::string failure;     ///< an external kernel crashed, hung or errored (no values)
  bool skipped = false;    ///< an external kernel declined the call: not judged
};

struct BlockKernelEntry {
  std::string variant;  ///< "composed", "deferred", "deferred_bias_in_correction"
  DType storage;
  DType accum;
  bool known_weak;      ///< a planted or known defect the harness must flag
  /// Forward, then backward from the forward's stored output.
  std::function<BlockOutputs(const RmsBlockCase&)> run;
  std::string kernel;        ///< "builtin", or an external kernel ("serve:<name>")
  std::string bound_variant; ///< the tolerance-table entry that judges it: "composed" or "deferred" form
};

/// Output names of a block kernel, in report order.
const std::vector<std::string>& block_outputs();

/// The values of output `name` in `o`.
const std::vector<double>& block_output(const BlockOutputs& o, std::string_view name);

/// Every block variant for the 4 dtypes (f16/bf16 accumulate in f32).
const std::vector<BlockKernelEntry>& builtin_block_kernels();

}  // namespace normcheck
