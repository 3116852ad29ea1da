// Port-Hamiltonian stream (issue 9): the certified oracle's structure (C orthogonal, Lambda
// contractive, the port budget), the kernels in every dtype against the oracle with the bounds of
// docs/bounds.md section 14 (floating-point budget, forward error, orthogonality defect), the
// explicit-inverse variant, two planted defects the harness must catch, and the CLI's bad input.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "bounds/bounds_budget.hpp"
#include "core/rng.hpp"
#include "oracles/certified_port_hamiltonian.hpp"
#include "suite/budget_case.hpp"
#include "suite/growth_table.hpp"

using namespace normcheck;

namespace {

const DType kDtypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64};

/// Step size log-uniform in [2^-5, 4), rounded to the dtype.
double random_h(Rng& rng, DType dt) { return round_to_dtype(std::ldexp(1.0, static_cast<int>(rng.range(-5, 1))) * (1 + rng.uniform()), dt); }

const BudgetCheck* find_check(const BudgetCaseResult& r, const std::string& variant, const std::string& property) {
  for (const BudgetCheck& k : r.checks)
    if (k.variant == variant && k.property == property) return &k;
  return nullptr;
}

}  // namespace

RC_GTEST_PROP(PhOracle, CayleyOrthogonalAndLambdaContractiveToCertifiedPrecision, ()) {
  Rng rng(*rc::gen::arbitrary<uint64_t>());
  PhCase c = make_ph_case(DType::f64, rng.log_range(2, 24), 1, 1.0, rng.next());
  c.h = random_h(rng, DType::f64);
  const PhStep p = ph_step_params(c, 0);
  const oracle::CertifiedMatrix C = oracle::certified_cayley(p, c.h, DType::f64);
  const oracle::CertifiedMatrix L = oracle::certified_dissipation(p, DType::f64);
  RC_LOG() << "n " << c.n << " h " << c.h << " max |C~^T C~ - I| " << C.structure_value << " max|tanh| " << L.structure_value;
  RC_ASSERT(C.certified);
  RC_ASSERT(C.structure_certified);
  RC_ASSERT(L.certified);
  RC_ASSERT(L.structure_certified);
  RC_ASSERT(L.structure_value < 1.0);
}

TEST(PhOracle, BudgetHoldsAtRandomWidthsAndDepths) {
  Rng rng(20261130);
  for (int i = 0; i < 6; ++i) {  // widths 2..256, depths 1..300 log-uniform, n^2 L capped for cost
    int64_t n = rng.log_range(2, 256), depth = rng.log_range(1, 300);
    while (n * n * depth > 1200000) depth = std::max<int64_t>(1, depth / 2);
    const PhCase c = make_ph_case(DType::f64, n, depth, 0.25, rng.next());
    const oracle::CertifiedPhStream s = oracle::certified_ph_stream(c);
    SCOPED_TRACE(testing::Message() << "n " << n << " depth " << depth << " seed " << c.seed);
    EXPECT_TRUE(s.certified);
    EXPECT_TRUE(s.contractive);
    EXPECT_TRUE(s.budget_holds);
    EXPECT_LE(s.norm_hi.back(), s.budget_lo.back());
    std::printf("n %lld depth %lld: ||x_L|| <= %.6g <= budget %.6g\n", static_cast<long long>(n), static_cast<long long>(depth),
                s.norm_hi.back(), s.budget_lo.back());
  }
}

TEST(PhOracle, BudgetHoldsAtWidth256Depth300Deterministic) {
  const PhCase c = make_ph_case(DType::f64, 256, 300, 0.25, 9);
  const oracle::CertifiedPhStream s = oracle::certified_ph_stream(c);
  EXPECT_TRUE(s.certified);
  EXPECT_TRUE(s.contractive);
  EXPECT_TRUE(s.budget_holds);
  EXPECT_LT(s.max_radius_rel, 1e-30);
  std::printf("width 256 depth 300: ||x_L|| in [%.17g, %.17g], budget >= %.17g, max radius/||x|| %.3g, %d bits\n",
              s.norm_lo.back(), s.norm_hi.back(), s.budget_lo.back(), s.max_radius_rel, s.precision_bits);
}

