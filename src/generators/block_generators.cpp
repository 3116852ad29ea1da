#include "generators/block_generators.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "generators/generators.hpp"

namespace normcheck::gen {
namespace {

/// y - b of the block in double: a guide for the "cancel" generator, never a reference.
std::vector<double> approx_pre_bias_output(const RmsBlockCase& c) {
  std::vector<double> y(static_cast<size_t>(c.rows * c.m));
  for (int64_t i = 0; i < c.rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < c.n; ++j) ss += c.x[i * c.n + j] * c.x[i * c.n + j];
    const double r = 1 / std::sqrt(ss / static_cast<double>(c.n) + c.eps);
    for (int64_t k = 0; k < c.m; ++k) {
      double s = 0;
      for (int64_t j = 0; j < c.n; ++j) s += c.w[k * c.n + j] * c.g[j] * c.x[i * c.n + j];
      y[i * c.m + k] = r * s;
    }
  }
  return y;
}

}  // namespace

const std::vector<std::string>& block_generator_names() {
  static const std::vector<std::string> names = {"normal", "no_bias", "cancel", "wide"};
  return names;
}

bool is_block_generator(std::string_view name) {
  const auto& n = block_generator_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

RmsBlockCase make_rms_block_case(std::string_view generator, DType dt, uint64_t seed) {
  if (!is_block_generator(generator)) throw std::invalid_argument("unknown block generator '" + std::string(generator) + "'");
  Rng rng(seed);
  RmsBlockCase c;
  c.dtype = dt;
  c.generator = std::string(generator);
  c.seed = seed;
  c.rows = rng.range(1, 4);
  c.n = generator == "wide" ? 1024 : rng.log_range(4, 256);
  c.m = rng.log_range(4, 128);
  c.eps = model_eps(rng);
  for (int64_t k = 0; k < c.rows * c.n; ++k) c.x.push_back(normal(rng, dt, 0, 1));
  for (int64_t j = 0; j < c.n; ++j) c.g.push_back(normal(rng, dt, 1, 0.3));
  const double wscale = 1 / std::sqrt(static_cast<double>(c.n));
  for (int64_t k = 0; k < c.m * c.n; ++k) c.w.push_back(normal(rng, dt, 0, wscale));
  if (generator != "no_bias")
    for (int64_t k = 0; k < c.m; ++k) c.b.push_back(normal(rng, dt, 0, 0.1));
  if (generator == "cancel") {
    for (double v : approx_pre_bias_output(c)) c.dy.push_back(round_to_dtype(v, dt));
  } else {
    for (int64_t k = 0; k < c.rows * c.m; ++k) c.dy.push_back(normal(rng, dt, 0, 1));
  }
  return c;
}

}  // namespace normcheck::gen
