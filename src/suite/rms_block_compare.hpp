#pragma once
/// Accuracy of the block Linear o RMSNorm, composed vs deferred form, on the same cases against
/// the certified oracle (issue 4, partial: no a priori bound for the block yet, so no bound ratio).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics.hpp"
#include "core/rmsnorm_case.hpp"

namespace normcheck {

struct BlockCompareConfig {
  std::vector<DType> dtypes;
  std::vector<std::string> generators = {"normal", "cancel", "wide"};
  int cases = 4;  ///< per generator and dtype
  uint64_t seed = 20261130;
};

/// Errors of one (dtype, form, output) over all cases.
struct BlockFormStats {
  DType dtype;
  std::string form;    ///< "composed" or "deferred"
  std::string output;  ///< "y" or "dx"
  ErrorAccumulator acc;
  double worst_cancellation = 0;  ///< deferred-term cancellation factor at the worst dx element
};

/// A block case in the storage dtype: "normal", "cancel" (dy along y - b, so the deferred terms
/// nearly cancel) or "wide" (n = 1024).
RmsBlockCase make_rms_block_case(const std::string& generator, DType dt, uint64_t seed);

std::vector<BlockFormStats> compare_rms_block(const BlockCompareConfig& cfg);

nlohmann::json block_compare_json(const BlockCompareConfig& cfg, const std::vector<BlockFormStats>& rows);

}  // namespace normcheck
