// Issue 6: normalization-axis audit. The seed's tables (dense (2,3), image (2,3,4,4)), the
// wrong-axis case, black-box inference catching planted wrong-axis kernels in every dtype, and
// shapes with size-1 axes where different axis choices coincide.
#include <gtest/gtest.h>

#include "audit/audit_report.hpp"
#include "audit/infer.hpp"
#include "core/rng.hpp"
#include "properties/cli_harness.hpp"

#include <cstring>

using namespace normcheck;
using namespace normcheck::audit;

namespace {

struct Expected {
  int64_t groups, entries, learned, running;
  std::vector<int64_t> stats, affine;
};

void expect_accounting(const TensorSpec& t, const NormSpec& n, const Expected& e) {
  const Accounting a = account(t, n);
  EXPECT_EQ(a.groups, e.groups) << a.description;
  EXPECT_EQ(a.entries_per_group, e.entries) << a.description;
  EXPECT_EQ(a.learned_parameters, e.learned) << a.description;
  EXPECT_EQ(a.running_statistics, e.running) << a.description;
  EXPECT_EQ(a.stats_shape, e.stats) << a.description;
  EXPECT_EQ(a.affine_shape, e.affine) << a.description;
  EXPECT_EQ(a.groups * a.entries_per_group, a.elements);
}

std::vector<DType> every_dtype() { return {DType::f16, DType::bf16, DType::f32, DType::f64}; }

}  // namespace

TEST(AxisAccounting, SeedDenseTable) {
  const TensorSpec t{Layout::dense, {2, 3}};
  // Batch norm over N: 3 groups of 2, gamma and beta of D = 3, running mean and variance of 3 each.
  expect_accounting(t, {NormKind::batch_norm}, {3, 2, 6, 6, {1, 3}, {1, 3}});
  // Layer norm over D: 2 groups of 3, the same 6 learned parameters, no running statistics.
  expect_accounting(t, {NormKind::layer_norm, 1}, {2, 3, 6, 0, {2, 1}, {1, 3}});
  // Same output shape, same learned-parameter count, different dependencies.
  EXPECT_NE(declared_groups(t, {NormKind::batch_norm}), declared_groups(t, {NormKind::layer_norm, 1}));
}

TEST(AxisAccounting, SeedImageTable) {
  const TensorSpec t{Layout::nchw, {2, 3, 4, 4}};
  expect_accounting(t, {NormKind::batch_norm}, {3, 32, 6, 6, {1, 3, 1, 1}, {1, 3, 1, 1}});
  expect_accounting(t, {NormKind::layer_norm, 3}, {2, 48, 96, 0, {2, 1, 1, 1}, {1, 3, 4, 4}});
  expect_accounting(t, {NormKind::channel_layer_norm}, {32, 3, 6, 0, {2, 1, 4, 4}, {1, 3, 1, 1}});
  // Tied affine layer norm over (C, H, W): one gamma and beta per channel.
  NormSpec tied{NormKind::layer_norm, 3};
  tied.tied_affine = true;
  expect_accounting(t, tied, {2, 48, 6, 0, {2, 1, 1, 1}, {1, 3, 1, 1}});
  // The wrong axis: last-axis normalization of width W on NCHW data, a mean across each pixel row.
  expect_accounting(t, {NormKind::layer_norm, 1}, {24, 4, 8, 0, {2, 3, 4, 1}, {1, 1, 1, 4}});
  EXPECT_NE(declared_groups(t, {NormKind::layer_norm, 1}), declared_groups(t, {NormKind::channel_layer_norm}));
}

