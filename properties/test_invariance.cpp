// Batch invariance and determinism (suite/invariance.hpp): every built-in kernel passes, every planted
// batch-variant or nondeterministic kernel is caught with its verdict and the first differing element.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_kernels.hpp"
#include "core/dtype.hpp"
#include "generators/generators.hpp"
#include "io/case_json.hpp"
#include "suite/invariance.hpp"

using namespace normcheck;

namespace {

/// 48 rows (below the planted 256-row threshold; the batch sizes cross it) of 255 (not a multiple of 4).
LayerNormCase invariance_case(DType dt, uint64_t seed = 7) { return gen::make_layernorm_case("normal", dt, seed, {48, 255}); }

std::string describe(const KernelEntry& k, const InvarianceResult& r) {
  std::string s = std::string(op_name(k.op)) + " " + k.variant + " " + std::string(dtype_info(k.storage).name) + ": " + r.verdict();
  for (const auto* d : {&r.nondeterministic, &r.batch_variant})
    if (*d)
      s += "; " + (*d)->check + " " + (*d)->output + " row " + std::to_string((*d)->row) + " col " + std::to_string((*d)->col) + ": " +
           (*d)->config_a + " " + hexfloat((*d)->a) + " vs " + (*d)->config_b + " " + hexfloat((*d)->b);
  return s + (r.failure.empty() ? "" : "; failure " + r.failure);
}

const KernelEntry& planted(std::string_view variant, Op op, DType dt) {
  for (const KernelEntry& k : planted_invariance_kernels())
    if (k.variant == variant && k.op == op && k.storage == dt) return k;
  throw std::logic_error("no planted kernel " + std::string(variant));
}

}  // namespace

TEST(Invariance, BatchSizesCrossTheThresholdsAndIncludeTheCase) {
  EXPECT_EQ(invariance_batch_sizes(48, 255, 1 << 18), (std::vector<int64_t>{1, 2, 3, 7, 48, 64, 255, 256, 257, 1024}));
  EXPECT_EQ(invariance_batch_sizes(300, 1024, 1 << 18), (std::vector<int64_t>{1, 2, 3, 7, 64, 255, 256, 300}));
}

TEST(Invariance, BatchOfPlacesTheCasesRowsAndPadsWithZeros) {
  const LayerNormCase c = invariance_case(DType::f32);
  const LayerNormCase b = batch_of(c, 3, 47, 2);
  ASSERT_EQ(b.rows, 5);
  ASSERT_EQ(b.x.size(), 5u * 255u);
  for (int64_t j = 0; j < 255; ++j) {
    EXPECT_EQ(b.x[static_cast<size_t>(j)], c.x[static_cast<size_t>(47 * 255 + j)]);
    EXPECT_EQ(b.x[static_cast<size_t>(255 + j)], c.x[static_cast<size_t>(j)]);
    EXPECT_EQ(b.dy[static_cast<size_t>(2 * 255 + j)], c.dy[static_cast<size_t>(255 + j)]);
    EXPECT_EQ(b.x[static_cast<size_t>(4 * 255 + j)], 0.0);
  }
  EXPECT_EQ(b.gamma, c.gamma);
}

TEST(Invariance, EveryBuiltinKernelIsDeterministicAndBatchInvariant) {
  int checked = 0;
  for (const KernelEntry& k : builtin_kernels()) {
    const InvarianceResult r = check_invariance(k, invariance_case(k.storage));
    EXPECT_EQ(r.verdict(), "pass") << describe(k, r);
    EXPECT_GE(r.calls, 12);
    ++checked;
  }
  EXPECT_GT(checked, 80);
}

TEST(Invariance, TheRowCountBlockWidthIsBatchVariantInBothDirections) {
  for (DType dt : {DType::f32, DType::f64})
    for (Op op : {Op::layernorm_forward, Op::layernorm_backward}) {
      const KernelEntry& k = planted("ln_rowcount_block", op, dt);
      const InvarianceResult r = check_invariance(k, invariance_case(dt));
      EXPECT_EQ(r.verdict(), "batch_variant") << describe(k, r);
      ASSERT_TRUE(r.batch_variant) << describe(k, r);
      EXPECT_FALSE(r.nondeterministic);
      EXPECT_NE(r.batch_variant->a, r.batch_variant->b);
      EXPECT_NE(r.batch_variant->config_b.find("256"), std::string::npos) << "the first batch past the threshold: " << describe(k, r);
    }
}

