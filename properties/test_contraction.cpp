// Issue 5: the exact QR contraction across LayerNorm. The seed's test categories one by one:
// output and input-gradient agreement (oracle identity at 336 bits; converter in every dtype with
// its bound), biases present and absent, nonuniform signed gamma, absent LayerNorm affine
// parameters, zero and constant producers (f = c), rank-deficient and wide matrices, f16/bf16
// storage, frozen parameters, invalid-input rejection; and the parameter accounting.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>

#include "bounds/bounds_contraction.hpp"
#include "kernels/contraction_registry.hpp"
#include "generators/contraction_generators.hpp"
#include "suite/contraction_judge.hpp"

using namespace normcheck;

namespace {

std::vector<DType> every_dtype() { return {DType::f16, DType::bf16, DType::f32, DType::f64}; }

/// Agreement of a 336-bit value (hi + lo) with a certified enclosure: within its radius plus
/// 2^-100 max(1, |value|) (the double-double transport, and exact zeros such as dx of a constant
/// producer that the 336-bit QR reproduces as 2^-330-sized values), far below any dtype's ULP
/// for the O(1) parameters of the generators.
bool agrees(double hi, double lo, const CertifiedValue& ref) {
  const double diff = std::fabs((hi - std::ldexp(ref.hi, ref.scale)) + (lo - std::ldexp(ref.lo, ref.scale)));
  return diff <= std::ldexp(ref.rad, ref.scale) + 0x1p-100 * std::max(1.0, std::fabs(hi));
}

void expect_identity(const ContractionCase& c) {
  const auto ref = oracle::certified_affine_ln(c, true);
  ASSERT_TRUE(ref.certified);
  const auto hp = oracle::high_precision_contraction(c);
  EXPECT_EQ(hp.k, std::min(c.block.n, c.block.d + 1));
  for (size_t i = 0; i < ref.f.size(); ++i) ASSERT_TRUE(agrees(hp.f_hi[i], hp.f_lo[i], ref.f[i])) << "f[" << i << "]";
  for (size_t i = 0; i < ref.dx.size(); ++i)
    ASSERT_TRUE(agrees(hp.dx_hi[i], hp.dx_lo[i], ref.dx[i]))
        << c.generator << " seed " << c.seed << " dx[" << i << "] " << hp.dx_hi[i] << " + " << hp.dx_lo[i] << " vs " << ref.dx[i].hi << " lo " << ref.dx[i].lo << " rad " << ref.dx[i].rad << " scale " << ref.dx[i].scale;
  EXPECT_LE(hp.max_norm_identity_rel, 0x1p-250);  // |P h| = |R xbar|
}

/// Log-uniform dimension in [1, 600].
rc::Gen<int64_t> dimension() {
  return rc::gen::mapcat(rc::gen::inRange(0, 10), [](int e) {
    return rc::gen::inRange<int64_t>(int64_t{1} << e, std::min<int64_t>(int64_t{1} << (e + 1), 601));
  });
}

}  // namespace

TEST(ContractionAccounting, SeedFiguresAndSharedR) {
  AffineLnAffine b;
  b.d = 82;
  b.n = 512;
  b.m = 512;
  b.A.resize(512 * 82);
  b.a.resize(512);
  b.gamma.resize(512);
  b.beta.resize(512);
  b.W.resize(512 * 512);
  b.b.resize(512);
  const ParameterCounts p = parameter_counts(b);
  EXPECT_EQ(p.n_old, 306176);
  EXPECT_EQ(p.n_new, 49897);
  EXPECT_NEAR(p.reduction(), 0.837, 0.0005);
  EXPECT_EQ(p.n_old, b.n * (b.d + b.m + 3) + b.m);
  // Two consumers of 256 rows share one R: one k (d + 1) block fewer than two separate R.
  b.consumer_rows = {256, 256};
  const ParameterCounts s = parameter_counts(b);
  EXPECT_EQ(s.n_new, 49897);
  EXPECT_EQ(s.n_new_separate_r, 49897 + 83 * 83);
  // Absent biases and LayerNorm parameters are not counted.
  b.a.clear();
  b.b.clear();
  b.gamma.clear();
  b.beta.clear();
  EXPECT_EQ(parameter_counts(b).n_old, 512 * 82 + 512 * 512);
}