TEST(AxisAccounting, OtherKindsAndLayouts) {
  const TensorSpec nhwc{Layout::nhwc, {2, 4, 4, 6}};
  expect_accounting(nhwc, {NormKind::batch_norm}, {6, 32, 12, 12, {1, 1, 1, 6}, {1, 1, 1, 6}});
  expect_accounting(nhwc, {NormKind::channel_layer_norm}, {32, 6, 12, 0, {2, 4, 4, 1}, {1, 1, 1, 6}});
  NormSpec gn{NormKind::group_norm};
  gn.groups = 3;
  expect_accounting(TensorSpec{Layout::nchw, {2, 6, 4, 4}}, gn, {6, 32, 12, 0, {2, 3, 1, 1}, {1, 6, 1, 1}});
  expect_accounting(TensorSpec{Layout::nchw, {2, 6, 4, 4}}, {NormKind::instance_norm}, {12, 16, 12, 0, {2, 6, 1, 1}, {1, 6, 1, 1}});
  expect_accounting(TensorSpec{Layout::sequence, {2, 5, 8}}, {NormKind::rms_norm, 1}, {10, 8, 8, 0, {2, 5, 1}, {1, 1, 8}});
  NormSpec no_affine{NormKind::batch_norm};
  no_affine.affine = false;
  no_affine.track_running_stats = false;
  expect_accounting(TensorSpec{Layout::dense, {4, 3}}, no_affine, {3, 4, 0, 0, {1, 3}, {1, 3}});
}

TEST(AxisAccounting, RejectsShapesThatDoNotFit) {
  EXPECT_TRUE(validate({Layout::nchw, {2, 3, 4}}, {NormKind::batch_norm}).has_value());
  EXPECT_TRUE(validate({Layout::nchw, {2, 0, 4, 4}}, {NormKind::batch_norm}).has_value());
  NormSpec gn{NormKind::group_norm};
  gn.groups = 4;
  EXPECT_NE(validate({Layout::nchw, {2, 6, 4, 4}}, gn)->find("divisible"), std::string::npos);
  EXPECT_TRUE(validate({Layout::dense, {2, 3}}, {NormKind::instance_norm}).has_value());
  EXPECT_TRUE(validate({Layout::nchw, {2, 3, 4, 4}}, {NormKind::layer_norm, 5}).has_value());
  EXPECT_THROW(account({Layout::dense, {2, 3}}, {NormKind::group_norm}), std::invalid_argument);
}

TEST(AxisInference, TheCorrectKernelMatchesInEveryDtype) {
  for (DType dt : every_dtype())
    for (const auto& [t, n] : std::vector<std::pair<TensorSpec, NormSpec>>{
             {{Layout::nchw, {2, 3, 4, 4}}, {NormKind::batch_norm}},
             {{Layout::nchw, {2, 3, 4, 4}}, {NormKind::channel_layer_norm}},
             {{Layout::nhwc, {2, 4, 4, 6}}, {NormKind::instance_norm}},
             {{Layout::sequence, {3, 5, 8}}, {NormKind::layer_norm, 1}},
             {{Layout::dense, {2, 3}}, {NormKind::batch_norm}}}) {
      const InferredGroups g = infer_groups(make_audit_kernel("declared", t, n, dt), t, dt, 7);
      const AuditVerdict v = compare_groups(t, n, g);
      EXPECT_TRUE(v.match) << dtype_info(dt).name << ": " << v.verdict;
      EXPECT_LE(g.probes, 1 + 4 * account(t, n).groups);  // a probe pair per group plus a confirmation pair
    }
}

TEST(AxisInference, CatchesEveryPlantedWrongAxisKernelInEveryDtype) {
  NormSpec gn{NormKind::group_norm};
  gn.groups = 2;
  const TensorSpec img{Layout::nchw, {2, 4, 3, 5}};
  const std::vector<std::tuple<const char*, TensorSpec, NormSpec, const char*>> cases = {
      {"last_axis_layer_norm", img, {NormKind::channel_layer_norm}, "over W, declared over C"},
      {"layout_swapped", img, {NormKind::channel_layer_norm}, "over W, declared over C"},
      {"layout_swapped", TensorSpec{Layout::nhwc, {2, 3, 5, 4}}, {NormKind::batch_norm}, "declared over N, H, W"},
      {"batch_norm_per_sample", img, {NormKind::batch_norm}, "over H, W, declared over N, H, W"},
      {"group_norm_wrong_groups", img, gn, "MISMATCH"},
      {"mean_over_all_axes", img, {NormKind::layer_norm, 3}, "over N, C, H, W, declared over C, H, W"},
  };
  for (DType dt : every_dtype())
    for (const auto& [kernel, t, n, words] : cases) {
      const InferredGroups g = infer_groups(make_audit_kernel(kernel, t, n, dt), t, dt, 3);
      const AuditVerdict v = compare_groups(t, n, g);
      EXPECT_FALSE(v.match) << kernel << " " << dtype_info(dt).name;
      EXPECT_NE(v.verdict.find(words), std::string::npos) << kernel << " " << dtype_info(dt).name << ": " << v.verdict;
    }
}

