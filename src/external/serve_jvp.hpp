#pragma once
/// The LayerNorm JVP as an external kernel: op "layernorm_jvp" in serve mode, NC_LAYERNORM_JVP in the
/// plugin ABI v2. Inputs x (rows x n), gamma, beta (n) and the tangents dx (rows x n), dgamma,
/// dbeta (n); output du (rows x n) = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta.
#include <memory>

#include "external/serve.hpp"
#include "suite/jvp_suite.hpp"

namespace normcheck::external {

FileCall jvp_file_call(const LayerNormCase& c, const LayerNormTangents& t);

/// The outputs of a finished call (plugin or serve), with its failure or skip.
JvpOutputs jvp_outputs_of(FileCallResult r);

/// The JVP kernel of a serve-mode command.
JvpKernel serve_jvp_kernel(const std::shared_ptr<ServePool>& pool);

}  // namespace normcheck::external
