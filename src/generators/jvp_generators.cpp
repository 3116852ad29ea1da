#include "generators/jvp_generators.hpp"

#include "core/rng.hpp"
#include "generators/generators.hpp"

namespace normcheck::gen {

const std::vector<std::string>& jvp_generator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const std::string& g : row_generator_names())
      if (g != kCorpusGenerator) out.push_back(g);
    return out;
  }();
  return names;
}

JvpCase make_jvp_case(const std::string& generator, DType dt, uint64_t seed, int64_t max_elements) {
  ShapeRequest shape;
  shape.max_elements = max_elements;
  JvpCase j;
  j.c = make_layernorm_case(generator, dt, seed, shape);
  Rng rng(seed ^ 0x6a7670u);  // the tangents' own stream: the case is the row generator's, unchanged
  for (size_t k = 0; k < j.c.x.size(); ++k) j.t.dx.push_back(normal(rng, dt, 0, 1));
  for (int64_t k = 0; k < j.c.n; ++k) {
    j.t.dgamma.push_back(normal(rng, dt, 0, 0.5));
    j.t.dbeta.push_back(normal(rng, dt, 0, 0.5));
  }
  return j;
}

}  // namespace normcheck::gen
