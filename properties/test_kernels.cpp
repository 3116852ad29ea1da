// Every built-in kernel variant x dtype against the certified oracle, through the tolerance table.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ops/op_kernels.hpp"
#include "properties/rc_generators.hpp"
#include "io/case_json.hpp"
#include "suite/judge.hpp"
#include "normcheck/plugin.h"

using namespace normcheck;

namespace {

std::vector<const KernelEntry*> kernels_where(const std::string& variant, DType dt) {
  std::vector<const KernelEntry*> out;
  for (const KernelEntry& k : builtin_kernels())
    if (k.variant == variant && k.storage == dt) out.push_back(&k);
  return out;
}

/// Seed, shape and the worst element in hexfloat and decimal, for a failure message.
std::string describe_failure(const LayerNormCase& c, const KernelEntry& k, const OutputJudgement& j) {
  std::ostringstream s;
  s << op_name(k.op) << "/" << j.output << " " << k.variant << " " << dtype_info(k.storage).name
    << ": generator " << c.generator << " seed " << c.seed << " shape " << c.rows << "x" << c.n << " eps "
    << hexfloat(c.eps) << "; element " << j.worst.index << " kernel " << hexfloat(j.worst.got) << " ("
    << fmt_decimal(j.worst.got) << ") oracle " << hexfloat(j.worst.ref.approx()) << " ("
    << fmt_decimal(j.worst.ref.approx()) << ") bound " << hexfloat(j.worst.bound) << " ratio "
    << j.acc.max_bound_ratio() << " nonfinite " << j.acc.nonfinite_mismatches();
  return s.str();
}

/// Whether every verdict violation of j is an infinity the kernel's own bound predicted: outputs in
/// the predicted-overflow regime (bound void) where the kernel overflowed although the exact value
/// rounds to a finite one. The verdict fails them by design (docs/bounds.md section 5.4: "a sound
/// kernel that overflows where its bound said it might is reported as a verdict failure"); a
/// sound kernel does this near the dtype's overflow threshold (f16 two_pass, `subnormal` rows, dx
/// 65519.96 against the threshold 65520: its f32 value rounds up past it). Its own bound holds.
bool only_predicted_overflows(const OutputJudgement& j) {
  const int64_t overflowed_in_regime = j.acc.regime_count(1) - j.acc.overflow_survived();
  return !j.own_failed && j.acc.bound_violations() == j.acc.nonfinite_mismatches() &&
         j.acc.nonfinite_mismatches() <= overflowed_in_regime && (j.acc.worst_regime() & 2u);
}

/// Judges all kernels of `variant` in `dt` on one case; returns the failures' descriptions
/// (verdict-bound failures other than predicted overflows, or own-bound failures when `own_bound`
/// is set).
std::vector<std::string> failures_on(const LayerNormCase& c, const std::string& variant, bool own_bound = false) {
  const auto kernels = kernels_where(variant, c.dtype);
  if (kernels.empty()) return {};
  const oracle::CertifiedLayerNorm ref = certified_reference(kernels.front()->op, c, true);
  std::vector<std::string> out;
  for (const KernelEntry* k : kernels)
    for (const OutputJudgement& j : judge_case(*k, c, ref))
      if (own_bound ? j.own_failed : j.failed && !only_predicted_overflows(j)) out.push_back(describe_failure(c, *k, j));
  return out;
}

void check_variant(DType dt, const std::string& variant, bool own_bound = false) {
  const bool ok = rc::check(std::string(dtype_info(dt).name) + " " + variant + " within its a priori bound", [=] {
    const LayerNormCase c = *rcgen::layernorm_case(dt, gen::row_generator_names(), 8192);
    const auto failures = failures_on(c, variant, own_bound);
    if (!failures.empty()) RC_FAIL(failures.front());
  });
  EXPECT_TRUE(ok);
}

/// Counts, over a fixed set of seeds, the cases on which the harness flags `variant`.
int flagged_cases(DType dt, const std::string& variant, const std::string& generator, int cases) {
  int flagged = 0;
  for (int s = 0; s < cases; ++s) {
    const LayerNormCase c = gen::make_layernorm_case(generator, dt, 1000 + s, {0, 0, 4096});
    if (!failures_on(c, variant).empty()) ++flagged;
  }
  return flagged;
}

}  // namespace