RC_GTEST_PROP(ContractionOracle, ContractedAndOriginalAgreeAtOraclePrecision, ()) {
  // d, n, m in [1, 600], wide and tall; the cost n (d+1) min(n, d+1) of the 336-bit QR capped.
  ContractionCase c = gen::make_contraction_case(*rc::gen::elementOf(gen::contraction_generator_names()), DType::f64,
                                                 *rc::gen::arbitrary<uint64_t>());
  const int64_t d = *dimension(), n = std::max<int64_t>(2, *dimension()), m = *dimension();
  if (n * (d + 1) * std::min(n, d + 1) <= 400000 && n * (d + m) <= 60000)
    c = gen::make_contraction_case(c.generator, DType::f64, c.seed, {d, n, m, 2, true});
  expect_identity(c);
}

TEST(ContractionOracle, ExtremeShapesUpTo600) {
  for (const auto& [d, n, m] : {std::tuple<int64_t, int64_t, int64_t>{600, 24, 3}, {4, 600, 600}, {1, 2, 1},
                                {60, 61, 600}, {599, 600, 1}}) {
    if (d * n * std::min(n, d + 1) > 4e7) continue;  // 599 x 600 QR at 336 bits: minutes; covered at 600 x 61
    for (const char* g : {"random", "rank_deficient"}) {
      const ContractionCase c = gen::make_contraction_case(g, DType::f64, 5, {d, n, m, 1, true});
      ASSERT_EQ(c.block.d, d);
      ASSERT_EQ(c.block.n, n);
      expect_identity(c);
    }
  }
}

TEST(ContractionOracle, AWrongDenominatorIsDetected) {
  // The identity check must be able to fail: a 2^-40 relative change of one output is seen.
  ContractionCase c = gen::make_contraction_case("random", DType::f64, 3);
  auto ref = oracle::certified_affine_ln(c, true);
  auto hp = oracle::high_precision_contraction(c);
  hp.f_hi[0] *= 1 + 0x1p-40;
  EXPECT_FALSE(agrees(hp.f_hi[0], hp.f_lo[0], ref.f[0]));
}

RC_GTEST_PROP(ContractionConverter, StaysWithinItsBoundInEveryDtypeAndCategory, ()) {
  const DType dt = every_dtype()[*rc::gen::inRange<size_t>(0, 4)];
  const auto g = *rc::gen::elementOf(gen::contraction_generator_names());
  const ContractionCase c = gen::make_contraction_case(g, dt, *rc::gen::arbitrary<uint64_t>());
  const ContractionJudgement j = judge_contraction(c);
  RC_LOG() << dtype_info(dt).name << " " << g << " seed " << c.seed << " f ratio " << j.f.acc.max_bound_ratio()
           << " dx ratio " << j.dx.acc.max_bound_ratio() << " void " << j.f.acc.void_bounds() << "\n";
  RC_ASSERT(j.reference.certified);
  RC_ASSERT(j.f.acc.count() == static_cast<int64_t>(c.rows * c.block.m));
  RC_ASSERT(j.f.acc.void_bounds() == 0);
  RC_ASSERT(!j.f.failed);
  RC_ASSERT(!j.dx.failed);
  RC_ASSERT(j.contracted.k == std::min(c.block.n, c.block.d + 1));
}

TEST(ContractionConverter, ZeroAndConstantProducersGiveExactlyC) {
  for (DType dt : every_dtype())
    for (const char* g : {"zero_producer", "constant_producer"})
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        const ContractionCase c = gen::make_contraction_case(g, dt, seed);
        const ContractedBlock k = contract_block(c.block, dt);
        for (double v : k.R) EXPECT_EQ(v, 0.0) << g;  // T = 0 exactly in float64, so R = 0
        for (double v : k.D) EXPECT_EQ(v, 0.0) << g;
        const AffineLnOutputs out = run_contracted(k, c);
        for (int64_t r = 0; r < c.rows; ++r)
          for (int64_t i = 0; i < c.block.m; ++i) EXPECT_EQ(out.f[r * c.block.m + i], k.c[i]) << g;
        for (double v : out.dx) EXPECT_EQ(v, 0.0);
        // The exact block is c = W beta + b too: the oracle's f is the same for every input row, so every
        // row's enclosure overlaps row 0's and rounds to the same value (the midpoints of a ball level
        // carry each row's own rounding noise, within the radius; MPFI's happened to coincide).
        const auto ref = oracle::certified_affine_ln(c, false);
        for (int64_t r = 1; r < c.rows; ++r)
          for (int64_t i = 0; i < c.block.m; ++i) {
            const CertifiedValue &a = ref.f[r * c.block.m + i], &b = ref.f[i];
            EXPECT_EQ(a.rounded, b.rounded) << g;
            EXPECT_EQ(a.scale, b.scale) << g;
            EXPECT_LE(std::fabs((a.hi - b.hi) + (a.lo - b.lo)), (a.rad + b.rad) * (1 + 0x1p-50)) << g;
          }
      }
}