RC_GTEST_PROP(PhKernels, FloatingPointBudgetAndForwardErrorHoldInEveryDtype, ()) {
  Rng rng(*rc::gen::arbitrary<uint64_t>());
  const DType dt = kDtypes[rng.range(0, 3)];
  const PhCase c = make_ph_case(dt, rng.log_range(2, 16), rng.log_range(1, 24), random_h(rng, dt), rng.next());
  const BudgetCaseResult r = run_budget_case(c);
  for (const BudgetCheck& k : r.checks) {
    RC_LOG() << dtype_info(dt).name << " n " << c.n << " L " << c.depth << " h " << c.h << " " << k.variant << "/" << k.property
             << " value " << k.max_value << " bound " << k.max_bound << " ratio " << k.max_ratio << " acc ratio "
             << k.acc.max_bound_ratio() << (k.failed ? " FAILED" : "") << "\n";
    RC_ASSERT(!k.failed);
    RC_ASSERT(k.uncertified == 0);
  }
  RC_ASSERT(find_check(r, "stream", "fp_budget") != nullptr);
  RC_ASSERT(find_check(r, "stream", "forward_error")->acc.count() == c.n);
  RC_ASSERT(find_check(r, "cayley_solve", "orthogonality_defect")->acc.count() > 0);
}

TEST(PhKernels, ExplicitInverseVariantIsMeasuredAgainstItsOwnBound) {
  for (DType dt : kDtypes) {
    const PhCase c = make_ph_case(dt, 24, 6, 1.5, 77);
    const BudgetCaseResult r = run_budget_case(c);
    const BudgetCheck* solve = find_check(r, "cayley_solve", "orthogonality_defect");
    const BudgetCheck* inv = find_check(r, "cayley_explicit_inverse", "orthogonality_defect");
    ASSERT_TRUE(solve && inv);
    EXPECT_FALSE(inv->failed);
    EXPECT_GT(inv->acc.count(), 0);
    EXPECT_GT(inv->max_value, 0.0);
    std::printf("%s: defect solve %.3g (bound %.3g), explicit inverse %.3g (bound %.3g)\n", std::string(dtype_info(dt).name).c_str(),
                solve->max_value, solve->max_bound, inv->max_value, inv->max_bound);
  }
}

TEST(PhPlanted, HalfStepCayleyIsCaughtInEveryDtype) {
  for (DType dt : kDtypes) {
    BudgetCaseOptions o;
    o.cayley = "cayley_half_step";
    o.explicit_inverse = false;
    const BudgetCaseResult r = run_budget_case(make_ph_case(dt, 12, 3, 0.5, 5), o);
    const BudgetCheck* k = find_check(r, "cayley_half_step", "orthogonality_defect");
    ASSERT_NE(k, nullptr);
    EXPECT_TRUE(k->failed) << dtype_info(dt).name << " defect " << k->max_value << " bound " << k->max_bound;
    EXPECT_GT(k->acc.bound_violations(), 0);
  }
}

TEST(PhPlanted, HardTanhDissipationIsCaughtInEveryDtype) {
  for (DType dt : kDtypes) {
    BudgetCaseOptions o;
    o.dissipation = "dissipation_hardtanh";
    PhCase c = make_ph_case(dt, 12, 2, 0.5, 6);
    c.theta_scale = 3;  // |theta_i| > 1 for most i: the clamp returns +-1, the spectrum reaches +-1
    const BudgetCaseResult r = run_budget_case(c, o);
    const BudgetCheck* k = find_check(r, "dissipation_hardtanh", "entrywise_error");
    ASSERT_NE(k, nullptr);
    EXPECT_TRUE(k->failed) << dtype_info(dt).name;
    EXPECT_GT(k->acc.bound_violations(), 0);
  }
}

