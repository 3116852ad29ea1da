// The lean MPFI type (oracles/lean_interval.hpp) is Boost's mpfi_float_backend without the
// allocations: its operations give MPFI's endpoints bit for bit on random and singular operands
// (zeros of both signs, infinities, NaN, intervals containing zero), the LayerNorm, RMSNorm, JVP,
// block and grouped-norm oracles on it give Boost's certificates bit for bit, and a warm evaluation calls GMP's
// allocator almost never where Boost's calls it dozens of times per element.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include <gmp.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "oracles/boost_mpfi_reference.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"
#include "oracles/lean_interval.hpp"
#include "generators/block_generators.hpp"
#include "generators/generators.hpp"
#include "generators/grouped_generators.hpp"
#include "generators/jvp_generators.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/grouped_suite.hpp"

using namespace normcheck;
using Lean = oracle::LeanInterval<168>;

namespace {

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

/// Two MPFR numbers are the same datum: both NaN, or equal with the same sign (zeros included).
bool same_number(mpfr_srcptr a, mpfr_srcptr b) {
  if (mpfr_nan_p(a) || mpfr_nan_p(b)) return mpfr_nan_p(a) && mpfr_nan_p(b);
  return mpfr_equal_p(a, b) && mpfr_signbit(a) == mpfr_signbit(b);
}

void expect_same_interval(mpfi_srcptr lean, mpfi_srcptr mpfi) {
  RC_ASSERT(same_number(&lean->left, &mpfi->left));
  RC_ASSERT(same_number(&lean->right, &mpfi->right));
}

/// An endpoint: mostly ordinary doubles of both signs, often the singular ones.
double endpoint() {
  switch (*rc::gen::inRange(0, 10)) {
    case 0: return *rc::gen::element(0.0, -0.0);
    case 1: return *rc::gen::element(HUGE_VAL, -HUGE_VAL, std::numeric_limits<double>::quiet_NaN());
    case 2: return *rc::gen::element(0x1p-1074, -0x1p-1074, 0x1.fffffffffffffp+1023, -0x1p-1022);
    default: return std::ldexp(*rc::gen::inRange(-(1 << 20), 1 << 20) + 0.5, *rc::gen::inRange(-60, 60));
  }
}

/// A random interval: a point, or two endpoints in order (so it may contain zero), at 168 bits.
Lean random_interval() {
  const double a = endpoint();
  if (*rc::gen::inRange(0, 3) == 0) return Lean(a);
  const double b = *rc::gen::inRange(0, 2) == 0 ? endpoint() : std::nextafter(a, HUGE_VAL) * (1 + 0x1p-40);
  Lean r(a);
  mpfi_interv_d(const_cast<mpfi_ptr>(r.data()), std::fmin(a, b), std::fmax(a, b));  // NaN stays NaN
  return r;
}

/// An MPFI interval of 168 bits holding a copy of x.
struct Reference {
  explicit Reference(mpfi_srcptr x) {
    mpfi_init2(v, 168);
    mpfi_set(v, x);
  }
  ~Reference() { mpfi_clear(v); }
  mpfi_t v;
};

void expect_same_values(const std::vector<CertifiedValue>& lean, const std::vector<CertifiedValue>& boost) {
  RC_ASSERT(lean.size() == boost.size());
  for (size_t k = 0; k < lean.size(); ++k) {
    RC_ASSERT(bits_of(lean[k].hi) == bits_of(boost[k].hi));
    RC_ASSERT(bits_of(lean[k].lo) == bits_of(boost[k].lo));
    RC_ASSERT(bits_of(lean[k].rad) == bits_of(boost[k].rad));
    RC_ASSERT(lean[k].scale == boost[k].scale);
    RC_ASSERT(lean[k].rounding_decided == boost[k].rounding_decided);
    RC_ASSERT(lean[k].zero_sign_undecided == boost[k].zero_sign_undecided);
    RC_ASSERT(bits_of(lean[k].rounded) == bits_of(boost[k].rounded));
    RC_ASSERT(bits_of(lean[k].rounded_alt) == bits_of(boost[k].rounded_alt));
  }
}

void expect_same_doubles(const std::vector<double>& lean, const std::vector<double>& boost) {
  RC_ASSERT(lean.size() == boost.size());
  for (size_t k = 0; k < lean.size(); ++k) RC_ASSERT(bits_of(lean[k]) == bits_of(boost[k]));
}

void expect_same(const oracle::CertifiedLayerNorm& lean, const oracle::CertifiedLayerNorm& boost) {
  RC_ASSERT(lean.precision_bits == boost.precision_bits);
  expect_same_values(lean.y, boost.y);
  expect_same_values(lean.dx, boost.dx);
  expect_same_values(lean.dgamma, boost.dgamma);
  expect_same_values(lean.dbeta, boost.dbeta);
  for (const auto field : {&oracle::CertifiedLayerNorm::mean, &oracle::CertifiedLayerNorm::mean_rad, &oracle::CertifiedLayerNorm::var,
                           &oracle::CertifiedLayerNorm::var_rad, &oracle::CertifiedLayerNorm::rstd, &oracle::CertifiedLayerNorm::rstd_rad})
    expect_same_doubles(lean.*field, boost.*field);
  RC_ASSERT(bits_of(lean.max_err_ulps) == bits_of(boost.max_err_ulps));
  RC_ASSERT(lean.certified == boost.certified);
}

/// Counts GMP's (and so MPFR's and MPFI's) allocations while it lives; restores the allocator after.
class AllocationCounter {
 public:
  AllocationCounter() {
    mp_get_memory_functions(&alloc_, &realloc_, &free_);
    count_ = 0;
    mp_set_memory_functions(counting_alloc, counting_realloc, nullptr);  // nullptr: GMP's default free
  }
  ~AllocationCounter() { mp_set_memory_functions(alloc_, realloc_, free_); }
  static long count() { return count_; }