TEST(OpSpecs, TableIsInOpOrderAndNamesRoundTrip) {
  const auto& specs = op_specs();
  ASSERT_EQ(specs.size(), 6u);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(specs[i].op), i) << specs[i].name;
    EXPECT_EQ(parse_op(specs[i].name), specs[i].op) << specs[i].name;
    EXPECT_EQ(op_name(specs[i].op), specs[i].name);
    EXPECT_EQ(op_of(specs[i].family, specs[i].direction), specs[i].op);
    ASSERT_EQ(specs[i].output_names.size(), specs[i].outputs.size());
    for (size_t k = 0; k < specs[i].outputs.size(); ++k) EXPECT_EQ(specs[i].output_names[k], specs[i].outputs[k].name);
    EXPECT_FALSE(specs[i].formula.empty());
    EXPECT_FALSE(specs[i].bound.empty());
  }
  EXPECT_FALSE(parse_op("layernorm_forwards").has_value());
  EXPECT_FALSE(parse_op("").has_value());
  EXPECT_EQ(op_names_joined(),
            "layernorm_forward, layernorm_backward, rmsnorm_forward, rmsnorm_backward, gemma_rmsnorm_forward, gemma_rmsnorm_backward");
}

TEST(OpSpecs, AbiNumbersFamiliesAndRolesMatchThePluginHeader) {
  EXPECT_EQ(op_spec(Op::layernorm_forward).abi_op, NC_LAYERNORM_FORWARD);
  EXPECT_EQ(op_spec(Op::layernorm_backward).abi_op, NC_LAYERNORM_BACKWARD);
  EXPECT_EQ(op_spec(Op::rmsnorm_forward).abi_op, NC_RMSNORM_FORWARD);
  EXPECT_EQ(op_spec(Op::rmsnorm_backward).abi_op, NC_RMSNORM_BACKWARD);
  EXPECT_EQ(op_family(Op::rmsnorm_backward), OpFamily::rmsnorm);
  EXPECT_EQ(op_family(Op::layernorm_backward), OpFamily::layernorm);
  EXPECT_EQ(op_of(OpFamily::rmsnorm, OpDirection::backward), Op::rmsnorm_backward);
  EXPECT_TRUE(has_input(Op::layernorm_forward, "beta"));
  EXPECT_FALSE(has_input(Op::rmsnorm_backward, "beta"));
  EXPECT_TRUE(has_output(Op::layernorm_backward, "dbeta"));
  EXPECT_FALSE(has_output(Op::rmsnorm_backward, "dbeta"));
  for (int f = 0; f < kOpFamilies; ++f) EXPECT_EQ(family_index(family_spec(family_at(f)).family), f);
  EXPECT_THROW(family_at(kOpFamilies), std::out_of_range);
  EXPECT_TRUE(is_backward(Op::rmsnorm_backward));
  EXPECT_FALSE(is_backward(Op::layernorm_forward));
  const auto names = [](const std::vector<OpSlot>& slots) {
    std::vector<std::string> v;
    for (const OpSlot& s : slots) v.push_back(s.name);
    return v;
  };
  EXPECT_EQ(names(op_spec(Op::layernorm_backward).outputs), (std::vector<std::string>{"dx", "dgamma", "dbeta"}));
  EXPECT_EQ(names(op_spec(Op::rmsnorm_backward).outputs), (std::vector<std::string>{"dx", "dgamma"}));
  EXPECT_EQ(names(op_spec(Op::rmsnorm_forward).inputs), (std::vector<std::string>{"x", "gamma"}));
  const OpSlot& dx = op_spec(Op::layernorm_backward).outputs[0];
  const OpSlot& dgamma = op_spec(Op::layernorm_backward).outputs[1];
  EXPECT_EQ(dgamma.role, SlotRole::reduced_output);
  EXPECT_FALSE(dgamma.per_row());
  EXPECT_EQ(output_elements(dx, 3, 5), 15);
  EXPECT_EQ(output_elements(dgamma, 3, 5), 5);
}

TEST(OpSpecs, EveryBuiltinKernelFillsExactlyItsSpecsOutputs) {
  const LayerNormCase c = gen::make_layernorm_case("normal", DType::f64, 42, {3, 8});
  std::set<Op> ops_seen;
  for (const KernelEntry& k : builtin_kernels()) {
    if (k.storage != DType::f64) continue;
    ops_seen.insert(k.op);
    const KernelOutputs out = k.run(c);
    for (const std::string& name : {std::string("y"), std::string("dx"), std::string("dgamma"), std::string("dbeta")}) {
      const auto& names = op_spec(k.op).output_names;
      const bool named = std::find(names.begin(), names.end(), name) != names.end();
      const OpSlot* slot = nullptr;
      for (const OpSlot& s : op_spec(k.op).outputs)
        if (s.name == name) slot = &s;
      if (named)
        EXPECT_EQ(static_cast<int64_t>(output_of(out, name).size()), output_elements(*slot, c.rows, c.n))
            << op_name(k.op) << "/" << name;
      else
        EXPECT_TRUE(output_of(out, name).empty()) << op_name(k.op) << " fills " << name << " that its spec lacks";
    }
  }
  EXPECT_EQ(ops_seen.size(), op_specs().size());
  KernelOutputs out;
  EXPECT_THROW(output_of(out, "mean"), std::invalid_argument);
}

