#pragma once
/// The JVPs as external kernels: op "layernorm_jvp" in serve mode, NC_LAYERNORM_JVP in the plugin ABI
/// v2 (inputs x (rows x n), gamma, beta (n) and the tangents dx (rows x n), dgamma, dbeta (n); output
/// du (rows x n) = gamma r (dx - mean(dx) - z mean(z dx)) + z dgamma + dbeta), and "rmsnorm_jvp",
/// NC_RMSNORM_JVP (x, gamma, dx, dgamma; du = gamma r (dx - z mean(z dx)) + z dgamma, z = x r).
#include <memory>

#include "external/serve.hpp"
#include "suite/jvp_suite.hpp"

namespace normcheck::external {

/// The call of JVP op "layernorm_jvp" (inputs x, gamma, beta, dx, dgamma, dbeta) or "rmsnorm_jvp"
/// (x, gamma, dx, dgamma); output du.
FileCall jvp_file_call(const LayerNormCase& c, const LayerNormTangents& t, const std::string& op);

/// The outputs of a finished call (plugin or serve), with its failure or skip.
JvpOutputs jvp_outputs_of(FileCallResult r);

/// The JVP kernel of a serve-mode command.
JvpKernel serve_jvp_kernel(const std::shared_ptr<ServePool>& pool, const std::string& op);

}  // namespace normcheck::external