TEST(AxisInference, ChannelLayerNormRecipeEqualsIndexGroupingBitForBit) {
  // The seed's procedure (channels moved last, last-axis layer norm of width C, moved back) and the
  // grouped kernel's index grouping give the same groups and the same outputs, bit for bit, with
  // learned gamma and beta, in every dtype and layout.
  for (DType dt : every_dtype())
    for (const TensorSpec& t : {TensorSpec{Layout::nchw, {2, 3, 4, 4}}, TensorSpec{Layout::nhwc, {2, 4, 4, 6}},
                                TensorSpec{Layout::sequence, {2, 5, 8}}, TensorSpec{Layout::nchw, {1, 7, 1, 3}}}) {
      const NormSpec n{NormKind::channel_layer_norm};
      const int64_t params = affine_parameter_count(t, n), entries = account(t, n).elements;
      Rng rng(11);
      std::vector<double> x(static_cast<size_t>(entries)), gamma(static_cast<size_t>(params)), beta(gamma);
      for (double& v : x) v = round_to_dtype(3 * rng.normal() + 1, dt);
      for (double& v : gamma) v = round_to_dtype(1 + rng.normal(), dt);
      for (double& v : beta) v = round_to_dtype(rng.normal(), dt);
      const std::vector<double> grouped = make_affine_audit_kernel("declared", t, n, dt)(x, gamma, beta);
      const std::vector<double> recipe = make_affine_audit_kernel("channel_layer_norm_recipe", t, n, dt)(x, gamma, beta);
      ASSERT_EQ(grouped.size(), recipe.size());
      for (size_t e = 0; e < grouped.size(); ++e)
        ASSERT_EQ(std::memcmp(&grouped[e], &recipe[e], sizeof(double)), 0)
            << dtype_info(dt).name << " " << layout_name(t.layout) << " entry " << e << std::hexfloat << " " << grouped[e] << " " << recipe[e];
      const AuditRecord r = run_audit(t, n, "channel_layer_norm_recipe", dt, 5);
      EXPECT_TRUE(r.matches()) << r.verdict->verdict << " / " << r.affine_verdict->verdict;
      EXPECT_EQ(r.inferred->group_of, declared_groups(t, n));
    }
  EXPECT_THROW(make_affine_audit_kernel("channel_layer_norm_recipe", {Layout::nchw, {2, 3, 4, 4}}, {NormKind::batch_norm}, DType::f32),
               std::invalid_argument);
}

