#include "generators/contraction_generators.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "generators/generators.hpp"

namespace normcheck::gen {
namespace {

std::vector<double> normals(Rng& rng, DType dt, int64_t count, double mean, double sd) {
  std::vector<double> v(static_cast<size_t>(count));
  for (double& e : v) e = normal(rng, dt, mean, sd);
  return v;
}

/// A = U V with U (n x r), V (r x d), rounded to dt: rank at most r.
std::vector<double> low_rank(Rng& rng, DType dt, int64_t n, int64_t d, int64_t r) {
  const auto u = normals(rng, dt, n * r, 0, 1), v = normals(rng, dt, r * d, 0, 1 / std::sqrt(static_cast<double>(r)));
  std::vector<double> a(static_cast<size_t>(n * d));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < d; ++i) {
      double s = 0;
      for (int64_t l = 0; l < r; ++l) s += u[j * r + l] * v[l * d + i];
      a[j * d + i] = round_to_dtype(s, dt);
    }
  return a;
}

}  // namespace

const std::vector<std::string>& contraction_generator_names() {
  static const std::vector<std::string> names = {"random",        "no_bias",           "signed_gamma",
                                                 "no_affine",     "zero_producer",     "constant_producer",
                                                 "rank_deficient", "wide",             "shared_consumers"};
  return names;
}

bool is_contraction_generator(std::string_view name) {
  const auto& n = contraction_generator_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

ContractionCase make_contraction_case(std::string_view generator, DType dt, uint64_t seed, const ContractionShape& shape) {
  if (!is_contraction_generator(generator))
    throw std::invalid_argument("unknown contraction generator '" + std::string(generator) + "'");
  Rng rng(seed);
  ContractionCase c;
  c.dtype = dt;
  c.generator = std::string(generator);
  c.seed = seed;
  AffineLnAffine& b = c.block;
  b.d = rng.log_range(1, shape.max_d);
  b.n = rng.log_range(2, shape.max_n);
  b.m = rng.log_range(1, shape.max_m);
  if (generator == "wide" && !shape.exact) {  // n < d + 1: R is n x (d + 1), upper trapezoidal
    b.d = std::max<int64_t>(b.d, 8);
    b.n = rng.range(2, std::min<int64_t>(b.d, shape.max_n));
  }
  if (shape.exact) {
    b.d = shape.max_d;
    b.n = shape.max_n;
    b.m = shape.max_m;
  }
  if (generator == "shared_consumers" && b.m >= 2 && shape.exact) {
    b.consumer_rows = {b.m / 2, b.m - b.m / 2};
  } else if (generator == "shared_consumers") {
    b.consumer_rows = {rng.log_range(1, shape.max_m), rng.log_range(1, shape.max_m)};
    if (rng.range(0, 1)) b.consumer_rows.push_back(rng.log_range(1, shape.max_m));
    b.m = 0;
    for (int64_t r : b.consumer_rows) b.m += r;
  }
  b.eps = model_eps(rng);
  const double ascale = 1 / std::sqrt(static_cast<double>(b.d));
  if (generator == "zero_producer") {
    b.A.assign(static_cast<size_t>(b.n * b.d), 0.0);
    b.a.assign(static_cast<size_t>(b.n), 0.0);
  } else if (generator == "constant_producer") {  // every row of A equal and a constant: P h = 0
    const auto row = normals(rng, dt, b.d, 0, ascale);
    const double shift = normal(rng, dt, 0, 1);
    for (int64_t j = 0; j < b.n; ++j) b.A.insert(b.A.end(), row.begin(), row.end());
    b.a.assign(static_cast<size_t>(b.n), shift);
  } else if (generator == "rank_deficient") {
    b.A = low_rank(rng, dt, b.n, b.d, std::max<int64_t>(1, std::min(b.n, b.d) / 3));
    b.a = normals(rng, dt, b.n, 0, 0.5);
  } else {
    b.A = normals(rng, dt, b.n * b.d, 0, ascale);
    if (generator != "no_bias") b.a = normals(rng, dt, b.n, 0, 0.5);
  }
  if (generator == "signed_gamma") {
    b.gamma = normals(rng, dt, b.n, 0, 1);
    b.beta = normals(rng, dt, b.n, 0, 0.5);
  } else if (generator != "no_affine") {
    b.gamma = normals(rng, dt, b.n, 1, 0.2);
    b.beta = normals(rng, dt, b.n, 0, 0.2);
  }
  b.W = normals(rng, dt, b.m * b.n, 0, 1 / std::sqrt(static_cast<double>(b.n)));
  if (generator != "no_bias") b.b = normals(rng, dt, b.m, 0, 0.2);
  c.rows = rng.range(1, static_cast<int>(shape.max_rows));
  c.x = normals(rng, dt, c.rows * b.d, 0, 1);
  c.dy = normals(rng, dt, c.rows * b.m, 0, 1);
  return c;
}

}  // namespace normcheck::gen
