#pragma once
/// Our own floating-point generators (RapidCheck's double generator never yields subnormals,
/// signed zeros or extreme exponents). Scalars are produced directly in the storage dtype; row
/// generators produce whole LayerNorm cases, deterministically from (generator, dtype, seed).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/layernorm_case.hpp"
#include "core/rng.hpp"

namespace normcheck::gen {

/// Scalar generators; every result is exactly representable in `dt`.
double random_bits(Rng& rng, DType dt);              ///< any finite bit pattern
double log_uniform(Rng& rng, DType dt, int emin, int emax);  ///< random sign, exponent in [emin, emax]
double subnormal(Rng& rng, DType dt);                ///< nonzero subnormal of dt, random sign
double near_max(Rng& rng, DType dt, double limit);   ///< within a factor 2 below `limit`
double signed_zero(Rng& rng);                        ///< +0 or -0
double normal(Rng& rng, DType dt, double mean, double sd);  ///< N(mean, sd) rounded to dt
/// eps as real models set it: 1e-5, 1e-6, 1e-12, 1e-8, 0.5, or log-uniform in [1e-12, 1], each with
/// probability 1/6 (every suite draws it, so a kernel that ignores its eps argument cannot pass).
double model_eps(Rng& rng);

/// Optional shape request; 0 lets the generator choose.
struct ShapeRequest {
  int64_t rows = 0;
  int64_t n = 0;
  int64_t max_elements = 65536;  ///< cap on rows*n when the generator chooses the shape
};

/// The pseudo-generator that replays the committed worst-case corpus (properties/corpus): its case
/// i of a dtype is the corpus's i-th case of that dtype, whatever the shape request.
inline constexpr const char* kCorpusGenerator = "corpus";

/// Names of the LayerNorm row generators the suites draw, in a fixed order: the corpus first.
const std::vector<std::string>& row_generator_names();

/// Cases of `generator` for dtype dt in a run of `cases_per_generator` cases per generator (the
/// corpus has its own number of cases per dtype).
int64_t generator_case_count(std::string_view generator, DType dt, int64_t cases_per_generator);

/// True if `name` is a row generator.
bool is_row_generator(std::string_view name);

/// Generators no suite draws, for the bounds' and the oracle's rigor tests and by name (`--generators`,
/// `normcheck bounds --generator`): "binade_extreme", rows mixing subnormal, tiny, huge and
/// near-maximal values with eps anywhere in binary64's range (issue 42). A sound kernel may overflow
/// on them where its bound predicts it, which the verdict fails by design (docs/bounds.md 5.4).
const std::vector<std::string>& stress_generator_names();

/// Builds one case (x, gamma, beta, dy, eps) for `generator`; deterministic in (generator, dt,
/// seed, shape). Hard cases follow DESIGN.md section 7. For the corpus, `seed` is the case's index.
/// (rows, n) of make_layernorm_case(generator, dt, seed, shape) without generating its values.
std::pair<int64_t, int64_t> layernorm_case_shape(std::string_view generator, DType dt, uint64_t seed, const ShapeRequest& shape);

LayerNormCase make_layernorm_case(std::string_view generator, DType dt, uint64_t seed,
                                  const ShapeRequest& shape = {});

}  // namespace normcheck::gen
