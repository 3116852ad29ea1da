// The LayerNorm JVP: the certified oracle, the sound kernel within LN-JVP-TWOPASS-SEQ on every row
// generator and dtype, a bound that is not vacuous, and planted slips caught.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernels/jvp_registry.hpp"
#include "oracles/certified_layernorm.hpp"
#include "generators/jvp_generators.hpp"
#include "report/jvp_report.hpp"
#include "suite/jvp_suite.hpp"

using namespace normcheck;

namespace {

const std::vector<DType> kDtypes = {DType::f16, DType::bf16, DType::f32, DType::f64};

JvpKernel builtin(const std::string& name) {
  return [name](const LayerNormCase& c, const LayerNormTangents& t) { return JvpOutputs{run_jvp_kernel(name, c, t), "", false}; };
}

}  // namespace

RC_GTEST_PROP(LayerNormJvp, TheTwoPassKernelIsWithinItsBoundOnEveryGeneratorAndDtype, ()) {
  const auto& gens = gen::jvp_generator_names();
  const std::string g = gens[*rc::gen::inRange<size_t>(0, gens.size())];
  const DType dt = kDtypes[*rc::gen::inRange<size_t>(0, 4)];
  const gen::JvpCase jc = gen::make_jvp_case(g, dt, *rc::gen::arbitrary<uint64_t>(), 1024);
  RC_ASSERT(!validate_tangents(jc.c, jc.t));
  const JvpJudgement j = judge_jvp("layernorm_jvp", jc.c, jc.t, {builtin("two_pass")}).at(0);
  RC_LOG() << g << " " << dtype_info(dt).name << " rows " << jc.c.rows << " n " << jc.c.n << " ratio " << j.du.acc.max_bound_ratio()
           << " worst " << j.du.worst.index << "\n";
  RC_ASSERT(j.certified);
  // every element judged, or accounted for (a bound void where the statistics may overflow, with no envelope)
  RC_ASSERT(j.du.acc.count() + j.du.acc.unjudged() == static_cast<int64_t>(jc.c.x.size()));
  // Rows whose statistics may overflow, or whose eps vanishes against a rounded-nonzero spread
  // (constant rows with tiny eps), have void bounds; ordinary rows never do.
  if (g == "normal" && jc.c.n > 1) RC_ASSERT(j.du.acc.count() == static_cast<int64_t>(jc.c.x.size()));
  RC_ASSERT(!j.du.failed);
}

TEST(LayerNormJvp, TheOracleAgreesWithADifferenceQuotientOfTheCertifiedForward) {
  // du is the derivative of y(x + h tx, gamma + h tg, beta + h tb) at h = 0: compare with a central
  // difference of the certified forward at h = 2^-20 (error O(h^2) relative to the scale of y).
  const gen::JvpCase jc = gen::make_jvp_case("normal", DType::f64, 7, 256);
  const oracle::CertifiedLayerNormJvp ref = oracle::certified_layernorm_jvp(jc.c, jc.t);
  ASSERT_TRUE(ref.certified);
  const double h = 0x1p-20;
  LayerNormCase plus = jc.c, minus = jc.c;
  for (size_t k = 0; k < plus.x.size(); ++k) {
    plus.x[k] += h * jc.t.dx[k];
    minus.x[k] -= h * jc.t.dx[k];
  }
  for (int64_t j = 0; j < plus.n; ++j) {
    plus.gamma[j] += h * jc.t.dgamma[j];
    minus.gamma[j] -= h * jc.t.dgamma[j];
    plus.beta[j] += h * jc.t.dbeta[j];
    minus.beta[j] -= h * jc.t.dbeta[j];
  }
  const auto yp = oracle::certified_layernorm(plus, false).y, ym = oracle::certified_layernorm(minus, false).y;
  double worst = 0;
  for (size_t k = 0; k < ref.du.size(); ++k)
    worst = std::max(worst, std::fabs((yp[k].approx() - ym[k].approx()) / (2 * h) - ref.du[k].approx()) / (1 + std::fabs(ref.du[k].approx())));
  EXPECT_LT(worst, 1e-6);
}

TEST(LayerNormJvp, TheBoundIsNotVacuousAndThePlantedUncentredKernelIsFlaggedInEveryDtype) {
  for (DType dt : kDtypes) {
    double best = 0;
    int flagged = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const gen::JvpCase jc = gen::make_jvp_case("normal", dt, seed, 1024);
      const auto j = judge_jvp("layernorm_jvp", jc.c, jc.t, {builtin("two_pass"), builtin("uncentred")});
      EXPECT_FALSE(j[0].du.failed) << dtype_info(dt).name << " seed " << seed;
      best = std::max(best, j[0].du.acc.max_bound_ratio());
      flagged += j[1].du.failed;
    }
    EXPECT_GT(best, dt == DType::f64 || dt == DType::f32 ? 0.02 : 0.3) << dtype_info(dt).name;
    EXPECT_EQ(flagged, 4) << dtype_info(dt).name;
  }
}

TEST(LayerNormJvp, AMissingTangentTermIsCaught) {
  // A kernel that forgets z dgamma (the scale's tangent) or dbeta: far outside the bound.
  for (DType dt : {DType::bf16, DType::f32}) {
    const gen::JvpCase jc = gen::make_jvp_case("normal", dt, 3, 512);
    const auto drop = [](bool dgamma) {
      return [dgamma](const LayerNormCase& c, const LayerNormTangents& t) {
        LayerNormTangents u = t;
        if (dgamma) std::fill(u.dgamma.begin(), u.dgamma.end(), 0.0);
        else std::fill(u.dbeta.begin(), u.dbeta.end(), 0.0);
        return JvpOutputs{run_jvp_kernel("two_pass", c, u), "", false};
      };
    };
    const auto j = judge_jvp("layernorm_jvp", jc.c, jc.t, {drop(true), drop(false)});
    EXPECT_TRUE(j[0].du.failed) << dtype_info(dt).name;
    EXPECT_TRUE(j[1].du.failed) << dtype_info(dt).name;
  }
}

TEST(LayerNormJvp, TheSuitePlansEveryKernelDtypeAndGeneratorAndPasses) {
  JvpSuiteConfig cfg;
  cfg.dtypes = kDtypes;
  cfg.generators = gen::jvp_generator_names();
  cfg.cases_per_generator = 1;
  cfg.max_elements = 512;
  cfg.threads = 2;
  const JvpSuiteResult r = run_jvp_suite(cfg);
  EXPECT_EQ(r.records.size(), kDtypes.size() * cfg.generators.size() * 2);  // two_pass and uncentred
  EXPECT_EQ(r.cases_done, static_cast<int64_t>(kDtypes.size() * cfg.generators.size()));
  EXPECT_TRUE(jvp_suite_passed(r));
  const auto j = jvp_suite_json(cfg, r, "/tmp/jvp.json");
  EXPECT_EQ(j.at("records").at(0).at("bound_id").get<std::string>().rfind("LN-JVP-TWOPASS-SEQ[f16/f32]", 0), 0u);
}