 private:
  static void* counting_alloc(size_t n) {
    ++count_;
    return std::malloc(n);
  }
  static void* counting_realloc(void* p, size_t, size_t n) {
    ++count_;
    return std::realloc(p, n);
  }
  static inline long count_ = 0;
  void* (*alloc_)(size_t);
  void* (*realloc_)(void*, size_t, size_t);
  void (*free_)(void*, size_t);
};

}  // namespace

RC_GTEST_PROP(LeanInterval, EveryOperationGivesMpfisEndpointsBitForBit, ()) {
  const Lean a = random_interval();
  const Lean b = *rc::gen::inRange(0, 5) == 0 ? a : random_interval();  // equal operands: exact cancellation to zero
  const Reference ra(a.data()), rb(b.data());
  Reference want(a.data());
  const auto check = [&](const Lean& got, auto mpfi_op) {
    mpfi_op(want.v);
    expect_same_interval(got.data(), want.v);
  };
  check(a + b, [&](mpfi_ptr r) { mpfi_add(r, ra.v, rb.v); });
  check(a - b, [&](mpfi_ptr r) { mpfi_sub(r, ra.v, rb.v); });
  check(a * b, [&](mpfi_ptr r) { mpfi_mul(r, ra.v, rb.v); });
  check(a * a, [&](mpfi_ptr r) { mpfi_sqr(r, ra.v); });
  check(a / b, [&](mpfi_ptr r) { mpfi_div(r, ra.v, rb.v); });
  check(-a, [&](mpfi_ptr r) { mpfi_neg(r, ra.v); });
  check(sqrt(a), [&](mpfi_ptr r) { mpfi_sqrt(r, ra.v); });
  Lean c = a;  // the compound forms, which write their left operand
  c -= b;
  check(c, [&](mpfi_ptr r) { mpfi_sub(r, ra.v, rb.v); });
  c = a;
  c += b;
  check(c, [&](mpfi_ptr r) { mpfi_add(r, ra.v, rb.v); });
  c = a;
  c *= b;
  check(c, [&](mpfi_ptr r) { mpfi_mul(r, ra.v, rb.v); });
  c = a;
  c /= b;
  check(c, [&](mpfi_ptr r) { mpfi_div(r, ra.v, rb.v); });
}

