#pragma once
/// Cases of the LayerNorm JVP suite: the row generators' (x, gamma, beta, eps) with tangents drawn
/// for them, every value exact in the dtype.
#include <cstdint>
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"

namespace normcheck::gen {

/// The row generators the JVP suite draws from (every row generator except the corpus, whose
/// cases carry no tangents).
const std::vector<std::string>& jvp_generator_names();

/// The case of `generator` (rows*n <= max_elements) and its tangents: dx ~ N(0, 1), dgamma and
/// dbeta ~ N(0, 0.5), rounded to the dtype; deterministic in (generator, dt, seed, max_elements).
struct JvpCase {
  LayerNormCase c;
  LayerNormTangents t;
};
JvpCase make_jvp_case(const std::string& generator, DType dt, uint64_t seed, int64_t max_elements);

}  // namespace normcheck::gen