TEST(PhPlanted, ResidualConnectionLeftInTheStepBreaksTheBudgetInEveryDtype) {
  for (DType dt : kDtypes) {
    BudgetCaseOptions o;
    o.step = "ph_step_residual_leak";
    o.explicit_inverse = false;
    const BudgetCaseResult r = run_budget_case(make_ph_case(dt, 16, 24, 0.25, 8), o);
    const BudgetCheck* budget = find_check(r, "stream", "fp_budget");
    const BudgetCheck* fwd = find_check(r, "stream", "forward_error");
    ASSERT_TRUE(budget && fwd);
    EXPECT_TRUE(budget->failed) << dtype_info(dt).name << " max ||x^_t|| / B^_t " << budget->max_ratio;
    EXPECT_TRUE(fwd->failed) << dtype_info(dt).name;
    EXPECT_FALSE(find_check(r, "oracle", "exact_budget")->failed);  // the oracle is not fooled
  }
}

TEST(PhBounds, GramDefectIsExactOnOrthogonalAndDetectsPerturbation) {
  // 0.6 and 0.8 are not doubles: the rotation is orthogonal up to about 1e-16.
  const std::vector<double> rot = {0.6, -0.8, 0.8, 0.6};
  EXPECT_LT(certified_gram_defect(rot, 2), 1e-15);
  const std::vector<double> bad = {1.0, 0.0, 0.0, 1.0 + 1e-6};  // C^T C - I = diag(0, 2e-6 + 1e-12)
  EXPECT_GT(certified_gram_defect(bad, 2), 2e-6);
  EXPECT_LT(certified_gram_defect(bad, 2), 2.1e-6);
}

