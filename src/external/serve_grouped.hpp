#pragma once
/// Batch, group and instance norm (the grouped suite) through serve mode: op "grouped_norm".
#include <functional>

#include "external/exec.hpp"
#include "external/serve.hpp"
#include "suite/grouped_judge.hpp"

namespace normcheck::external {

/// A kernel for the grouped suite that calls a serve-mode command (docs/plugins.md, "Serve mode":
/// the grouped_norm request).
std::function<GroupedOutputs(const GroupedNormCase&)> serve_grouped_kernel(const std::shared_ptr<ServePool>& pool);

/// A grouped case's call: manifest fields, inputs x, dy, gamma, beta (and batch norm's running
/// statistics), outputs y, dx, dgamma, dbeta (and running_mean, running_var, y_inference).
FileCall grouped_file_call(const GroupedNormCase& c);

/// The grouped outputs of a finished call (plugin or serve) in the call's output order, with its failure or skip.
GroupedOutputs grouped_outputs_of(const FileCall& call, FileCallResult r);

}  // namespace normcheck::external
