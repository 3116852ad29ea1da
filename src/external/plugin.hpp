#pragma once
/// Loading and running kernel plugins (include/normcheck/plugin.h) in isolated child processes.
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck::external {

struct PluginInfo {
  std::string path, name;
  std::vector<std::pair<Op, DType>> supported;
};

/// Opens the plugin in a child process, checks its ABI version and queries every op x dtype;
/// throws std::runtime_error with one line (missing file, no normcheck_plugin_v1, wrong ABI,
/// crash or hang while loading).
PluginInfo inspect_plugin(const std::string& path, double timeout_s);

/// One kernel entry per supported (op, dtype): kernel "plugin:<name>", variant <name>; every call
/// runs in a child process with the time limit. A crash, hang or NC_ERROR comes back as
/// KernelOutputs::failure; NC_UNSUPPORTED as KernelOutputs::skipped.
std::vector<KernelEntry> plugin_kernels(const PluginInfo& info, double timeout_s);

}  // namespace normcheck::external
