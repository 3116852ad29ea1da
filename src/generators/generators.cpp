#include "generators/generators.hpp"

#include <fmt/format.h>

#include "generators/corpus.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace normcheck::gen {
namespace {

const FloatFormat& fmt_of(DType dt) { return *dtype_info(dt).format; }

/// Largest magnitude whose squares, summed n times, stay finite in the accumulator.
double square_safe_limit(DType dt, int64_t n) {
  const DTypeInfo& s = dtype_info(dt);
  const DTypeInfo& a = dtype_info(s.default_accum);
  return std::min(s.max_finite, std::sqrt(a.max_finite / (4.0 * static_cast<double>(n))));
}

struct Shape {
  int64_t rows, n;
};

Shape pick_shape(Rng& rng, const ShapeRequest& req, int64_t n_min) {
  // a fixed row count leaves the row length max_elements / rows at most (never below the generator's minimum)
  const int64_t cap = req.rows > 0 ? std::max<int64_t>(1, req.max_elements / req.rows) : req.max_elements;
  const int64_t n = req.n > 0 ? req.n : rng.log_range(n_min, std::max(n_min, std::min<int64_t>(8192, cap)));
  int64_t rows = req.rows > 0 ? req.rows : rng.log_range(1, 512);
  if (req.rows <= 0) rows = std::max<int64_t>(1, std::min(rows, req.max_elements / n));
  return {rows, n};
}

/// Exponent range of mixed-magnitude gamma and beta: wide, yet |gamma| sqrt(n) + |beta| stays far
/// below the dtype's largest value for n <= 8192.
int mixed_exponent_limit(DType dt) {
  switch (dt) {
    case DType::f16: return 7;
    case DType::bf16:
    case DType::f32: return 20;
    case DType::f64: return 40;
  }
  return 7;
}

/// +-2^U(-e, e) (1 + U(0, 1)) rounded to dt, or 0 with probability 1/zero_odds.
double mixed_magnitude(Rng& rng, DType dt, int zero_odds) {
  if (rng.range(0, zero_odds - 1) == 0) return 0.0;
  const int e = mixed_exponent_limit(dt);
  return log_uniform(rng, dt, -e, e);
}

/// gamma and beta the three ways models hold them: the framework default (1, 0); trained-like
/// gamma ~ N(1, 0.5) with one in eight negated and beta ~ N(0, 0.5); or mixed magnitudes over many
/// binades with some exact zeros (so that beta cannot swamp small or subnormal products). dy ~ N(0, 1).
void fill_affine_and_cotangent(Rng& rng, LayerNormCase& c) {
  c.gamma.resize(static_cast<size_t>(c.n));
  c.beta.resize(static_cast<size_t>(c.n));
  const int64_t mode = rng.range(0, 2);
  for (int64_t j = 0; j < c.n; ++j) {
    if (mode == 0) {
      c.gamma[j] = 1.0;
      c.beta[j] = 0.0;
    } else if (mode == 1) {
      const double g = normal(rng, c.dtype, 1.0, 0.5);
      c.gamma[j] = (rng.next() % 8 == 0) ? -g : g;
      c.beta[j] = normal(rng, c.dtype, 0.0, 0.5);
    } else {
      c.gamma[j] = mixed_magnitude(rng, c.dtype, 16);
      c.beta[j] = mixed_magnitude(rng, c.dtype, 8);
    }
  }
  c.dy.resize(c.x.size());
  for (auto& v : c.dy) v = normal(rng, c.dtype, 0.0, 1.0);
}

using RowFill = void (*)(Rng&, LayerNormCase&);

void fill_normal(Rng& rng, LayerNormCase& c) {
  const double scale = std::ldexp(1.0, static_cast<int>(rng.range(-6, 6)));
  const double shift = rng.normal() * scale;
  for (auto& v : c.x) v = normal(rng, c.dtype, shift, scale);
}

void fill_log_uniform(Rng& rng, LayerNormCase& c) {
  const FloatFormat& f = fmt_of(c.dtype);
  const int hi = std::min(f.emax, static_cast<int>(std::log2(square_safe_limit(c.dtype, c.n))) - 1);
  const int lo = std::max(f.emin - f.precision + 1, hi - 60);
  for (auto& v : c.x) v = log_uniform(rng, c.dtype, lo, hi);
}

void fill_subnormal(Rng& rng, LayerNormCase& c) {
  for (auto& v : c.x) v = rng.coin() ? subnormal(rng, c.dtype) : signed_zero(rng);
  if (rng.coin() && !c.x.empty()) c.x[0] = dtype_info(c.dtype).min_normal;
}

void fill_near_max(Rng& rng, LayerNormCase& c) {
  const double limit = square_safe_limit(c.dtype, c.n);
  for (auto& v : c.x) v = near_max(rng, c.dtype, limit);
}

/// Rows mean + spread * N(0,1) with |mean| / spread log-uniform in [10^lo, 10^hi]; beyond 2^(p-1)
/// the spread falls below half an ulp of the mean and the stored row would be constant, so hi is
/// capped there. |mean| stays where sums of squares are safe.
void fill_mean_over_spread(Rng& rng, LayerNormCase& c, double lo, double hi) {
  hi = std::min(hi, std::log10(std::ldexp(1.0, dtype_info(c.dtype).precision - 1)));
  lo = std::min(lo, hi);
  const double ratio = std::pow(10.0, lo + (hi - lo) * rng.uniform());
  const double limit = 0.25 * square_safe_limit(c.dtype, c.n);
  const double spread = std::min(std::ldexp(1.0, static_cast<int>(rng.range(-8, 8))), limit / ratio);
  const double mean = spread * ratio * (rng.coin() ? 1 : -1);
  for (auto& v : c.x) v = normal(rng, c.dtype, mean, spread);
}

/// Large mean, small spread, within what the default accumulator resolves for a sound two-pass
/// kernel (|mean| / spread <= 1 / (4 n u_acc)), where the one-pass formula already fails.
void fill_large_mean(Rng& rng, LayerNormCase& c) {
  const double u = dtype_info(dtype_info(c.dtype).default_accum).unit_roundoff;
  const double resolvable = std::log10(0.25 / (static_cast<double>(c.n) * u));
  fill_mean_over_spread(rng, c, 2.0, std::min(6.0, resolvable));
}

/// The trackers' extreme rows (|mean| / spread 1e4 ... 1e7, e.g. mean 1e4 + i 1e-3 in f32): often
/// beyond what any sequential-sum kernel resolves; there the a priori bound is void and reported.
void fill_large_mean_extreme(Rng& rng, LayerNormCase& c) { fill_mean_over_spread(rng, c, 4.0, 7.0); }

void fill_constant(Rng& rng, LayerNormCase& c) {
  const double value = rng.coin() ? signed_zero(rng) : normal(rng, c.dtype, 0.0, 4.0);
  std::fill(c.x.begin(), c.x.end(), value);
}

void fill_eps_dominant(Rng& rng, LayerNormCase& c) {
  // Spread about 1e-2 * sqrt(eps), so the variance is about 1e-4 * eps.
  const double center = normal(rng, c.dtype, 0.0, 1.0);
  const double spread = 1e-2 * std::sqrt(c.eps);
  for (auto& v : c.x) v = round_to_dtype(center + spread * rng.normal(), c.dtype);
}

void fill_overflow_prone(Rng& rng, LayerNormCase& c) {
  // Squares of these values overflow storage precision, and sum(x^2) overflows the accumulator
  // where storage allows it, while sum((x - mean)^2) stays finite.
  const DTypeInfo& s = dtype_info(c.dtype);
  const DTypeInfo& a = dtype_info(s.default_accum);
  const double mean = std::min(0.5 * s.max_finite,
                               4.0 * std::sqrt(a.max_finite / static_cast<double>(c.n)));
  // Spread of 2^-min(10, p-3) relative keeps the stored row non-constant in every dtype.
  const double spread = std::ldexp(mean, -std::min(10, s.precision - 3));
  for (auto& v : c.x) v = normal(rng, c.dtype, mean, spread);
}

/// Rows whose outputs are subnormal in the dtype: x ~ N(0, 1); even columns have a subnormal gain
/// and no shift (y = gamma z subnormal), odd columns a subnormal cotangent (dgamma, dbeta and, through
/// the row means, dx subnormal). A kernel that flushes subnormals to zero fails here.
void fill_subnormal_output(Rng& rng, LayerNormCase& c) {
  for (auto& v : c.x) v = normal(rng, c.dtype, 0.0, 1.0);
}

void make_outputs_subnormal(Rng& rng, LayerNormCase& c) {
  for (int64_t j = 0; j < c.n; ++j) {
    if (j % 2 == 0) {
      c.gamma[j] = subnormal(rng, c.dtype);
      c.beta[j] = 0.0;
    }
    for (int64_t i = 0; i < c.rows; ++i)
      if (j % 2 == 1) c.dy[static_cast<size_t>(i * c.n + j)] = subnormal(rng, c.dtype);
  }
}

/// One value of a binade-extreme row (issue 42): +-0, a subnormal, a tiny normal, a moderate value,
/// a huge one, one near the dtype's largest, or (when `previous` is given) that value again or its
/// neighbour, so that the rows mix every binade with exact repeats and one-ULP differences.
double extreme_value(Rng& rng, DType dt, const double* previous) {
  const FloatFormat& f = fmt_of(dt);
  const double max = dtype_info(dt).max_finite;
  const auto clamp = [max](double v) { return std::copysign(std::min(std::fabs(v), max), v); };
  switch (rng.range(0, previous ? 6 : 5)) {
    case 0: return signed_zero(rng);
    case 1: return subnormal(rng, dt);
    case 2: return clamp(log_uniform(rng, dt, f.emin, f.emin + 8));
    case 3: return log_uniform(rng, dt, -8, 8);
    case 4: return clamp(log_uniform(rng, dt, f.emax - 8, f.emax - 1));
    case 5: return near_max(rng, dt, max);
    default: break;
  }
  if (rng.coin()) return *previous;
  const int64_t key = ordered_key(encode_exact(*previous, f), f) + (rng.coin() ? 1 : -1);
  const double next = decode_bits(bits_from_ordered_key(key, f), f);
  return std::isfinite(next) ? next : *previous;
}

/// eps over the whole binary64 range: a model's eps, a subnormal, a tiny or a huge one.
double extreme_eps(Rng& rng) {
  switch (rng.range(0, 3)) {
    case 0: return model_eps(rng);
    case 1: return std::ldexp(static_cast<double>(rng.range(1, 1 << 20)), -1074);
    case 2: return std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.range(-1022, -900)));
    default: return std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.range(0, 1000)));
  }
}

