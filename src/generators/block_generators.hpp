#pragma once
/// Generators of Linear o RMSNorm block cases (y = W (g * r x) + b), deterministic in
/// (generator, dtype, seed); every value is exactly representable in the storage dtype.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/rmsnorm_case.hpp"

namespace normcheck::gen {

/// "normal" (rows 1-4, n 4-256, m 4-128, bias), "no_bias", "cancel" (dy along y - b, so the two
/// terms of the deferred dx nearly cancel), "wide" (n = 1024).
const std::vector<std::string>& block_generator_names();
bool is_block_generator(std::string_view name);

/// Throws std::invalid_argument for an unknown generator.
RmsBlockCase make_rms_block_case(std::string_view generator, DType dt, uint64_t seed);

}  // namespace normcheck::gen