TEST(AxisInference, AffineBroadcastIsInferredAndAWrongAxisIsNamed) {
  // C = W = 4: a (C,) gamma broadcast against W runs without an error and with the right groups.
  const TensorSpec img{Layout::nchw, {2, 4, 3, 4}};
  for (DType dt : every_dtype()) {
    for (const NormSpec& n : {NormSpec{NormKind::batch_norm}, NormSpec{NormKind::layer_norm, 3}, NormSpec{NormKind::instance_norm},
                              NormSpec{NormKind::channel_layer_norm}}) {
      const AuditRecord good = run_audit(img, n, "declared", dt, 9);
      ASSERT_TRUE(good.affine_verdict);
      EXPECT_TRUE(good.affine_verdict->match) << dtype_info(dt).name << " " << kind_name(n.kind) << ": " << good.affine_verdict->verdict;
      EXPECT_EQ(good.affine->gamma_of, affine_index_of_entries(img, n));  // every entry's parameter, exactly
      EXPECT_EQ(good.affine->beta_of, affine_index_of_entries(img, n));
      const AuditRecord bad = run_audit(img, n, "affine_along_last_axis", dt, 9);
      EXPECT_TRUE(bad.verdict->match);  // its groups are right ...
      EXPECT_FALSE(bad.affine_verdict->match) << bad.affine_verdict->verdict;  // ... its parameters are not
      EXPECT_TRUE(bad.as_expected());
    }
    const AuditRecord bad = run_audit(img, {NormKind::batch_norm}, "affine_along_last_axis", dt, 9);
    EXPECT_NE(bad.affine_verdict->verdict.find("MISMATCH: gamma applied along W (4 values, shared over N, C, H), declared along C (4 values, shared over N, H, W)"),
              std::string::npos) << bad.affine_verdict->verdict;
    EXPECT_NE(bad.affine_verdict->verdict.find("beta applied along W"), std::string::npos) << bad.affine_verdict->verdict;
  }
  // RMSNorm has no beta: only gamma is probed.
  const AuditRecord rms = run_audit({Layout::sequence, {2, 5, 8}}, {NormKind::rms_norm, 1}, "declared", DType::bf16, 2);
  EXPECT_TRUE(rms.affine->beta_of.empty());
  EXPECT_TRUE(rms.matches());
  // The same axes in another order are named as such.
  InferredAffine permuted;
  permuted.gamma_of = affine_index_of_entries(img, {NormKind::batch_norm});
  for (int64_t& c : permuted.gamma_of) c = (c + 1) % 4;
  const AffineVerdict v = compare_affine(img, {NormKind::batch_norm}, permuted);
  EXPECT_FALSE(v.match);
  EXPECT_NE(v.verdict.find("as declared, but in another order"), std::string::npos) << v.verdict;
  // The command line: exit 1 and the verdict line.
  const Outcome o = run_cli("audit-axes --shape 2,4,3,4 --layout nchw --kind batch_norm --kernel affine_along_last_axis");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.out.find("affine (7 probes): MISMATCH: gamma applied along W"), std::string::npos) << o.out;
  EXPECT_EQ(run_cli("audit-axes --shape 2,4,3,4 --layout nchw --kind batch_norm --kernel declared").exit_code, 0);
}

TEST(AxisInference, InferenceModeBatchNormHasNoReduction) {
  const TensorSpec t{Layout::nchw, {2, 3, 2, 2}};
  const AuditVerdict v =
      compare_groups(t, {NormKind::batch_norm}, infer_groups(make_audit_kernel("batch_norm_eval", t, {NormKind::batch_norm}, DType::f32), t, DType::f32, 1));
  EXPECT_FALSE(v.match);
  EXPECT_NE(v.verdict.find("nothing (each entry alone)"), std::string::npos) << v.verdict;
}

TEST(AxisInference, SizeOneAxesMakeDifferentChoicesCoincideAndTheAuditSaysSo) {
  // N = 1: batch norm and instance norm have the same groups; the audit matches but names the
  // coincidence and the size-1 axis.
  const TensorSpec t{Layout::nchw, {1, 3, 4, 4}};
  const AuditVerdict v =
      compare_groups(t, {NormKind::batch_norm}, infer_groups(make_audit_kernel("batch_norm_per_sample", t, {NormKind::batch_norm}, DType::f32), t, DType::f32, 5));
  EXPECT_TRUE(v.match) << v.verdict;
  EXPECT_NE(std::find(v.coincidences.begin(), v.coincidences.end(), "instance norm"), v.coincidences.end());
  EXPECT_NE(v.verdict.find("axes of size 1 (N)"), std::string::npos) << v.verdict;
  // W = 1: last-axis layer norm normalizes single entries.
  const TensorSpec w1{Layout::nchw, {2, 3, 4, 1}};
  const AuditVerdict w = compare_groups(
      w1, {NormKind::channel_layer_norm}, infer_groups(make_audit_kernel("last_axis_layer_norm", w1, {NormKind::channel_layer_norm}, DType::f16), w1, DType::f16, 5));
  EXPECT_FALSE(w.match);
  EXPECT_NE(w.verdict.find("each entry alone"), std::string::npos) << w.verdict;
}

