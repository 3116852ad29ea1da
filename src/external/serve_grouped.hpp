#pragma once
/// Batch, group and instance norm (the grouped suite) through serve mode: op "grouped_norm".
#include <functional>

#include "external/exec.hpp"
#include "suite/grouped_judge.hpp"

namespace normcheck::external {

/// A kernel for the grouped suite that calls a serve-mode command (docs/plugins.md, "Serve mode":
/// the grouped_norm request).
std::function<GroupedOutputs(const GroupedNormCase&)> serve_grouped_kernel(const ExecSpec& spec);

}  // namespace normcheck::external
