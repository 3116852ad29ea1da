#pragma once
/// Replay of external kernels' records (plugin, exec, serve) and the --dump of a replayed case.
#include <functional>

#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"
#include "sections/options.hpp"
#include "kernels/block_registry.hpp"
#include "oracles/certified_layernorm.hpp"
#include "suite/contraction_judge.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/jvp_suite.hpp"

namespace normcheck::sections {

/// The kernel a per-op record names: built-in, or external through --kernel/--exec/--serve when given,
/// else through what the report's config.external recorded. Throws std::invalid_argument with one line.
KernelEntry replay_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o);

/// The served block kernel an external block record names (--serve, else the report's
/// config.external with its block form). Throws std::invalid_argument with one line.
BlockKernelEntry replay_block_kernel(const nlohmann::json& report, const nlohmann::json& rec, DType dtype, const ReplayOptions& o);

/// The external grouped-norm kernel a grouped record names (plugin:NAME through --kernel or the
/// report's plugins, serve:NAME through --serve or the report's command). Throws std::invalid_argument.
std::function<GroupedOutputs(const GroupedNormCase&)> replay_grouped_kernel(const nlohmann::json& report, const nlohmann::json& rec,
                                                                            const ReplayOptions& o);

/// The external contracted-block kernel a contraction record names (the same sources as grouped records).
ContractedKernel replay_contraction_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o);

/// The external JVP kernel a JVP record names (the same sources as grouped records).
JvpKernel replay_jvp_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o);

/// Writes the case into `dir` for debugging in the user's own environment: manifest.json (the exec
/// protocol's, plus the record and the worst element), the inputs as .npy, the correctly rounded exact
/// outputs as expected_<output>.npy, and exact.json (every output's enclosure in hexfloat).
void dump_case(const std::string& dir, Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
               const nlohmann::json& rec, const std::string& replay_command);

}  // namespace normcheck::sections
