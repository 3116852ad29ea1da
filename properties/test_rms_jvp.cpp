// The RMSNorm JVP (issue 20): the certified oracle, the sound kernel within RMS-JVP-SEQ on every row
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

RC_GTEST_PROP(RmsNormJvp, TheKernelIsWithinItsBoundOnEveryGeneratorAndDtype, ()) {
  const auto& gens = gen::jvp_generator_names();
  const std::string g = gens[*rc::gen::inRange<size_t>(0, gens.size())];
  const DType dt = kDtypes[*rc::gen::inRange<size_t>(0, 4)];
  const gen::JvpCase jc = gen::make_jvp_case(g, dt, *rc::gen::arbitrary<uint64_t>(), 1024);
  const JvpJudgement j = judge_jvp("rmsnorm_jvp", jc.c, jc.t, {builtin("rms")}).at(0);
  RC_LOG() << g << " " << dtype_info(dt).name << " rows " << jc.c.rows << " n " << jc.c.n << " ratio " << j.du.acc.max_bound_ratio()
           << " worst " << j.du.worst.index << "\n";
  RC_ASSERT(j.certified);
  // every element judged, or accounted for (a bound void where the sum of squares may overflow)
  RC_ASSERT(j.du.acc.count() + j.du.acc.unjudged() == static_cast<int64_t>(jc.c.x.size()));
  if (g == "normal") RC_ASSERT(j.du.acc.count() == static_cast<int64_t>(jc.c.x.size()));
  RC_ASSERT(!j.du.failed);
}

TEST(RmsNormJvp, TheOracleAgreesWithADifferenceQuotientOfTheCertifiedForward) {
  // du is the derivative of y(x + h tx, gamma + h tg) at h = 0 (RMSNorm has no beta): a central
  // difference of the certified RMSNorm forward at h = 2^-20.
  const gen::JvpCase jc = gen::make_jvp_case("normal", DType::f64, 7, 256);
  const oracle::CertifiedLayerNormJvp ref = oracle::certified_rmsnorm_jvp(jc.c, jc.t);
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
  }
  const auto yp = oracle::certified_rmsnorm(plus, false).y, ym = oracle::certified_rmsnorm(minus, false).y;
  double worst = 0;
  for (size_t k = 0; k < ref.du.size(); ++k)
    worst = std::max(worst, std::fabs((yp[k].approx() - ym[k].approx()) / (2 * h) - ref.du[k].approx()) / (1 + std::fabs(ref.du[k].approx())));
  EXPECT_LT(worst, 1e-6);
  // and it is not the LayerNorm JVP of the same case
  const oracle::CertifiedLayerNormJvp ln = oracle::certified_layernorm_jvp(jc.c, jc.t);
  EXPECT_GT(std::fabs(ln.du[0].approx() - ref.du[0].approx()), 1e-3);
}

TEST(RmsNormJvp, TheBoundIsNotVacuousAndThePlantedRConstantKernelIsFlaggedInEveryDtype) {
  for (DType dt : kDtypes) {
    double best = 0;
    int flagged = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const gen::JvpCase jc = gen::make_jvp_case("normal", dt, seed, 1024);
      const auto j = judge_jvp("rmsnorm_jvp", jc.c, jc.t, {builtin("rms"), builtin("r_constant")});
      EXPECT_FALSE(j[0].du.failed) << dtype_info(dt).name << " seed " << seed;
      best = std::max(best, j[0].du.acc.max_bound_ratio());
      flagged += j[1].du.failed;
    }
    EXPECT_GT(best, dt == DType::f64 || dt == DType::f32 ? 0.02 : 0.1) << dtype_info(dt).name;
    EXPECT_EQ(flagged, 4) << dtype_info(dt).name;
  }
}

TEST(RmsNormJvp, AMissingScaleTangentIsCaught) {
  for (DType dt : {DType::bf16, DType::f32}) {
    const gen::JvpCase jc = gen::make_jvp_case("normal", dt, 3, 512);
    const JvpKernel no_dgamma = [](const LayerNormCase& c, const LayerNormTangents& t) {
      LayerNormTangents u = t;
      std::fill(u.dgamma.begin(), u.dgamma.end(), 0.0);
      return JvpOutputs{run_jvp_kernel("rms", c, u), "", false};
    };
    EXPECT_TRUE(judge_jvp("rmsnorm_jvp", jc.c, jc.t, {no_dgamma}).at(0).du.failed) << dtype_info(dt).name;
    // the LayerNorm JVP kernel is not an RMSNorm JVP kernel
    EXPECT_TRUE(judge_jvp("rmsnorm_jvp", jc.c, jc.t, {builtin("two_pass")}).at(0).du.failed) << dtype_info(dt).name;
  }
}

TEST(RmsNormJvp, TheSuitePlansItsOwnKernelsAndPasses) {
  JvpSuiteConfig cfg;
  cfg.op = "rmsnorm_jvp";
  cfg.dtypes = kDtypes;
  cfg.generators = gen::jvp_generator_names();
  cfg.cases_per_generator = 1;
  cfg.max_elements = 512;
  cfg.threads = 2;
  const JvpSuiteResult r = run_jvp_suite(cfg);
  EXPECT_EQ(r.records.size(), kDtypes.size() * cfg.generators.size() * 2);  // rms and r_constant
  EXPECT_TRUE(std::all_of(r.records.begin(), r.records.end(), [](const JvpRecord& x) { return x.kernel == "rms" || x.kernel == "r_constant"; }));
  EXPECT_TRUE(jvp_suite_passed(r));
  const auto j = jvp_suite_json(cfg, r, "/tmp/rms_jvp.json");
  EXPECT_EQ(j.at("records").at(0).at("op").get<std::string>(), "rmsnorm_jvp");
  EXPECT_EQ(j.at("records").at(0).at("bound_id").get<std::string>().rfind("RMS-JVP-SEQ[f16/f32]", 0), 0u);
  EXPECT_NE(j.at("records").at(0).at("worst_case").at("replay").get<std::string>().find("--rms-jvp-record 0"), std::string::npos);
}