TEST(AxisInference, RefusesTensorsTooLargeToProbe) {
  const TensorSpec t{Layout::nchw, {4, 64, 16, 32}};
  EXPECT_THROW(infer_groups(make_audit_kernel("declared", t, {NormKind::batch_norm}, DType::f32), t, DType::f32, 1),
               std::invalid_argument);
}

#include <algorithm>

#include <rapidcheck/gtest.h>

#include "generators/grouped_generators.hpp"
#include "suite/grouped_judge.hpp"

RC_GTEST_PROP(GroupedNorms, EveryGroupedKindWithinItsBoundsInEveryDtype, ()) {
  const auto kind = *rc::gen::element(NormKind::batch_norm, NormKind::group_norm, NormKind::instance_norm, NormKind::layer_norm,
                                      NormKind::channel_layer_norm, NormKind::rms_norm);
  const auto layout = *rc::gen::element(Layout::nchw, Layout::nhwc, Layout::sequence);
  const DType dt = every_dtype()[*rc::gen::inRange<size_t>(0, 4)];
  const GroupedNormCase c = gen::make_grouped_case(kind, layout, dt, *rc::gen::arbitrary<uint64_t>());
  const GroupedOutputs got = run_grouped_kernel(c);
  const GroupedJudgement j = judge_grouped(c, got);
  RC_ASSERT(j.reference.certified);
  RC_ASSERT(got.names.size() == (kind == NormKind::batch_norm ? 7u : kind == NormKind::rms_norm ? 3u : 4u));
  for (const OutputJudgement& o : j.outputs) {
    RC_LOG() << o.output << " ratio " << o.acc.max_bound_ratio() << " void " << o.acc.void_bounds() << "\n";
    RC_ASSERT(o.acc.count() > 0);
    RC_ASSERT(!o.failed);
  }
}

TEST(GroupedNorms, BoundsAreNotVacuousAndABiasedRunningVarianceIsCaught) {
  double best_y = 0;
  int caught = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GroupedNormCase c = gen::make_grouped_case(NormKind::batch_norm, Layout::nchw, DType::f32, seed);
    const GroupedJudgement ok = judge_grouped(c, run_grouped_kernel(c));
    for (const OutputJudgement& o : ok.outputs) {
      EXPECT_FALSE(o.failed) << o.output;
      if (o.output == "y") best_y = std::max(best_y, o.acc.max_bound_ratio());
    }
    // PyTorch keeps the unbiased variance n/(n-1) in running_var; a kernel storing the biased one
    // differs by mom var / (n - 1): far above f32 rounding for small n.
    const GroupedJudgement bad = judge_grouped(c, run_grouped_kernel(c, false));
    for (const OutputJudgement& o : bad.outputs)
      if (o.output == "running_var" && o.failed) ++caught;
  }
  EXPECT_GT(best_y, 0.02);
  EXPECT_GE(caught, 5);
}

namespace {

/// The y and dx of `kernel_case`'s kernel (the outputs shaped like x, whatever the parameters).
GroupedOutputs outputs_for(const GroupedNormCase&, const GroupedNormCase& kernel_case) {
  const GroupedOutputs all = run_grouped_kernel(kernel_case);
  GroupedOutputs out;
  for (const std::string name : {"y", "dx"})
    for (size_t i = 0; i < all.names.size(); ++i)
      if (all.names[i] == name) {
        out.names.push_back(name);
        out.values.push_back(all.values[i]);
      }
  return out;
}

/// Cases (of 8 seeds) where some output of `c` fails when the kernel computes `wrong(c)` instead.
template <class Wrong>
int caught_cases(NormKind kind, Layout layout, DType dt, Wrong wrong) {
  int caught = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const GroupedNormCase c = gen::make_grouped_case(kind, layout, dt, seed);
    const GroupedJudgement j = judge_grouped(c, outputs_for(c, wrong(c)));
    caught += std::any_of(j.outputs.begin(), j.outputs.end(), [](const OutputJudgement& o) { return o.failed; });
  }
  return caught;
}

}  // namespace

