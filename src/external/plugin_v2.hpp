#pragma once
/// ABI version 2 plugin kernels (include/normcheck/plugin.h): the grouped suite's norms, the block
/// suite's Linear∘RMSNorm and the contraction suite's contracted block, called through the persistent plugin workers
/// with padded rows, NaN sentinels and the post-call check of version 1.
#include <functional>
#include <vector>

#include "external/plugin.hpp"
#include "kernels/block_registry.hpp"
#include "suite/contraction_judge.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/jvp_suite.hpp"

namespace normcheck::external {

/// The grouped kernel of a plugin that supports NC_GROUPED_NORM (dtypes it lacks come back skipped).
std::function<GroupedOutputs(const GroupedNormCase&)> plugin_grouped_kernel(const PluginInfo& info);

/// The contracted-block kernel of a plugin that supports NC_CONTRACTED_BLOCK (dtypes it lacks come back skipped).
ContractedKernel plugin_contraction_kernel(const PluginInfo& info);

/// The JVP kernel of op "layernorm_jvp" (NC_LAYERNORM_JVP) or "rmsnorm_jvp" (NC_RMSNORM_JVP) of a plugin
/// (dtypes it lacks come back skipped).
JvpKernel plugin_jvp_kernel(const PluginInfo& info, const std::string& op);
/// The dtypes in which the plugin implements JVP op "layernorm_jvp" or "rmsnorm_jvp".
const std::vector<DType>& plugin_jvp_dtypes(const PluginInfo& info, const std::string& op);

/// One block kernel per dtype the plugin supports NC_LINEAR_RMSNORM in, judged by its declared form.
std::vector<BlockKernelEntry> plugin_block_kernels(const PluginInfo& info);

}  // namespace normcheck::external
