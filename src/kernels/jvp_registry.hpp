#pragma once
/// The built-in JVP kernels (kernels/layernorm_jvp.hpp, kernels/rmsnorm_jvp.hpp) by name,
/// type-erased over the four storage dtypes (f32 accumulation for f16/bf16).
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"

namespace normcheck {

struct JvpKernelInfo {
  std::string name;  ///< unique over the JVP ops: "two_pass", "uncentred" (LayerNorm), "rms", "r_constant" (RMSNorm)
  bool known_weak = false;
  std::string op = "layernorm_jvp";  ///< the op it computes: "layernorm_jvp" or "rmsnorm_jvp"
};

/// Every built-in JVP kernel of both ops.
const std::vector<JvpKernelInfo>& jvp_kernels();

/// du of kernel `name` as exact doubles of its storage values; throws std::invalid_argument for an
/// unknown name.
std::vector<double> run_jvp_kernel(const std::string& name, const LayerNormCase& c, const LayerNormTangents& t);

}  // namespace normcheck