TEST(GroupedNorms, LayerNormOverTrailingAxesChannelLayerNormAndRmsNormCatchTheirTypicalMistakes) {
  // RMSNorm computed as a layer norm (mean subtracted, beta 0): the y of a shifted tensor moves
  // far beyond the bound.
  const auto as_layer_norm = [](GroupedNormCase c) {
    c.spec.kind = NormKind::layer_norm;
    c.beta.assign(c.gamma.size(), 0.0);
    return c;
  };
  EXPECT_GE(caught_cases(NormKind::rms_norm, Layout::nchw, DType::f32, as_layer_norm), 7);
  // Layer norm over one axis fewer than declared (a wrong normalized_shape).
  const auto one_axis_fewer = [](GroupedNormCase c) {
    if (c.spec.normalized_dims > 1) {
      const GroupedNormCase declared = c;
      --c.spec.normalized_dims;
      // the narrower norm's gamma/beta: the declared parameters of the first slice of the dropped axis
      const auto params = case_params(declared), narrower = case_params(c);
      std::vector<double> g(static_cast<size_t>(case_param_count(c))), b(g);
      for (size_t e = 0; e < params.size(); ++e) {
        g[static_cast<size_t>(narrower[e])] = declared.gamma[static_cast<size_t>(params[e])];
        b[static_cast<size_t>(narrower[e])] = declared.beta[static_cast<size_t>(params[e])];
      }
      c.gamma = g;
      c.beta = b;
    }
    return c;
  };
  int differ = 0;  // cases where the dropped axis has more than one coordinate: the groups differ
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const GroupedNormCase c = gen::make_grouped_case(NormKind::layer_norm, Layout::nchw, DType::bf16, seed);
    differ += c.spec.normalized_dims > 1 && c.tensor.shape[c.tensor.shape.size() - static_cast<size_t>(c.spec.normalized_dims)] > 1;
  }
  ASSERT_GE(differ, 3);  // the generator draws several trailing axes often enough to matter
  EXPECT_EQ(caught_cases(NormKind::layer_norm, Layout::nchw, DType::bf16, one_axis_fewer), differ);
  // Channel layer norm computed over the last axis (LayerNorm on NCHW's W instead of C).
  const auto last_axis = [](GroupedNormCase c) {
    c.spec.kind = NormKind::layer_norm;
    c.spec.normalized_dims = 1;
    c.gamma.assign(static_cast<size_t>(case_param_count(c)), 1.0);
    c.beta.assign(c.gamma.size(), 0.0);
    return c;
  };
  EXPECT_GE(caught_cases(NormKind::channel_layer_norm, Layout::nchw, DType::f64, last_axis), 6);
  // And the bounds are not vacuous for the sound kernel: some output comes within 2% of its bound.
  double best = 0;
  for (NormKind kind : {NormKind::layer_norm, NormKind::channel_layer_norm, NormKind::rms_norm})
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      const GroupedNormCase c = gen::make_grouped_case(kind, Layout::sequence, DType::f32, seed);
      for (const OutputJudgement& o : judge_grouped(c, run_grouped_kernel(c)).outputs) {
        EXPECT_FALSE(o.failed) << audit::kind_name(kind) << " " << o.output << " seed " << seed;
        best = std::max(best, o.acc.max_bound_ratio());
      }
    }
  EXPECT_GT(best, 0.02);
}

