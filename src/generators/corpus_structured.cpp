// The structured adversarial cases of the corpus (properties/corpus/structured.txt): inputs built to
// sit on the edges of the arithmetic, and the hard inputs of real bug trackers (DESIGN.md section 7).
// Written by `normcheck search --structured --out properties/corpus/structured.txt`.
#include <cmath>

#include "core/rng.hpp"
#include "generators/corpus.hpp"

namespace normcheck {
namespace {

/// The next value of dt above v (v finite, exactly representable).
double next_up(double v, DType dt) {
  const int64_t key = static_cast<int64_t>(dtype_bits(v, dt));
  return v >= 0 ? dtype_value(static_cast<uint64_t>(key + 1), dt) : dtype_value(static_cast<uint64_t>(key - 1), dt);
}

/// One case of `rows` x `n` from row values (rounded to dt), gamma = 1, beta = 0, dy ~ N(0, 1).
struct Builder {
  DType dt;
  uint64_t seed = 1;
  std::vector<CorpusEntry> out;

  void add(const std::string& name, int64_t rows, int64_t n, double eps, const std::vector<double>& x) {
    CorpusEntry e;
    e.op = Op::layernorm_backward;
    e.variant = "structured";
    e.output = "dx";
    e.name = name;
    LayerNormCase& c = e.c;
    c.dtype = dt;
    c.rows = rows;
    c.n = n;
    c.eps = eps;
    for (double v : x) c.x.push_back(round_to_dtype(v, dt));
    c.gamma.assign(static_cast<size_t>(n), 1.0);
    c.beta.assign(static_cast<size_t>(n), 0.0);
    Rng rng(seed++);
    for (size_t k = 0; k < c.x.size(); ++k) c.dy.push_back(round_to_dtype(rng.normal(), dt));
    c.generator = "corpus";
    if (validate_case(c, true)) return;  // a value this dtype cannot hold (e.g. 2e19 in f16)
    out.push_back(std::move(e));
  }
};

/// Rows of two values a and a + 1 ulp: their mean falls on a tie of the dtype.
void tie_rows(Builder& b) {
  for (const auto& [a, label] : {std::pair{1.0, "1"}, {1000.0, "1000"}, {0.1, "0.1"}}) {
    const double lo = round_to_dtype(a, b.dt), hi = next_up(lo, b.dt);
    b.add(std::string("tie_mean_n2_at_") + label, 1, 2, 1e-5, {lo, hi});
    std::vector<double> alternating;
    for (int j = 0; j < 16; ++j) alternating.push_back(j % 2 ? hi : lo);
    b.add(std::string("tie_mean_alternating_at_") + label, 1, 16, 1e-12, alternating);
  }
}

/// n = 2^k - 1, 2^k, 2^k + 1: divisions by n that round, and the tree shapes of pairwise sums.
void power_of_two_neighbours(Builder& b) {
  Rng rng(77);
  for (const int64_t n : {15, 16, 17, 1023, 1025}) {
    std::vector<double> x;
    for (int64_t j = 0; j < n; ++j) x.push_back(3.0 + rng.normal());
    b.add("n_" + std::to_string(n), 1, n, 1e-5, x);
  }
}

/// eps equal to the variance, and one accumulator ulp above it.
void eps_at_variance(Builder& b) {
  const double s = 0.375, v = s * s;
  const double u = dtype_info(dtype_info(b.dt).default_accum).unit_roundoff;
  b.add("eps_equals_variance", 1, 2, v, {-s, s});
  b.add("eps_one_ulp_above_variance", 1, 4, v * (1 + 2 * u), {-s, -s, s, s});
}

/// eps near the accumulator's largest value, alone and with a variance that makes v + eps overflow.
void eps_near_accumulator_max(Builder& b) {
  const DTypeInfo& a = dtype_info(dtype_info(b.dt).default_accum);
  b.add("eps_at_accumulator_max", 1, 8, a.max_finite, {1, -2, 3, -4, 5, -6, 7, -8});
  b.add("eps_half_accumulator_max", 1, 8, 0.5 * a.max_finite, {1, -2, 3, -4, 5, -6, 7, -8});
  const double big = a.id == DType::f64 ? std::ldexp(1.0, 511) : std::ldexp(1.0, 63);  // variance 2^1022 / 2^126
  b.add("variance_plus_eps_overflows", 1, 2, 0.9 * a.max_finite, {-big, big});
}

/// The hard inputs of DESIGN.md section 7.
void tracker_inputs(Builder& b) {
  Rng rng(20261201);
  std::vector<double> x;
  for (int k = 0; k < 20; ++k) x.push_back(2000 + rng.normal());
  b.add("pytorch_51102_randn_plus_2000", 5, 4, 1e-5, x);
  x.clear();
  for (const double mean : {100.0, 1e4})
    for (int i = 0; i < 16; ++i) x.push_back(mean + i * 1e-3);
  b.add("burn_5607_mean_plus_i_1e-3", 2, 16, 1e-5, x);
  x.clear();
  for (int i = 0; i < 16; ++i) x.push_back(1449 + 0.01 * rng.normal());
  b.add("mlx_2238_values_near_1449", 1, 16, 1e-5, x);
  x.clear();
  for (int i = 0; i < 64; ++i) x.push_back(-11 + 2e-6 * rng.normal());
  b.add("jax_30426_minus_11_plus_noise", 1, 64, 1e-5, x);
  b.add("pytorch_41527_zero_row_eps_1e-12", 1, 8, 1e-12, std::vector<double>(8, 0.0));
  b.add("deepspeed_581_constant_row_eps_1e-12", 1, 8, 1e-12, std::vector<double>(8, 0.5));
  x.clear();
  for (int i = 0; i < 16; ++i) x.push_back((i % 2 ? -8000.0 : 8000.0) + 100 * rng.normal());
  b.add("onnxruntime_29034_f16_squares_overflow", 1, 16, 1e-5, x);
  x.clear();
  for (int i = 0; i < 16; ++i) x.push_back(2e19 * (1 + 0.01 * rng.normal()));
  b.add("tt_metal_55159_f32_squares_overflow", 1, 16, 1e-6, x);
}

}  // namespace

std::vector<CorpusEntry> structured_corpus() {
  std::vector<CorpusEntry> all;
  for (DType dt : dtype_ids()) {
    Builder b{dt, 1, {}};
    tie_rows(b);
    power_of_two_neighbours(b);
    eps_at_variance(b);
    eps_near_accumulator_max(b);
    tracker_inputs(b);
    for (auto& e : b.out) all.push_back(std::move(e));
  }
  return all;
}

}  // namespace normcheck