RC_GTEST_PROP(LeanInterval, EveryOracleGivesBoostsCertificatesBitForBit, ()) {
  const auto& gens = gen::jvp_generator_names();
  const std::string g = gens[*rc::gen::inRange<size_t>(0, gens.size())];
  const DType dt = *rc::gen::element(DType::f16, DType::bf16, DType::f32, DType::f64);
  const gen::JvpCase jc = gen::make_jvp_case(g, dt, *rc::gen::arbitrary<uint64_t>(), *rc::gen::inRange(1, 300));
  const LayerNormCase& c = jc.c;
  const bool with_vjp = *rc::gen::arbitrary<bool>();
  expect_same(oracle::evaluate_layernorm_mpfi50(c, with_vjp), oracle::evaluate_layernorm_boost_mpfi50(c, with_vjp));
  expect_same(oracle::evaluate_rmsnorm_mpfi50(c, with_vjp), oracle::evaluate_rmsnorm_boost_mpfi50(c, with_vjp));
  std::vector<int64_t> cols, ys, dxs;
  for (int64_t j = 0; j < c.n; ++j)
    if (*rc::gen::inRange(0, 3) == 0) cols.push_back(j);
  for (int64_t k = 0; k < static_cast<int64_t>(c.x.size()); ++k) {
    if (*rc::gen::inRange(0, 4) == 0) ys.push_back(k);
    if (*rc::gen::inRange(0, 4) == 0) dxs.push_back(k);
  }
  expect_same(oracle::evaluate_layernorm_columns_mpfi50(c, cols), oracle::evaluate_layernorm_columns_boost_mpfi50(c, cols));
  expect_same(oracle::evaluate_rmsnorm_columns_mpfi50(c, cols), oracle::evaluate_rmsnorm_columns_boost_mpfi50(c, cols));
  expect_same(oracle::evaluate_layernorm_outputs_mpfi50(c, ys, dxs), oracle::evaluate_layernorm_outputs_boost_mpfi50(c, ys, dxs));
  expect_same(oracle::evaluate_rmsnorm_outputs_mpfi50(c, ys, dxs), oracle::evaluate_rmsnorm_outputs_boost_mpfi50(c, ys, dxs));
  for (const auto& [lean_fn, boost_fn] : {std::pair{oracle::evaluate_layernorm_jvp_mpfi50, oracle::evaluate_layernorm_jvp_boost_mpfi50},
                                          std::pair{oracle::evaluate_rmsnorm_jvp_mpfi50, oracle::evaluate_rmsnorm_jvp_boost_mpfi50}}) {
    const oracle::CertifiedLayerNormJvp lean = lean_fn(c, jc.t), boost = boost_fn(c, jc.t);
    expect_same_values(lean.du, boost.du);
    RC_ASSERT(bits_of(lean.max_err_ulps) == bits_of(boost.max_err_ulps));
  }
  const auto& block_gens = gen::block_generator_names();
  const RmsBlockCase bc = gen::make_rms_block_case(block_gens[*rc::gen::inRange<size_t>(0, block_gens.size())], dt,
                                                   *rc::gen::arbitrary<uint64_t>());
  const oracle::CertifiedRmsBlock lean = oracle::evaluate_rms_block_mpfi50(bc), boost = oracle::evaluate_rms_block_boost_mpfi50(bc);
  for (const auto field : {&oracle::CertifiedRmsBlock::y, &oracle::CertifiedRmsBlock::dx, &oracle::CertifiedRmsBlock::dw,
                           &oracle::CertifiedRmsBlock::dg})
    expect_same_values(lean.*field, boost.*field);
  expect_same_doubles(lean.rstd, boost.rstd);
  expect_same_doubles(lean.ms, boost.ms);
  expect_same_doubles(lean.cancellation, boost.cancellation);
}

RC_GTEST_PROP(LeanInterval, TheGroupedNormOracleGivesBoostsCertificatesBitForBit, ()) {
  const auto& kinds = grouped_suite_kinds();
  const auto& layouts = grouped_suite_layouts();
  const DType dt = *rc::gen::element(DType::f16, DType::bf16, DType::f32, DType::f64);
  const GroupedNormCase c = gen::make_grouped_case(kinds[*rc::gen::inRange<size_t>(0, kinds.size())],
                                                   layouts[*rc::gen::inRange<size_t>(0, layouts.size())], dt,
                                                   *rc::gen::arbitrary<uint64_t>());
  const oracle::GroupedNormLayout lay = grouped_layout(c);
  const bool with_vjp = *rc::gen::arbitrary<bool>();
  const oracle::CertifiedGroupedNorm lean = oracle::evaluate_grouped_mpfi50(c, lay, with_vjp),
                                     boost = oracle::evaluate_grouped_boost_mpfi50(c, lay, with_vjp);
  RC_ASSERT(lean.precision_bits == boost.precision_bits);
  for (const auto field : {&oracle::CertifiedGroupedNorm::y, &oracle::CertifiedGroupedNorm::dx, &oracle::CertifiedGroupedNorm::contrib,
                           &oracle::CertifiedGroupedNorm::dgamma, &oracle::CertifiedGroupedNorm::dbeta,
                           &oracle::CertifiedGroupedNorm::running_mean, &oracle::CertifiedGroupedNorm::running_var,
                           &oracle::CertifiedGroupedNorm::y_inference})
    expect_same_values(lean.*field, boost.*field);
  for (const auto field : {&oracle::CertifiedGroupedNorm::mean, &oracle::CertifiedGroupedNorm::mean_rad, &oracle::CertifiedGroupedNorm::var,
                           &oracle::CertifiedGroupedNorm::var_rad, &oracle::CertifiedGroupedNorm::rstd, &oracle::CertifiedGroupedNorm::rstd_rad})
    expect_same_doubles(lean.*field, boost.*field);
  RC_ASSERT(bits_of(lean.max_err_ulps) == bits_of(boost.max_err_ulps));
}