/// Rows, gains, shifts and cotangents mixing subnormal, tiny, moderate and huge values of the dtype,
/// with eps anywhere in binary64's range (issue 42: every bound must survive its own underflow and
/// overflow). Short rows, so that one extreme element dominates its row.
void fill_binade_extreme(Rng& rng, LayerNormCase& c) {
  c.eps = extreme_eps(rng);
  for (size_t k = 0; k < c.x.size(); ++k) c.x[k] = extreme_value(rng, c.dtype, k % static_cast<size_t>(c.n) ? &c.x[k - 1] : nullptr);
}

void fill_extreme_affine_and_cotangent(Rng& rng, LayerNormCase& c) {
  for (int64_t j = 0; j < c.n; ++j) {
    c.gamma[j] = rng.range(0, 3) == 0 ? 1.0 : extreme_value(rng, c.dtype, nullptr);
    c.beta[j] = rng.range(0, 3) == 0 ? 0.0 : extreme_value(rng, c.dtype, nullptr);
  }
  for (auto& v : c.dy) v = extreme_value(rng, c.dtype, nullptr);
}

struct RowGenerator {
  const char* name;
  RowFill fill;
  int64_t fixed_n;  ///< 0: free
  int64_t min_n;    ///< smallest row length the generator draws when free
  bool in_suites = true;  ///< false: a stress generator (stress_generator_names), by name only
};

