#pragma once
/// Generators of affine -> LayerNorm -> affine cases covering the seed's test categories
/// (qr-contraction-across-layernorm), deterministic in (generator, dtype, seed); every parameter
/// and input is exactly representable in the dtype.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/contraction_case.hpp"

namespace normcheck::gen {

/// "random" (all biases and affine parameters), "no_bias", "signed_gamma" (nonuniform signed
/// LayerNorm scales), "no_affine" (no LayerNorm parameters), "zero_producer" (A = 0, a = 0:
/// T = 0), "constant_producer" (every feature equal: T = 0), "rank_deficient" (rank A < min(n, d)),
/// "wide" (n < d + 1), "shared_consumers" (2-3 consumers sharing one R).
const std::vector<std::string>& contraction_generator_names();
bool is_contraction_generator(std::string_view name);

/// Shape limits of a generated case (the oracle's cost is rows (n d + m n) interval operations).
struct ContractionShape {
  int64_t max_d = 48, max_n = 64, max_m = 32, max_rows = 3;
  bool exact = false;  ///< use max_d, max_n, max_m as the shape (the generator's structure kept)
};

/// Throws std::invalid_argument for an unknown generator.
ContractionCase make_contraction_case(std::string_view generator, DType dt, uint64_t seed,
                                      const ContractionShape& shape = {});

}  // namespace normcheck::gen