TEST(OpSpecs, TheOracleHasEverySpecOutputAndRefusesOtherNames) {
  const LayerNormCase c = gen::make_layernorm_case("normal", DType::f32, 7, {2, 5});
  for (const OpSpec& s : op_specs()) {
    const oracle::CertifiedLayerNorm ref = certified_reference(s.op, c, is_backward(s.op));
    for (const OpSlot& o : s.outputs)
      EXPECT_EQ(static_cast<int64_t>(reference_of(ref, o.name).size()), output_elements(o, c.rows, c.n)) << s.name << "/" << o.name;
  }
  const oracle::CertifiedLayerNorm ref = certified_reference(Op::layernorm_backward, c, true);
  EXPECT_NE(&reference_of(ref, "dgamma"), &reference_of(ref, "dbeta"));
  EXPECT_THROW(reference_of(ref, "mean"), std::invalid_argument);
}

TEST(Kernels, TwoPassWithinBoundEveryDtype) {
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "two_pass"); });
}

TEST(Kernels, ASoundKernelOverflowingNearTheThresholdFailsTheVerdictButNotItsOwnBound) {
  // The case RapidCheck found (seed 855190598446916293 of `subnormal`, f16, 1 x 4511): dx element
  // 1065 is 65519.96 exactly, 0.04 below f16's overflow threshold; two_pass's f32 value rounds up
  // past it and its f16 output is inf. The bound predicted the overflow (void there).
  const LayerNormCase c = gen::make_layernorm_case("subnormal", DType::f16, 855190598446916293ull, {1, 4511});
  ASSERT_EQ(c.eps, 0x1.19799812dea11p-40);
  const auto kernels = kernels_where("two_pass", DType::f16);
  const oracle::CertifiedLayerNorm ref = certified_reference(kernels.front()->op, c, true);
  int predicted = 0;
  for (const KernelEntry* k : kernels)
    for (const OutputJudgement& j : judge_case(*k, c, ref)) {
      EXPECT_FALSE(j.own_failed) << j.output;
      if (!j.failed) continue;
      EXPECT_TRUE(only_predicted_overflows(j)) << describe_failure(c, *k, j);
      EXPECT_TRUE(std::isinf(j.worst.got)) << j.output;
      EXPECT_GT(j.worst.ref.rounded, 65000.0) << j.output;  // the exact value rounds to a finite f16
      ++predicted;
    }
  EXPECT_GE(predicted, 1);  // the verdict does fail it (docs/bounds.md section 5.4)
  EXPECT_TRUE(failures_on(c, "two_pass").empty());
}

TEST(Kernels, TwoPassPairwiseWithinBoundEveryDtype) {
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "two_pass_pairwise"); });
}

TEST(Kernels, WelfordWithinBoundEveryDtype) {
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "welford"); });
}

TEST(Kernels, WeakVariantsWithinTheirOwnWeakerBounds) {
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "one_pass", true); });
  for (DType dt : {DType::f16, DType::bf16}) check_variant(dt, "two_pass_storage_accum", true);
}

TEST(Kernels, TheOpByOpGraphWithinItsOwnBoundEveryDtype) {  // LN-OPBYOP-SEQ, docs/bounds.md section 4.5
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "op_by_op", true); });
}

TEST(Kernels, RmsWithinBoundEveryDtype) {
  for_each_dtype([](auto tag) { check_variant(dtype_traits<decltype(tag)>::id, "rms"); });
}

TEST(Kernels, RmsTrackerBugVariantsWithinTheirOwnBounds) {
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    for (const char* v : {"rms_invrms_bf16", "rms_xr_bf16", "rms_dg_bf16"}) check_variant(dt, v, true);
  });
  for (DType dt : {DType::f16, DType::bf16}) check_variant(dt, "rms_sumsq_storage", true);
}