const std::vector<RowGenerator>& row_generators() {
  static const std::vector<RowGenerator> table = {
      {"normal", fill_normal, 0, 1},
      {"log_uniform", fill_log_uniform, 0, 1},
      {"subnormal", fill_subnormal, 0, 1},
      {"near_max", fill_near_max, 0, 1},
      {"large_mean", fill_large_mean, 0, 16},  // burn#5607 used n = 16
      {"large_mean_extreme", fill_large_mean_extreme, 0, 4},  // pytorch#51102 used n = 4
      {"constant", fill_constant, 0, 1},
      {"n_equals_1", fill_normal, 1, 1},
      {"eps_dominant", fill_eps_dominant, 0, 1},
      {"overflow_prone", fill_overflow_prone, 0, 2},
      {"subnormal_output", fill_subnormal_output, 0, 2},
      {"binade_extreme", fill_binade_extreme, 0, 1, false},
  };
  return table;
}

}  // namespace

double model_eps(Rng& rng) {
  static constexpr double kEps[] = {1e-5, 1e-6, 1e-12, 1e-8, 0.5};
  const int64_t k = rng.range(0, 5);
  return k < 5 ? kEps[k] : std::pow(10.0, -12.0 + 12.0 * rng.uniform());
}

double random_bits(Rng& rng, DType dt) {
  const FloatFormat& f = fmt_of(dt);
  for (;;) {
    const uint64_t mask = f.total_bits == 64 ? ~uint64_t{0} : ((uint64_t{1} << f.total_bits) - 1);
    const double v = decode_bits(rng.next() & mask, f);
    if (std::isfinite(v)) return v;
  }
}

