// Overflow and underflow regimes: the bound module's predictions checked against the kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_kernels.hpp"
#include "bounds/bounds.hpp"
#include "generators/generators.hpp"
#include "suite/judge.hpp"

using namespace normcheck;

namespace {

const KernelEntry& kernel(const std::string& variant, DType dt, Op op = Op::layernorm_forward) {
  const KernelEntry* k = find_kernel(op, variant, dt);
  if (!k) throw std::logic_error("no kernel " + variant);
  return *k;
}

LayerNormCase constant_rows(DType dt, double value, double eps, int64_t rows, int64_t n) {
  LayerNormCase c = gen::make_layernorm_case("normal", dt, 3, {rows, n, rows * n});
  std::fill(c.x.begin(), c.x.end(), round_to_dtype(value, dt));
  c.eps = eps;
  return c;
}

bool any_nonfinite(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
}

}  // namespace

TEST(Regimes, GammaKAndSumOrders) {
  EXPECT_EQ(gamma_k(0, 0x1p-24), 0.0);
  EXPECT_DOUBLE_EQ(gamma_k(3, 0x1p-24), 3 * 0x1p-24 / (1 - 3 * 0x1p-24));
  EXPECT_TRUE(std::isinf(gamma_k(256, 0x1p-8)));
  EXPECT_EQ(bound_id({StatsModel::two_pass, DType::f32, DType::f32, SumOrder::pairwise}), "LN-TWOPASS-PAIRWISE");
  EXPECT_EQ(regime_names(kRegimeCancellation | kRegimeEpsVanishes),
            (std::vector<std::string>{"cancellation", "eps_vanishes"}));
}

TEST(Regimes, PairwiseBoundIsTighterThanSequentialForLongRows) {
  const LayerNormCase c = gen::make_layernorm_case("normal", DType::f32, 9, {2, 4096, 8192});
  const auto ref = oracle::certified_layernorm(c, false);
  const auto seq = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f32, DType::f32, SumOrder::sequential});
  const auto pw = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f32, DType::f32, SumOrder::pairwise});
  for (size_t i = 0; i < seq.bound.size(); ++i) ASSERT_LE(pw.bound[i], seq.bound[i]);
}

TEST(Regimes, OnePassSumOfSquaresOverflowIsPredictedAndCaughtByTheContract) {
  // f32 rows near 4 sqrt(FLT_MAX / n): sum(x^2) overflows, sum((x-mean)^2) does not.
  const LayerNormCase c = gen::make_layernorm_case("overflow_prone", DType::f32, 5, {2, 64, 128});
  const auto ref = oracle::certified_layernorm(c, false);
  const TensorBound own = layernorm_forward_bound(c, ref, {StatsModel::one_pass, DType::f32, DType::f32});
  const TensorBound contract = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f32, DType::f32});
  EXPECT_TRUE(std::all_of(own.regime.begin(), own.regime.end(), [](uint8_t r) { return r & kRegimeOverflow; }));
  EXPECT_TRUE(std::none_of(contract.regime.begin(), contract.regime.end(), [](uint8_t r) { return r & kRegimeOverflow; }));
  const OutputJudgement j = judge_case(kernel("one_pass", DType::f32), c, ref).front();
  EXPECT_TRUE(j.failed);       // the sound contract predicted safety: the wrong output is a failure
  EXPECT_FALSE(j.own_failed);  // its own bound predicted the overflow: no rigor failure
}

TEST(Regimes, EpsRoundedAwayInF16AccumulationIsPredicted) {
  // pytorch/pytorch#41527: an all-zero f16 row with eps 1e-12 gives NaN when eps rounds to 0.
  const LayerNormCase c = constant_rows(DType::f16, 0.0, 1e-12, 2, 8);
  const auto ref = oracle::certified_layernorm(c, false);
  const KernelEntry& weak = kernel("two_pass_storage_accum", DType::f16);
  const KernelOutputs out = weak.run(c);
  EXPECT_TRUE(any_nonfinite(out.y));
  const TensorBound own = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f16, DType::f16});
  EXPECT_TRUE(own.regime[0] & kRegimeEpsVanishes);
  EXPECT_TRUE(own.regime[0] & kRegimeOverflow);  // rsqrt(0) = inf predicted
  const OutputJudgement j = judge_outputs(weak, c, ref, out).front();
  EXPECT_TRUE(j.failed);
  EXPECT_FALSE(j.own_failed);
  // The f32-accumulating kernel keeps eps and stays finite: exactly beta.
  const KernelOutputs sound = kernel("two_pass", DType::f16).run(c);
  EXPECT_FALSE(any_nonfinite(sound.y));
  for (int64_t j2 = 0; j2 < c.n; ++j2) EXPECT_EQ(sound.y[j2], c.beta[j2]);
}

TEST(Regimes, PredictedSafeNonFiniteIsAFailure) {
  const LayerNormCase c = gen::make_layernorm_case("normal", DType::f32, 4, {2, 16, 32});
  const auto ref = oracle::certified_layernorm(c, false);
  KernelEntry planted = kernel("two_pass", DType::f32);
  const KernelEntry base = planted;
  planted.run = [base](const LayerNormCase& cc) {
    KernelOutputs o = base.run(cc);
    o.y[3] = std::numeric_limits<double>::quiet_NaN();
    return o;
  };
  const OutputJudgement j = judge_case(planted, c, ref).front();
  EXPECT_TRUE(j.failed);
  EXPECT_TRUE(j.own_failed);
  EXPECT_EQ(j.acc.nonfinite_mismatches(), 1);
}

TEST(Regimes, NearMaxSumOverflowIsPredictedForTheSoundKernel) {
  // Two f32 values near FLT_MAX: the accumulator's sum overflows; the bound must say so.
  LayerNormCase c = constant_rows(DType::f32, 3e38, 1e-5, 1, 2);
  c.x[1] = round_to_dtype(-3.1e38, DType::f32);
  c.x[0] = round_to_dtype(-3.2e38, DType::f32);
  const auto ref = oracle::certified_layernorm(c, false);
  const TensorBound b = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f32, DType::f32});
  EXPECT_TRUE(b.regime[0] & kRegimeOverflow);
  EXPECT_TRUE(std::isinf(b.bound[0]));
  // The kernel's mean overflows and its outputs are NaN where the exact outputs are finite: the
  // verdict fails (Inf/NaN against a finite exact value always does), while the kernel's own bound,
  // which predicted the overflow, is not violated (it claims nothing there).
  const OutputJudgement j = judge_case(kernel("two_pass", DType::f32), c, ref).front();
  EXPECT_TRUE(j.failed);
  EXPECT_FALSE(j.own_failed);
  EXPECT_GT(j.acc.nonfinite_mismatches(), 0);
}

TEST(Regimes, SubnormalRowsAreMarkedUnderflow) {
  const LayerNormCase c = gen::make_layernorm_case("subnormal", DType::bf16, 8, {2, 32, 64});
  const auto ref = oracle::certified_layernorm(c, false);
  const TensorBound b = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::bf16, DType::f32});
  EXPECT_TRUE(std::any_of(b.regime.begin(), b.regime.end(), [](uint8_t r) { return r & kRegimeUnderflow; }));
}