TEST(GroupedNorms, KernelsReturnOneOutputPerEntryAndRefuseANegativeRunningVariance) {
  // (Named CostIsLinearInTheEntries before issue 20; it never measured cost. The audit's cost growth
  // is measured by `normcheck bench-audit`, docs/axis-audit.md "Cost".)
  GroupedNormCase small = gen::make_grouped_case(NormKind::group_norm, Layout::nchw, DType::f32, 3);
  EXPECT_EQ(run_grouped_kernel(small).values[0].size(), small.x.size());
  small.running_var[0] = -1;
  EXPECT_THROW(run_grouped_kernel(small), std::invalid_argument);
}

TEST(AxisAudit, TheDocsCommandsRunAsPrinted) {
  // Every `./build/normcheck audit-axes` command of docs/axis-audit.md (continuation lines joined),
  // from a folder where build/ is this build and scripts/ the source's: each runs to a verdict
  // (exit 0, or 1 where the doc shows a MISMATCH), never a usage error.
  const fs::path root = scratch() / "axis_audit_doc";
  fs::remove_all(root);
  fs::create_directories(root);
  fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
  fs::create_symlink(fs::path(NORMCHECK_SOURCE_DIR) / "scripts", root / "scripts");
  std::ifstream f(std::string(NORMCHECK_SOURCE_DIR) + "/docs/axis-audit.md");
  int ran = 0;
  for (std::string line, command; std::getline(f, line);) {
    if (command.empty() && line.rfind("    ./build/normcheck audit-axes", 0) != 0) continue;
    command += line.substr(line.find_first_not_of(' '));
    if (!command.empty() && command.back() == '\\') {
      command.pop_back();
      continue;
    }
    std::string comment;
    if (const size_t hash = command.find("   #"); hash != std::string::npos) comment = command.substr(hash), command = command.substr(0, hash);
    const Outcome o = run_shell("cd " + root.string() + " && " + command);
    const bool mismatch_shown = comment.find("MISMATCH") != std::string::npos || command.find("affine_along_last_axis") != std::string::npos ||
                                command.find("--kernel last_axis") != std::string::npos || command.find("wrong_groups") != std::string::npos ||
                                command.find("--over W") != std::string::npos;  // the planted kernels and the planted exec example
    EXPECT_EQ(o.exit_code, mismatch_shown ? 1 : 0) << command << "\n" << o.out << o.err;
    ++ran;
    command.clear();
  }
  EXPECT_GE(ran, 5);
}

TEST(AxisAudit, BenchAuditReportsProbesTimesAndSlopes) {
  // The benchmark runs and its counts are the inference's: a constant probe count where the groups
  // do not grow (batch norm: 4 x 8 channels + 1), one pair more per group where they do (channel
  // layer norm: 4 x N H W + 1), 3 + 2 log2 P probes for the affine parameters.
  const fs::path out = scratch() / "bench_audit.json";
  const Outcome o = run_cli("bench-audit --max-side 8 --repeats 1 --json " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("slope of seconds against entries"), std::string::npos) << o.out;
  const auto j = nlohmann::json::parse(slurp(out));
  ASSERT_EQ(j.at("rows").size(), 5u * 3u);  // five kinds x sides 2, 4, 8
  for (const auto& row : j.at("rows")) {
    const std::string kind = row.at("kind");
    const int64_t groups = row.at("groups"), entries = row.at("entries");
    EXPECT_EQ(row.at("group_probes").get<int64_t>(), 1 + 4 * groups) << kind << " " << entries;
    if (kind == "batch_norm") {  // P = 8 channels: base, then all + 3 bits for gamma and for beta
      EXPECT_EQ(row.at("affine_probes").get<int64_t>(), 3 + 2 * 3) << entries;
    }
    EXPECT_GT(row.at("group_inference_s").get<double>(), 0);
  }
  EXPECT_EQ(run_cli("bench-audit --dtype f8").exit_code, 2);
  EXPECT_EQ(run_cli("bench-audit --max-side 128").exit_code, 2);
}
