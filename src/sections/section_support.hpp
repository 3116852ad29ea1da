#pragma once
/// Small pieces the sections share.
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "external/plugin.hpp"
#include "external/serve.hpp"
#include "sections/options.hpp"
#include "sections/section.hpp"

namespace normcheck::sections {

/// Sections that judge built-in kernels only: with external kernels they are not planned, and
/// naming them in --ops is an error.
inline bool builtin_only(const PlanInputs& in, std::string_view op) {
  if (in.external == nullptr) return true;
  if (in.names_any({op}))
    throw PlanError(fmt::format("--ops {} judges built-in kernels only (not in the plugin ABI or serve protocol yet)", op));
  return false;
}

/// Adds the external kernels' per-op entries (plugins, the exec command, the serve pool) to `cfg`
/// (per_op_section.cpp); the built-in kernels are then not run.
void add_external_kernels(const RunOptions& o, const ExternalKernels& ext, RunConfig& cfg);

/// Selected when --ops names it, or when neither --ops nor --kernels narrows the run.
inline bool selected_whole_or_named(const PlanInputs& in, std::string_view op) {
  return (in.options.ops.empty() && in.options.variants.empty()) || in.names_any({op});
}

/// The one external kernel of a section's op (K: {name, run, report_only}): the plugin whose
/// `provides(info)` holds, via `from_plugin(info)`, or the serve command via `from_serve(pool)`;
/// nullopt when there is none or --ops leaves `section` out. Throws PlanError when --ops names the
/// section and nothing implements `abi_op`, or when several kernels do.
template <class K, class Provides, class FromPlugin, class FromServe>
std::optional<K> one_external_kernel(const PlanInputs& in, std::string_view section, std::string_view abi_op, Provides provides,
                                     FromPlugin from_plugin, FromServe from_serve) {
  const RunOptions& o = in.options;
  const bool named = in.names_any({section});
  if (!(o.ops.empty() || named)) return std::nullopt;
  std::vector<K> found;
  for (const external::PluginInfo& p : in.external->plugins)
    if (provides(p)) found.push_back(K{"plugin:" + p.name, from_plugin(p), o.report_only});
  if (in.external->serve) found.push_back(K{in.external->serve->kernel_name(), from_serve(in.external->serve), o.report_only});
  if (found.size() > 1) throw PlanError(fmt::format("more than one external kernel for --ops {} (plugins, --serve): judge one at a time", section));
  if (named && found.empty())
    throw PlanError(fmt::format("--ops {}: no external kernel implements it (an ABI v2 plugin with {}, or --serve)", section, abi_op));
  if (found.empty()) return std::nullopt;
  return found.front();
}

}  // namespace normcheck::sections