TEST(PhCli, BadOptionsGiveOneLineAndExit2) {
  for (const std::string args : {"--width 1", "--width 257", "--depths 0", "--depths 301", "--h 0", "--h -1", "--h nan",
                                 "--gain 0", "--dtypes f8", "--cases -1", "--threads 100000", "--threads 0"}) {
    const auto r = run_cli("norm-budget " + args + " --out " + (scratch() / "b.json").string());
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("normcheck: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
}

TEST(PhCli, SmallGrowthTableWritesReport) {
  const auto out = scratch() / "nb.json";
  const auto r = run_cli("norm-budget --dtypes f32,bf16 --depths 4,8 --width 8 --cases 1 --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(slurp(out));
  const auto& s = j["port_hamiltonian"];
  EXPECT_TRUE(s["passed"].get<bool>());
  EXPECT_EQ(s["growth"]["rows"].size(), 10u);  // five streams x two dtypes
  EXPECT_EQ(s["cases_done"].get<int64_t>(), s["cases_planned"].get<int64_t>());
  for (const auto& rec : s["records"]) EXPECT_EQ(rec["op"], "port_hamiltonian");
}

TEST(Growth, TheRescaledPlainStreamIsThePlainOneAndOutlivesItsOverflow) {
  // Rescaling by a power of two after every step is exact and the branch is positively homogeneous:
  // in f32 and f64 the rescaled stream's growth equals the plain stream's bit for bit while the
  // plain one is finite, and it stays finite (within 1 % of the reference) where the plain one
  // overflows (f32 at depth 255, f16 at 30).
  GrowthConfig cfg;
  cfg.depths = {24, 120, 240, 300};
  for (DType dt : {DType::f32, DType::f64, DType::f16}) {
    BudgetCaseResult ph;
    const std::vector<GrowthRow> rows = run_growth(cfg, dt, ph);
    const auto row = [&](const char* arch) {
      for (const GrowthRow& r : rows)
        if (r.arch == arch) return r;
      ADD_FAILURE() << arch;
      return GrowthRow{};
    };
    const GrowthRow plain = row("plain_residual"), rescaled = row("plain_residual_rescaled");
    EXPECT_EQ(rescaled.overflow_depth, -1) << dtype_info(dt).name;
    for (size_t d = 0; d < cfg.depths.size(); ++d) {
      EXPECT_EQ(rescaled.oracle_ratio[d], plain.oracle_ratio[d]);  // the same exact stream
      EXPECT_NEAR(rescaled.kernel_ratio[d] / rescaled.oracle_ratio[d], 1.0, 0.01) << dtype_info(dt).name << " depth " << cfg.depths[d];
      const bool plain_finite = plain.overflow_depth < 0 || cfg.depths[d] < plain.overflow_depth;
      if (dt != DType::f16 && plain_finite) {
        EXPECT_EQ(rescaled.kernel_ratio[d], plain.kernel_ratio[d]) << dtype_info(dt).name << " " << cfg.depths[d];
      }
      if (!plain_finite) {
        EXPECT_FALSE(std::isfinite(plain.kernel_ratio[d]));
      }
    }
  }
}

// ---- The backward stream (docs/bounds.md section 14.7) ----

RC_GTEST_PROP(PhBackward, GradientBudgetPortBoundAndBackwardErrorHoldInEveryDtype, ()) {
  Rng rng(*rc::gen::arbitrary<uint64_t>());
  const DType dt = kDtypes[rng.range(0, 3)];
  BudgetCaseOptions o;
  o.forward = false;
  const PhCase c = make_ph_case(dt, rng.log_range(2, 24), rng.log_range(1, 40), random_h(rng, dt), rng.next());
  const BudgetCaseResult r = run_budget_case(c, o);
  for (const BudgetCheck& k : r.checks) {
    RC_LOG() << dtype_info(dt).name << " n " << c.n << " L " << c.depth << " h " << c.h << " " << k.variant << "/" << k.property
             << " value " << k.max_value << " bound " << k.max_bound << " ratio " << k.max_ratio << (k.failed ? " FAILED" : "") << "\n";
    RC_ASSERT(!k.failed);
    RC_ASSERT(k.uncertified == 0);
  }
  RC_ASSERT(find_check(r, "stream_vjp", "backward_error")->acc.count() == c.n);
  RC_ASSERT(find_check(r, "stream_vjp", "fp_grad_budget") != nullptr);
  RC_ASSERT(find_check(r, "stream_vjp", "port_grad_budget") != nullptr);
  RC_ASSERT(find_check(r, "oracle", "exact_grad_budget") != nullptr);
  RC_ASSERT(find_check(r, "stream", "fp_budget") == nullptr);  // forward off: only the backward ran
  // Backward decay, certified: ||g_t|| never exceeds ||g_L||.
  for (size_t t = 0; t + 1 < r.grad_oracle_norms.size(); ++t) RC_ASSERT(r.grad_oracle_norms[t] <= r.grad_oracle_norms.back());
}

TEST(PhBackward, TheBackwardStreamIsTheAdjointOfTheForwardOne) {
  // For the affine stream x_L = J x_0 + c: <g_L, x_L(x_0) - x_L(0)> = <J^T g_L, x_0> = <g_0, x_0>, with
  // x_L from the certified forward oracle and g_0 from the certified backward one (f64: both to
  // 1e-3 ULP). A backward stream with C instead of C^T would miss by O(1).
  for (const int64_t n : {3, 8, 17}) {
    PhCase c = make_ph_case(DType::f64, n, 9, 0.75, 400 + static_cast<uint64_t>(n));
    const oracle::CertifiedPhStream with_x0 = oracle::certified_ph_stream(c);
    PhCase zero = c;
    zero.x0.assign(zero.x0.size(), 0.0);
    const oracle::CertifiedPhStream without = oracle::certified_ph_stream(zero);
    const oracle::CertifiedPhBackward back = oracle::certified_ph_backward(c);
    ASSERT_TRUE(back.certified);
    const std::vector<double> gL = ph_cotangent(c);
    double lhs = 0, rhs = 0, scale = 0;
    for (int64_t i = 0; i < n; ++i) {
      lhs += gL[i] * (with_x0.x_final[i].approx() - without.x_final[i].approx());
      rhs += back.grad_x0[i].approx() * c.x0[i];
      scale += std::fabs(gL[i] * with_x0.x_final[i].approx()) + std::fabs(back.grad_x0[i].approx() * c.x0[i]);
    }
    EXPECT_NEAR(lhs, rhs, 1e-13 * scale) << "n " << n;
    EXPECT_GT(std::fabs(rhs), 1e-6 * scale) << "n " << n;  // not a vacuous 0 = 0
  }
}

TEST(PhPlanted, AnUntransposedVjpSlipsThroughEveryBudgetButNotTheOracle) {
  // C instead of C^T: still orthogonal, so every norm budget holds; only the certified backward
  // stream sees that the gradient points the wrong way.
  for (DType dt : kDtypes) {
    BudgetCaseOptions o;
    o.forward = false;
    o.step_vjp = "ph_step_vjp_untransposed";
    const BudgetCaseResult r = run_budget_case(make_ph_case(dt, 16, 3, 1.5, 9), o);
    const BudgetCheck* err = find_check(r, "stream_vjp", "backward_error");
    ASSERT_TRUE(err);
    EXPECT_TRUE(err->failed) << dtype_info(dt).name << " ||g^_0 - g_0|| / e_0 " << err->max_ratio;
    std::printf("%s: untransposed VJP ||g^_0 - g_0|| / e_0 = %.3g, %lld of %lld elements beyond e_0\n", std::string(dtype_info(dt).name).c_str(),
                err->max_ratio, static_cast<long long>(err->acc.bound_violations()), static_cast<long long>(err->acc.count()));
    EXPECT_GT(err->acc.bound_violations(), 0) << dtype_info(dt).name;
    EXPECT_FALSE(find_check(r, "stream_vjp", "fp_grad_budget")->failed) << dtype_info(dt).name;
    EXPECT_FALSE(find_check(r, "oracle", "exact_grad_budget")->failed);
  }
}

TEST(PhPlanted, AResidualLeakInTheVjpBreaksTheGradientBudgetInEveryDtype) {
  for (DType dt : kDtypes) {
    BudgetCaseOptions o;
    o.forward = false;
    o.step_vjp = "ph_step_vjp_residual_leak";
    const BudgetCaseResult r = run_budget_case(make_ph_case(dt, 16, 24, 0.25, 8), o);
    const BudgetCheck* budget = find_check(r, "stream_vjp", "fp_grad_budget");
    ASSERT_TRUE(budget);
    EXPECT_TRUE(budget->failed) << dtype_info(dt).name << " max ||g^_t|| / G^_t " << budget->max_ratio;
    EXPECT_TRUE(find_check(r, "stream_vjp", "backward_error")->failed) << dtype_info(dt).name;
    EXPECT_FALSE(find_check(r, "oracle", "exact_grad_budget")->failed);  // the oracle is not fooled
  }
}

TEST(Growth, TheGradientColumnMatchesItsReferencesAndThePortHamiltonianGradientDecays) {
  // f64 VJP kernels against the 168-bit references (LayerNorm and relu graphs transposed by hand
  // in both): the ratios agree to 1e-9 where finite; the port-Hamiltonian gradient never grows
  // (certified backward decay), the plain residual's grows like its forward.
  GrowthConfig cfg;
  cfg.depths = {6, 24, 60};
  BudgetCaseResult ph;
  for (DType dt : {DType::f64, DType::f32}) {
    const std::vector<GrowthRow> rows = run_growth(cfg, dt, ph);
    ASSERT_EQ(rows.size(), 5u);
    for (const GrowthRow& r : rows) {
      ASSERT_EQ(r.grad_kernel_ratio.size(), cfg.depths.size()) << r.arch;
      for (size_t d = 0; d < cfg.depths.size(); ++d) {
        const double rel = dt == DType::f64 ? 1e-9 : 2e-2;
        EXPECT_NEAR(r.grad_kernel_ratio[d] / r.grad_oracle_ratio[d], 1.0, rel) << dtype_info(dt).name << " " << r.arch << " depth " << cfg.depths[d];
        if (r.arch == "port_hamiltonian") {
          EXPECT_LE(r.grad_oracle_ratio[d], 1.0);
        }
        if (r.arch == "plain_residual" && cfg.depths[d] >= 24) {
          EXPECT_GT(r.grad_oracle_ratio[d], 100.0);
        }
      }
    }
  }
}