TEST(Invariance, AnAlignmentPeelIsCaughtByPositionThoughRowCountInvariant) {
  for (DType dt : {DType::f32, DType::f64}) {
    const KernelEntry& k = planted("ln_aligned_peel", Op::layernorm_forward, dt);
    const InvarianceResult r = check_invariance(k, invariance_case(dt));
    EXPECT_EQ(r.verdict(), "batch_variant") << describe(k, r);
    ASSERT_TRUE(r.batch_variant);
    EXPECT_NE(r.batch_variant->row, -1);
  }
  // With n a multiple of 4 every row starts aligned: the same kernel is invariant (a limit the docs state).
  const LayerNormCase aligned = gen::make_layernorm_case("normal", DType::f32, 7, {48, 256});
  EXPECT_EQ(check_invariance(planted("ln_aligned_peel", Op::layernorm_forward, DType::f32), aligned).verdict(), "pass");
}

TEST(Invariance, AnAtomicDgammaIsNondeterministicInItsReducedOutputsOnly) {
  for (DType dt : {DType::f32, DType::f64}) {
    const KernelEntry& k = planted("ln_atomic_dgamma", Op::layernorm_backward, dt);
    const InvarianceResult r = check_invariance(k, invariance_case(dt));
    EXPECT_EQ(r.verdict(), "nondeterministic") << describe(k, r);
    ASSERT_TRUE(r.nondeterministic);
    EXPECT_TRUE(r.nondeterministic->output == "dgamma" || r.nondeterministic->output == "dbeta") << describe(k, r);
    EXPECT_EQ(r.nondeterministic->row, -1);
    EXPECT_EQ(r.reduced_outputs, (std::vector<std::string>{"dgamma", "dbeta"}));
    EXPECT_EQ(r.per_row_outputs, (std::vector<std::string>{"dx"}));
  }
}

TEST(Invariance, FailedAndDeclinedCallsAreNotPasses) {
  KernelEntry k = *find_kernel(Op::layernorm_forward, "two_pass", DType::f32);
  int calls = 0;
  const auto inner = k.run;
  k.run = [&calls, inner](const LayerNormCase& c) {
    KernelOutputs o = inner(c);
    if (++calls == 4) o = KernelOutputs{{}, {}, {}, {}, "crashed with signal 11", false};
    return o;
  };
  const InvarianceResult failed = check_invariance(k, invariance_case(DType::f32));
  EXPECT_EQ(failed.verdict(), "kernel_failure");
  EXPECT_EQ(failed.failure, "crashed with signal 11");
  k.run = [](const LayerNormCase&) {
    KernelOutputs o;
    o.skipped = true;
    return o;
  };
  EXPECT_EQ(check_invariance(k, invariance_case(DType::f32)).verdict(), "declined");
}

TEST(Invariance, ASignedZeroDifferenceCountsAndTwoNansDoNot) {
  KernelEntry k = *find_kernel(Op::layernorm_forward, "two_pass", DType::f64);
  int calls = 0;
  k.run = [&calls](const LayerNormCase& c) {  // NaN in column 2 of every row, +0 elsewhere; -0 once
    KernelOutputs o;
    ++calls;
    for (int64_t e = 0; e < c.rows * c.n; ++e) o.y.push_back(e % c.n == 2 ? std::nan("") : (calls == 5 && e == 1 ? -0.0 : 0.0));
    return o;
  };
  const InvarianceResult r = check_invariance(k, invariance_case(DType::f64));
  EXPECT_EQ(r.verdict(), "batch_variant");
  ASSERT_TRUE(r.batch_variant);
  EXPECT_EQ(r.batch_variant->col, 1);
  EXPECT_EQ(r.batch_variant->row, 15);  // the batch of 2 holds the case's rows 15 and 16
  EXPECT_TRUE(std::signbit(r.batch_variant->b));
}