double log_uniform(Rng& rng, DType dt, int emin, int emax) {
  const int e = static_cast<int>(rng.range(emin, emax));
  const double m = 1.0 + rng.uniform();
  const double v = round_to_dtype(std::ldexp(m, e), dt);
  return rng.coin() ? -v : v;
}

double subnormal(Rng& rng, DType dt) {
  const FloatFormat& f = fmt_of(dt);
  const uint64_t mant = 1 + rng.next() % ((uint64_t{1} << (f.precision - 1)) - 1);
  const double v = std::ldexp(static_cast<double>(mant), f.emin - (f.precision - 1));
  return rng.coin() ? -v : v;
}

double near_max(Rng& rng, DType dt, double limit) {
  const double v = round_to_dtype(limit * (0.5 + 0.5 * rng.uniform()), dt);
  const double capped = std::min(v, dtype_info(dt).max_finite);
  return rng.coin() ? -capped : capped;
}

double signed_zero(Rng& rng) { return rng.coin() ? -0.0 : 0.0; }

double normal(Rng& rng, DType dt, double mean, double sd) {
  return round_to_dtype(mean + sd * rng.normal(), dt);
}

const std::vector<std::string>& row_generator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out{kCorpusGenerator};
    for (const auto& g : row_generators())
      if (g.in_suites) out.emplace_back(g.name);
    return out;
  }();
  return names;
}

int64_t generator_case_count(std::string_view generator, DType dt, int64_t cases_per_generator) {
  return generator == kCorpusGenerator ? static_cast<int64_t>(corpus_cases(dt).size()) : cases_per_generator;
}

const std::vector<std::string>& stress_generator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& g : row_generators())
      if (!g.in_suites) out.emplace_back(g.name);
    return out;
  }();
  return names;
}

bool is_row_generator(std::string_view name) {
  for (const auto* names : {&row_generator_names(), &stress_generator_names()})
    if (std::find(names->begin(), names->end(), name) != names->end()) return true;
  return false;
}

namespace {

const RowGenerator& row_generator_named(std::string_view generator) {
  const auto& table = row_generators();
  const auto it = std::find_if(table.begin(), table.end(), [&](const RowGenerator& g) { return g.name == generator; });
  if (it == table.end()) throw std::invalid_argument("unknown generator '" + std::string(generator) + "'");
  return *it;
}

}  // namespace

std::pair<int64_t, int64_t> layernorm_case_shape(std::string_view generator, DType dt, uint64_t seed, const ShapeRequest& shape) {
  if (generator == kCorpusGenerator) {
    const LayerNormCase& c = make_layernorm_case(generator, dt, seed, shape);
    return {c.rows, c.n};
  }
  const RowGenerator& g = row_generator_named(generator);
  Rng rng(seed);  // the first draws of make_layernorm_case
  ShapeRequest req = shape;
  if (g.fixed_n > 0) req.n = g.fixed_n;
  const Shape s = pick_shape(rng, req, g.min_n);
  return {s.rows, s.n};
}

LayerNormCase make_layernorm_case(std::string_view generator, DType dt, uint64_t seed,
                                  const ShapeRequest& shape) {
  if (generator == kCorpusGenerator) {  // the committed corpus: case `seed` of the dtype's list
    const auto& cases = corpus_cases(dt);
    if (cases.empty()) throw std::invalid_argument("the corpus has no case of this dtype");
    return cases[seed % cases.size()];
  }
  const RowGenerator* it = &row_generator_named(generator);
  Rng rng(seed);
  LayerNormCase c;
  c.dtype = dt;
  c.generator = std::string(generator);
  c.seed = seed;
  ShapeRequest req = shape;
  if (it->fixed_n > 0) req.n = it->fixed_n;
  const Shape s = pick_shape(rng, req, it->min_n);
  c.rows = s.rows;
  c.n = s.n;
  c.eps = model_eps(rng);
  const std::optional<int64_t> elements = case_elements(c.rows, c.n);
  if (!elements)
    throw std::invalid_argument(fmt::format("shape rows = {}, n = {} exceeds {} elements per case", c.rows, c.n, kMaxCaseElements));
  c.x.resize(static_cast<size_t>(*elements));
  it->fill(rng, c);
  fill_affine_and_cotangent(rng, c);
  if (it->fill == fill_subnormal_output) make_outputs_subnormal(rng, c);
  if (it->fill == fill_binade_extreme) fill_extreme_affine_and_cotangent(rng, c);
  if (auto err = validate_case(c, true))
    throw std::logic_error("generator '" + c.generator + "' produced an invalid case: " + *err);
  return c;
}

}  // namespace normcheck::gen
