#pragma once
/// Loading and running kernel plugins (include/normcheck/plugin.h) in isolated child processes.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck::external {

class PluginPool;

struct PluginInfo {
  std::string path, name;
  int abi_version = 1;
  std::vector<std::pair<Op, DType>> supported;           ///< the version 1 ops
  std::vector<DType> grouped_dtypes, block_dtypes;       ///< ABI v2: NC_GROUPED_NORM, NC_LINEAR_RMSNORM
  std::vector<DType> contraction_dtypes;                 ///< ABI v2: NC_CONTRACTED_BLOCK
  std::vector<DType> jvp_dtypes;                         ///< ABI v2: NC_LAYERNORM_JVP
  std::vector<DType> rms_jvp_dtypes;                     ///< ABI v2: NC_RMSNORM_JVP
  std::string block_form;                                ///< ABI v2: "composed" or "deferred"
  std::string contract;                                  ///< normcheck_plugin_contract(): "two_pass", "welford" or "" (auto)
  std::shared_ptr<PluginPool> pool;  ///< the persistent workers (the inspecting one among them)
};

/// How each call is isolated: a persistent worker process of the pool (the harness's way), or a
/// forked child that loads the library for this one call (issue 7's way; the benchmark's baseline).
enum class PluginIsolation { worker, fork_per_call };

/// Opens the plugin in a worker process, checks its ABI version and queries every op x dtype;
/// throws std::runtime_error with one line (missing file, no normcheck_plugin_v1, wrong ABI,
/// crash or hang while loading). Calls time out after timeout_s.
PluginInfo inspect_plugin(const std::string& path, double timeout_s, double startup_s = 120);

/// One kernel entry per supported (op, dtype): kernel "plugin:<name>", variant <name>; every call
/// runs in another process with the time limit. A crash, hang or NC_ERROR comes back as
/// KernelOutputs::failure (the worker is replaced); NC_UNSUPPORTED as KernelOutputs::skipped.
std::vector<KernelEntry> plugin_kernels(const PluginInfo& info, PluginIsolation isolation = PluginIsolation::worker);

}  // namespace normcheck::external