TEST(LeanInterval, AWarmEvaluationAllocatesAlmostNothingWhereBoostAllocatesPerOperation) {
  gen::ShapeRequest shape;
  shape.rows = 4;
  shape.n = 1024;
  for (const char* generator : {"normal", "log_uniform", "large_mean_extreme"}) {
    const LayerNormCase c = gen::make_layernorm_case(generator, DType::f32, 7, shape);
    const double elements = static_cast<double>(c.x.size());
    for (const bool rms : {false, true}) {
      const auto lean_fn = rms ? oracle::evaluate_rmsnorm_mpfi50 : oracle::evaluate_layernorm_mpfi50;
      const auto boost_fn = rms ? oracle::evaluate_rmsnorm_boost_mpfi50 : oracle::evaluate_layernorm_boost_mpfi50;
      lean_fn(c, true);  // warms this thread's pool
      long lean = 0, boost = 0;
      {
        const AllocationCounter counter;
        lean_fn(c, true);
        lean = AllocationCounter::count();
      }
      {
        const AllocationCounter counter;
        boost_fn(c, true);
        boost = AllocationCounter::count();
      }
      std::printf("%s %s: GMP allocations per element, warm: lean %.3f, Boost %.3f\n", generator, rms ? "RMSNorm" : "LayerNorm",
                  lean / elements, boost / elements);
      EXPECT_LT(lean / elements, 0.1) << generator;
      EXPECT_GT(boost / elements, 10.0) << generator;  // what the lean type saves: Boost allocates per temporary
    }
  }
}

TEST(LeanInterval, ValuesKeepTheirOwnIntervalsThroughCopiesMovesAndThreads) {
  Lean a(1.5), b(a);
  b += Lean(1.0);
  EXPECT_EQ(mpfr_get_d(&a.data()->left, MPFR_RNDN), 1.5);  // a copy is a new interval
  EXPECT_EQ(mpfr_get_d(&b.data()->left, MPFR_RNDN), 2.5);
  Lean moved(std::move(b));
  EXPECT_EQ(mpfr_get_d(&moved.data()->right, MPFR_RNDN), 2.5);
  b = a;  // a moved-from value takes a new interval when assigned
  EXPECT_EQ(mpfr_get_d(&b.data()->right, MPFR_RNDN), 1.5);
  b = b;  // self-assignment keeps the value
  EXPECT_EQ(mpfr_get_d(&b.data()->left, MPFR_RNDN), 1.5);
  a = std::move(moved);  // a move assignment swaps
  EXPECT_EQ(mpfr_get_d(&a.data()->left, MPFR_RNDN), 2.5);
  // Values made on one thread and destroyed on another go to that thread's pool, and the results of
  // concurrent evaluations are the single-threaded ones.
  std::vector<Lean> made(1000, Lean(0.25));
  gen::ShapeRequest shape;
  shape.rows = 2;
  shape.n = 300;
  const LayerNormCase c = gen::make_layernorm_case("normal", DType::f32, 3, shape);
  const oracle::CertifiedLayerNorm alone = oracle::evaluate_layernorm_mpfi50(c, true);
  std::vector<oracle::CertifiedLayerNorm> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      if (t == 0) made.clear();
      results[t] = oracle::evaluate_layernorm_mpfi50(c, true);
    });
  for (std::thread& t : threads) t.join();
  for (const oracle::CertifiedLayerNorm& r : results)
    for (size_t k = 0; k < r.dx.size(); ++k) {
      EXPECT_EQ(bits_of(r.dx[k].hi), bits_of(alone.dx[k].hi));
      EXPECT_EQ(bits_of(r.dx[k].rad), bits_of(alone.dx[k].rad));
    }
}