TEST(Kernels, HarnessFlagsRmsTrackerBugs) {
  for (DType dt : {DType::f16, DType::f32, DType::f64}) {
    EXPECT_GE(flagged_cases(dt, "rms_invrms_bf16", "normal", 6), 4) << dtype_info(dt).name;
    EXPECT_GE(flagged_cases(dt, "rms_xr_bf16", "normal", 6), 4) << dtype_info(dt).name;
  }
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    EXPECT_GE(flagged_cases(dt, "rms_dg_bf16", "normal", 6), 3) << dtype_info(dt).name;
  });
  EXPECT_GE(flagged_cases(DType::f16, "rms_sumsq_storage", "overflow_prone", 4), 3);
  EXPECT_GE(flagged_cases(DType::bf16, "rms_sumsq_storage", "normal", 6), 4);
}

TEST(Kernels, HarnessFlagsOnePassOnLargeMeanRowsEveryDtype) {
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    EXPECT_GE(flagged_cases(dt, "one_pass", "large_mean", 6), 4) << dtype_info(dt).name;
  });
}

TEST(Kernels, HarnessFlagsStoragePrecisionAccumulation) {
  for (DType dt : {DType::f16, DType::bf16}) {
    EXPECT_GE(flagged_cases(dt, "two_pass_storage_accum", "normal", 6), 4) << dtype_info(dt).name;
    EXPECT_GE(flagged_cases(dt, "two_pass_storage_accum", "overflow_prone", 4), 3) << dtype_info(dt).name;
  }
}

TEST(Kernels, SoundVariantsPassTheCasesThatCatchWeakOnes) {
  for (DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64})
    for (int s = 0; s < 4; ++s) {
      const LayerNormCase c = gen::make_layernorm_case("large_mean", dt, 1000 + s, {0, 0, 4096});
      EXPECT_TRUE(failures_on(c, "two_pass").empty()) << failures_on(c, "two_pass").front();
    }
}

TEST(Kernels, ShrinkingFindsTheSmallestFailingShape) {
  // A planted defect: the kernel is off by 2^-4 relative whenever n >= 40. RapidCheck must shrink
  // any failing case to rows = 1 and n = 40.
  const KernelEntry& base = *find_kernel(Op::layernorm_forward, "two_pass", DType::f32);
  KernelEntry planted = base;
  planted.run = [&base](const LayerNormCase& c) {
    KernelOutputs o = base.run(c);
    if (c.n >= 40)
      for (auto& v : o.y) v = static_cast<float>(v * (1 + 0x1p-4));
    return o;
  };
  int64_t last_rows = 0, last_n = 0;
  const auto result = rc::detail::checkTestable([&] {
    const LayerNormCase c = *rcgen::layernorm_case(DType::f32, {"normal"}, 4096);
    const auto ref = oracle::certified_layernorm(c, false);
    const bool failed = judge_case(planted, c, ref).front().failed;
    if (failed) {
      last_rows = c.rows;
      last_n = c.n;
    }
    RC_ASSERT(!failed);
  });
  ASSERT_TRUE(result.template is<rc::detail::FailureResult>());
  EXPECT_EQ(last_n, 40);
  EXPECT_EQ(last_rows, 1);
}

TEST(Kernels, GeneratorsAreDeterministicAndValid) {
  for (const auto& g : gen::row_generator_names())
    for_each_dtype([&](auto tag) {
      const DType dt = dtype_traits<decltype(tag)>::id;
      const LayerNormCase a = gen::make_layernorm_case(g, dt, 42), b = gen::make_layernorm_case(g, dt, 42);
      EXPECT_EQ(case_digest(a), case_digest(b)) << g;
      EXPECT_FALSE(validate_case(a, true).has_value()) << g;
    });
}

TEST(Kernels, GeneratorsProduceTheirHardFeatures) {
  const auto sub = gen::make_layernorm_case("subnormal", DType::f32, 5, {4, 64, 256});
  EXPECT_TRUE(std::any_of(sub.x.begin(), sub.x.end(), [](double v) {
    return v != 0 && std::fabs(v) < dtype_info(DType::f32).min_normal;
  }));
  EXPECT_TRUE(std::any_of(sub.x.begin(), sub.x.end(), [](double v) { return v == 0 && std::signbit(v); }));
  const auto one = gen::make_layernorm_case("n_equals_1", DType::bf16, 5);
  EXPECT_EQ(one.n, 1);
  const auto big = gen::make_layernorm_case("near_max", DType::f16, 5, {2, 8, 16});
  EXPECT_GT(*std::max_element(big.x.begin(), big.x.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); }),
            -1.0);  // exists
  EXPECT_GE(std::fabs(big.x[0]), 0.5 * 65504 * 0.5);
}
