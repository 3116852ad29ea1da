// Issue 42 item 3: the statistics bounds of docs/bounds.md section 2.7 hold for every algorithm of
// their class. A random Welford merge tree (any shape: chains either way, balanced, random splits),
// each merge in a random one of the class's forms (PyTorch GPU, PyTorch CPU with a reciprocal,
// Apex's weighted means, Welford's step with the new mean), with or without FMA, must stay within
// LN-WELFORDMERGE-ANY's e_mu and e_v on rows of every generator (subnormal, near the maximum,
// large means, log-uniform, ...); the built-in welford_chunked and two_pass_blocked kernels within
// their own (BLOCKED) bounds. Checked against the certified oracle's mean and variance.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "bounds/bounds_model.hpp"
#include "core/layernorm_case.hpp"
#include "kernels/layernorm_reductions.hpp"
#include "oracles/certified_layernorm.hpp"
#include "properties/rc_generators.hpp"

namespace {

using namespace normcheck;
using bounds_detail::RowError;

/// A partial of the merge tree, in the accumulator type A.
template <class A>
struct Part {
  A count, mean, m2;
};

/// One merge of the class, in the form `form` (0-3: the mean's forms, times the M2's), FMA or not.
template <class A>
Part<A> merge(const Part<A>& a, const Part<A>& b, int mean_form, int m2_form, bool fused) {
  const auto mad = [fused](A x, A y, A z) { return fused ? static_cast<A>(std::fma(x, y, z)) : static_cast<A>(x * y + z); };
  const A n = a.count + b.count, delta = b.mean - a.mean;
  Part<A> p{n, 0, 0};
  switch (mean_form) {
    case 0: p.mean = mad(delta, b.count / n, a.mean); break;                       // PyTorch GPU: a + delta (n_b / n)
    case 1: p.mean = mad(delta, (A(1) / n) * b.count, a.mean); break;              // a reciprocal, then n_b
    case 2: p.mean = mad(delta / n, b.count, a.mean); break;                       // delta / n, then n_b (Welford: delta / k)
    default: p.mean = mad(a.count / n, a.mean, (b.count / n) * b.mean); break;     // Apex: weighted means
  }
  if (m2_form == 3 && b.count == A(1)) {  // Welford's step: delta (x - mean_new), the computed new mean
    p.m2 = mad(delta, b.mean - p.mean, a.m2);
    return p;
  }
  switch (m2_form % 3) {
    case 0: p.m2 = mad(delta * delta * a.count, b.count / n, a.m2 + b.m2); break;      // PyTorch GPU
    case 1: p.m2 = a.m2 + mad(delta * delta * (b.count / n), a.count, b.m2); break;   // PyTorch CPU AddMoments
    default: p.m2 = mad(delta * delta * (a.count / n) * (b.count / n), n, a.m2 + b.m2); break;  // Apex
  }
  return p;
}

/// A random merge tree over x[lo, hi): splits at lo + 1, hi - 1 (chains either way) or anywhere.
template <class A>
Part<A> random_tree(const std::vector<A>& x, int64_t lo, int64_t hi, std::mt19937_64& rng) {
  if (hi - lo == 1) return {A(1), x[static_cast<size_t>(lo)], A(0)};
  const int64_t span = hi - lo;
  const uint64_t pick = rng() % 4;
  const int64_t mid = pick == 0 ? hi - 1 : pick == 1 ? lo + 1 : pick == 2 ? lo + span / 2 : lo + 1 + static_cast<int64_t>(rng() % (span - 1));
  const Part<A> a = random_tree(x, lo, mid, rng), b = random_tree(x, mid, hi, rng);
  return merge(a, b, static_cast<int>(rng() % 4), static_cast<int>(rng() % 4), rng() % 2 == 0);
}

/// The mean and variance within the bounds of `m` on row i (unless the row's overflow is predicted).
void expect_within(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, int64_t i, const BoundModel& m, double mean,
                   double var, const std::string& what) {
  const bounds_detail::Units u = bounds_detail::units_of(m);
  const RowError r = bounds_detail::row_error(c, ref, i, m, u);
  if (r.regime & kRegimeOverflow) return;  // void: Inf/NaN allowed
  const auto i_ = static_cast<size_t>(i);
  RC_ASSERT(std::isfinite(mean));
  RC_ASSERT(std::isfinite(var));
  const double mean_err = std::fabs(mean - ref.mean[i_]), var_err = std::fabs(var - ref.var[i_]);
  if (!(mean_err <= (r.e_mu + ref.mean_rad[i_]) * (1 + 0x1p-40)) || !(var_err <= (r.e_v + ref.var_rad[i_]) * (1 + 0x1p-40)))
  {
    char why[256];
    std::snprintf(why, sizeof why, "%s row %lld n %lld: |mu err| %.6g vs e_mu %.6g, |v err| %.6g vs e_v %.6g", what.c_str(),
                  static_cast<long long>(i), static_cast<long long>(c.n), mean_err, r.e_mu, var_err, r.e_v);
    RC_FAIL(why);
  }
}

const std::vector<std::string> kGenerators = {"normal", "large_mean", "large_mean_extreme", "log_uniform", "near_max", "subnormal",
                                              "overflow_prone", "constant", "n_equals_1", "eps_dominant", "subnormal_output"};

template <class S>
void check_dtype(uint64_t tree_seed) {
  using A = default_accum_t<S>;
  const DType dt = dtype_traits<S>::id;
  const LayerNormCase c = *rcgen::layernorm_case(dt, kGenerators, 1024);
  const oracle::CertifiedLayerNorm ref = oracle::certified_layernorm(c, false);
  std::mt19937_64 rng(tree_seed);
  const DType accum = dtype_info(dt).default_accum;
  for (int64_t i = 0; i < c.rows; ++i) {
    std::vector<A> x(static_cast<size_t>(c.n));
    std::vector<S> xs(static_cast<size_t>(c.n));
    for (int64_t j = 0; j < c.n; ++j) {
      xs[static_cast<size_t>(j)] = dtype_traits<S>::from_double(c.x[static_cast<size_t>(i * c.n + j)]);
      x[static_cast<size_t>(j)] = num::convert<A>(xs[static_cast<size_t>(j)]);
    }
    const Part<A> p = random_tree(x, 0, c.n, rng);
    const A n = static_cast<A>(c.n);
    const A var = rng() % 2 ? p.m2 / n : p.m2 * (A(1) / n);
    expect_within(c, ref, i, {StatsModel::welford_merge, dt, accum, SumOrder::sequential}, p.mean, var, "random tree");
    const kernels::RowStats<A> w = kernels::row_stats_welford_chunked<S, A>(xs.data(), c.n, A(1));
    expect_within(c, ref, i, {StatsModel::welford_merge, dt, accum, SumOrder::blocked}, w.mean, w.var, "welford_chunked");
    const kernels::RowStats<A> t = kernels::row_stats_two_pass_blocked<S, A>(xs.data(), c.n, A(1));
    expect_within(c, ref, i, {StatsModel::two_pass, dt, accum, SumOrder::blocked}, t.mean, t.var, "two_pass_blocked");
  }
}

RC_GTEST_PROP(WelfordMerge, EveryMergeTreeAndFormStaysWithinTheClassBound, (uint64_t tree_seed)) {
  switch (*rc::gen::inRange(0, 4)) {
    case 0: check_dtype<float>(tree_seed); break;
    case 1: check_dtype<double>(tree_seed); break;
    case 2: check_dtype<f16>(tree_seed); break;
    default: check_dtype<bf16>(tree_seed); break;
  }
}

TEST(WelfordMerge, TheOverflowOfAMergeIsPredictedWhereTwoPassHasNone) {
  // n = 2, x = (a, -a): the merge squares delta = -2a (4 a^2) where two-pass squares d = +-a (2 a^2 in
  // all): for a^2 between max/4 and max/2 only the Welford class predicts the overflow.
  const double a = std::sqrt(0x1.fffffffffffffp+1023 / 3);
  LayerNormCase c;
  c.dtype = DType::f64;
  c.rows = 1;
  c.n = 2;
  c.eps = 1e-5;
  c.x = {a, -a};
  c.gamma = {1, 1};
  c.beta = {0, 0};
  const oracle::CertifiedLayerNorm ref = oracle::certified_layernorm(c, false);
  const auto regime = [&](StatsModel s) {
    const BoundModel m{s, DType::f64, DType::f64, SumOrder::sequential};
    return bounds_detail::row_error(c, ref, 0, m, bounds_detail::units_of(m)).regime & kRegimeOverflow;
  };
  EXPECT_FALSE(regime(StatsModel::two_pass));
  EXPECT_TRUE(regime(StatsModel::welford_merge));
  const std::vector<double> x = {a, -a};
  const Part<double> p = merge(Part<double>{1, a, 0}, Part<double>{1, -a, 0}, 0, 0, false);
  EXPECT_TRUE(std::isinf(p.m2));  // and the merge does overflow: the prediction is not spurious
}

}  // namespace