TEST(ContractionConverter, FrozenParametersAreReadOnlyAndConversionIsDeterministic) {
  // "Frozen" parameters (not trainable) are plain inputs here: conversion must not modify them,
  // and converting twice gives bit-identical coefficients.
  const ContractionCase c = gen::make_contraction_case("signed_gamma", DType::f32, 9);
  const AffineLnAffine before = c.block;
  const ContractedBlock k1 = contract_block(c.block, DType::f32), k2 = contract_block(c.block, DType::f32);
  EXPECT_EQ(before.A, c.block.A);
  EXPECT_EQ(before.gamma, c.block.gamma);
  EXPECT_EQ(before.W, c.block.W);
  EXPECT_EQ(k1.D, k2.D);
  EXPECT_EQ(k1.R, k2.R);
  EXPECT_EQ(k1.c, k2.c);
}

TEST(ContractionConverter, RejectsInvalidBlocksWithOneClearLine) {
  const ContractionCase base = gen::make_contraction_case("random", DType::f32, 4);
  const auto rejects = [](AffineLnAffine b, DType dt, const char* needle) {
    try {
      contract_block(b, dt);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const ConversionError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  AffineLnAffine b = base.block;
  b.eps = 0;
  rejects(b, DType::f32, "eps");
  b = base.block;
  b.eps = -1e-5;
  rejects(b, DType::f32, "eps");
  b = base.block;
  b.A[0] = NAN;
  rejects(b, DType::f32, "not finite");
  b = base.block;
  b.W.pop_back();
  rejects(b, DType::f32, "shape mismatch");
  b = base.block;
  b.gamma.resize(1);
  rejects(b, DType::f32, "shape mismatch");
  b = base.block;
  b.consumer_rows = {1, b.m};
  rejects(b, DType::f32, "consumer");
  b = base.block;
  b.d = 0;
  rejects(b, DType::f32, "empty");
  b = base.block;  // D = W diag(gamma) T beyond f16's 65504
  for (double& w : b.W) w *= 1e6;
  rejects(b, DType::f16, "overflows f16");
  EXPECT_NO_THROW(contract_block(b, DType::f32));
}

TEST(ContractionConverter, BoundIsNotVacuousAndCatchesAPerturbedCoefficient) {
  // f16/bf16: the stores dominate, the error reaches a good fraction of the bound somewhere; a
  // coefficient off by 2^-6 relative (beyond storage rounding) must be caught.
  for (DType dt : {DType::f16, DType::bf16}) {
    double best = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed)
      best = std::max(best, judge_contraction(gen::make_contraction_case("random", dt, seed)).f.acc.max_bound_ratio());
    EXPECT_GT(best, 0.1) << dtype_info(dt).name;
  }
  const ContractionCase c = gen::make_contraction_case("random", DType::f32, 12);
  ContractedBlock k = contract_block(c.block, DType::f32);
  const auto ref = oracle::certified_affine_ln(c, false);
  size_t big = 0;
  for (size_t i = 0; i < k.D.size(); ++i)
    if (std::fabs(k.D[i]) > std::fabs(k.D[big])) big = i;
  k.D[big] = round_to_dtype(k.D[big] * (1 + 0x1p-6), DType::f32);
  const auto view = stored_view(contract_block(c.block, DType::f32));  // the converter's true coefficients
  const auto err = oracle::coefficient_error(c.block, view);
  const ContractionBound b = contracted_bound(c, view, err, ref, DType::f32);
  ContractionCase no_dy = c;
  no_dy.dy.clear();
  const AffineLnOutputs out = run_contracted(k, no_dy);
  EXPECT_TRUE(judge_tensor("f", out.f, ref.f, b.f, nullptr, DType::f32, 1.0).failed);
}

TEST(ContractionConverter, ContractionIsNotJudgedByTheOriginalBlock) {
  // Both are measured against the oracle; the original low-precision block is reported, never
  // used as a reference: its own errors are nonzero in f16 while the contraction's bound holds.
  const ContractionJudgement j = judge_contraction(gen::make_contraction_case("random", DType::f16, 2));
  EXPECT_GT(j.original_f.acc.max_ulp(), 0.0);
  EXPECT_EQ(j.original_f.acc.bound_violations(), 0);  // no bound: measured only
  EXPECT_FALSE(j.f.failed);
}
