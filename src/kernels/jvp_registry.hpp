#pragma once
/// The built-in LayerNorm JVP kernels (kernels/layernorm_jvp.hpp) by name, type-erased over the
/// four storage dtypes (f32 accumulation for f16/bf16).
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"

namespace normcheck {

struct JvpKernelInfo {
  std::string name;  ///< "two_pass" (sound) or "uncentred" (planted: mean(dx) dropped)
  bool known_weak = false;
};

const std::vector<JvpKernelInfo>& jvp_kernels();

/// du of kernel `name` as exact doubles of its storage values; throws std::invalid_argument for an
/// unknown name.
std::vector<double> run_jvp_kernel(const std::string& name, const LayerNormCase& c, const LayerNormTangents& t);

}  // namespace normcheck
