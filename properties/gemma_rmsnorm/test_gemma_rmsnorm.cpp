// Gemma's RMSNorm (y = x r (1 + w)): the oracle against an independent MPFR evaluation of the exact
// formula, the sound kernel within its bounds everywhere, the known-weak and planted kernels caught.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <string>

#include "bounds/tolerance_table.hpp"
#include "properties/cli_harness.hpp"
#include "report/schema_check.hpp"
#include "generators/generators.hpp"
#include "ops/gemma_rmsnorm/gemma_rmsnorm.hpp"
#include "ops/op_kernels.hpp"
#include "oracles/gain_split.hpp"
#include "suite/judge.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"

namespace normcheck {
namespace {

constexpr mpfr_prec_t kBits = 3000;  // 1 + w of any two doubles and every sum here are exact or far below 1e-3 ULP

struct Mp {
  mpfr_t v;
  Mp() { mpfr_init2(v, kBits); mpfr_set_zero(v, 1); }
  explicit Mp(double d) { mpfr_init2(v, kBits); mpfr_set_d(v, d, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
};

/// The exact value (to 3000 bits) lies in the certified enclosure (hi + lo -+ rad) 2^scale.
::testing::AssertionResult encloses(const CertifiedValue& c, const mpfr_t exact, const std::string& what) {
  Mp mid(c.hi), d;
  mpfr_add_d(mid.v, mid.v, c.lo, MPFR_RNDN);
  mpfr_mul_2si(mid.v, mid.v, c.scale, MPFR_RNDN);
  mpfr_sub(d.v, exact, mid.v, MPFR_RNDN);
  mpfr_abs(d.v, d.v, MPFR_RNDN);
  Mp rad(c.rad);
  mpfr_mul_2si(rad.v, rad.v, c.scale, MPFR_RNDN);
  mpfr_mul_d(rad.v, rad.v, 1 + 0x1p-40, MPFR_RNDU);  // the slack of the comparison's own roundings
  if (mpfr_cmp(d.v, rad.v) <= 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": the exact value " << mpfr_get_d(exact, MPFR_RNDN) << " is outside "
                                       << c.approx() << " -+ " << c.rad;
}

/// y, dx and dw of Gemma's RMSNorm from the formula, in MPFR, row by row, checked against the oracle.
void check_against_mpfr(const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref) {
  const int64_t n = c.n;
  std::vector<Mp> dw(static_cast<size_t>(n));
  for (int64_t i = 0; i < c.rows; ++i) {
    Mp ss, t, r, mean_vz, x, g, z, v;
    for (int64_t j = 0; j < n; ++j) {
      mpfr_set_d(x.v, c.x[i * n + j], MPFR_RNDN);
      mpfr_fma(ss.v, x.v, x.v, ss.v, MPFR_RNDN);
    }
    mpfr_div_si(t.v, ss.v, n, MPFR_RNDN);
    mpfr_add_d(t.v, t.v, c.eps, MPFR_RNDN);
    mpfr_rec_sqrt(r.v, t.v, MPFR_RNDN);
    for (int64_t j = 0; j < n; ++j) {  // mean(v z), v = (1 + w) dy
      mpfr_set_d(g.v, c.gamma[j], MPFR_RNDN);
      mpfr_add_si(g.v, g.v, 1, MPFR_RNDN);
      mpfr_mul_d(z.v, r.v, c.x[i * n + j], MPFR_RNDN);
      mpfr_mul_d(v.v, g.v, c.dy[i * n + j], MPFR_RNDN);
      mpfr_fma(mean_vz.v, v.v, z.v, mean_vz.v, MPFR_RNDN);
    }
    mpfr_div_si(mean_vz.v, mean_vz.v, n, MPFR_RNDN);
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(i * n + j);
      Mp y, dx;
      mpfr_set_d(g.v, c.gamma[j], MPFR_RNDN);
      mpfr_add_si(g.v, g.v, 1, MPFR_RNDN);
      mpfr_mul_d(z.v, r.v, c.x[k], MPFR_RNDN);
      mpfr_mul(y.v, z.v, g.v, MPFR_RNDN);
      ASSERT_TRUE(encloses(ref.y[k], y.v, "y[" + std::to_string(k) + "]"));
      mpfr_mul_d(v.v, g.v, c.dy[k], MPFR_RNDN);
      mpfr_mul(dx.v, z.v, mean_vz.v, MPFR_RNDN);
      mpfr_sub(dx.v, v.v, dx.v, MPFR_RNDN);
      mpfr_mul(dx.v, dx.v, r.v, MPFR_RNDN);
      ASSERT_TRUE(encloses(ref.dx[k], dx.v, "dx[" + std::to_string(k) + "]"));
      Mp p;
      mpfr_mul_d(p.v, z.v, c.dy[k], MPFR_RNDN);
      mpfr_add(dw[static_cast<size_t>(j)].v, dw[static_cast<size_t>(j)].v, p.v, MPFR_RNDN);
    }
  }
  for (int64_t j = 0; j < n; ++j) ASSERT_TRUE(encloses(ref.dgamma[static_cast<size_t>(j)], dw[static_cast<size_t>(j)].v, "dw"));
}

/// Cases whose 1 + w is not a double (f64 weights, tiny bf16/f32 weights) as well as ordinary ones.
TEST(GemmaRmsNorm, TheOracleEnclosesTheExactFormulaWhereOnePlusWIsNotADouble) {
  int split = 0;
  for (DType dt : {DType::f64, DType::bf16, DType::f32})
    for (const char* generator : {"normal", "log_uniform", "subnormal", "near_max"}) {
      LayerNormCase c = gen::make_layernorm_case(generator, dt, 11, {3, 48, 256});
      if (dt == DType::bf16) c.gamma[0] = 0x1p-60;  // 1 + 2^-60: 61 bits
      const oracle::CertifiedLayerNorm ref = gemma_rmsnorm_reference(c, true);
      EXPECT_TRUE(ref.certified) << generator << " " << dtype_info(dt).name;
      split += oracle::split_unit_offset_gain(c.gamma).exact_in_double() ? 0 : 1;
      SCOPED_TRACE(std::string(generator) + " " + std::string(dtype_info(dt).name));
      check_against_mpfr(c, ref);
    }
  EXPECT_GE(split, 4);  // the hi + lo path ran, not only the double-gain one
}

/// Judges every built-in kernel of the family on every row generator and dtype.
struct FamilyTally {
  int judged = 0, verdict_failed = 0, own_failed = 0;
};
FamilyTally judge_family(std::string_view variant, DType dt, int cases) {
  FamilyTally t;
  for (const std::string& generator : gen::row_generator_names())
    for (int s = 0; s < cases && generator != gen::kCorpusGenerator; ++s) {
      const LayerNormCase c = gen::make_layernorm_case(generator, dt, 100 + s, {4, 64, 512});
      const oracle::CertifiedLayerNorm ref = certified_reference(Op::gemma_rmsnorm_forward, c, true);
      for (Op op : {Op::gemma_rmsnorm_forward, Op::gemma_rmsnorm_backward}) {
        const KernelEntry* k = find_kernel(op, variant, dt);
        if (!k) continue;
        for (const OutputJudgement& j : judge_case(*k, c, ref)) {
          ++t.judged;
          t.verdict_failed += j.failed ? 1 : 0;
          t.own_failed += j.own_failed ? 1 : 0;
          EXPECT_FALSE(j.own_failed) << variant << " " << op_name(op) << "/" << j.output << " " << generator << " seed " << 100 + s
                                     << ": element " << j.worst.index << " kernel " << j.worst.got << " bound " << j.worst.bound;
        }
      }
    }
  return t;
}

TEST(GemmaRmsNorm, TheSoundKernelIsWithinItsBoundOnEveryGeneratorAndDtype) {
  for (DType dt : dtype_ids()) {
    const FamilyTally t = judge_family("gemma_rms", dt, 2);
    EXPECT_GT(t.judged, 0);
    EXPECT_EQ(t.verdict_failed, 0) << dtype_info(dt).name;
  }
}

TEST(GemmaRmsNorm, TheGainRoundedToStorageHoldsItsOwnBoundAndIsFlaggedInBf16AndF16) {
  for (DType dt : {DType::bf16, DType::f16}) {
    const FamilyTally t = judge_family("gemma_gain_storage", dt, 2);
    EXPECT_GT(t.judged, 0);
    EXPECT_GT(t.verdict_failed, 0) << dtype_info(dt).name << ": the storage-rounded gain was not caught";
  }
  EXPECT_EQ(find_kernel(Op::gemma_rmsnorm_forward, "gemma_gain_storage", DType::f32), nullptr);  // f32 storage is the accumulator
}

TEST(GemmaRmsNorm, PlainRmsNormJudgedAsGemmaIsCaughtInEveryDtype) {
  for (DType dt : dtype_ids()) {
    KernelEntry forgot_the_one = *find_kernel(Op::rmsnorm_forward, "rms", dt);  // y = x r w: the + 1 forgotten
    forgot_the_one.op = Op::gemma_rmsnorm_forward;
    const LayerNormCase c = gen::make_layernorm_case("normal", dt, 5, {4, 64, 256});
    const auto ref = certified_reference(Op::gemma_rmsnorm_forward, c, false);
    const std::vector<OutputJudgement> j = judge_case(forgot_the_one, c, ref);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_TRUE(j[0].failed) << dtype_info(dt).name;
  }
}

TEST(GemmaRmsNorm, TheOpIsOneSpecRowOneFamilyRowAndItsOwnFolder) {
  const OpSpec& s = op_spec(Op::gemma_rmsnorm_backward);
  EXPECT_EQ(s.family, OpFamily::gemma_rmsnorm);
  EXPECT_EQ(s.abi_op, -1);  // not in the plugin ABI: serve, exec and Python only
  EXPECT_FALSE(s.in_suites);
  EXPECT_EQ(op_outputs(Op::gemma_rmsnorm_backward), (std::vector<std::string>{"dx", "dgamma"}));
  EXPECT_EQ(bound_label(own_bound_model(tolerance_for(*find_kernel(Op::gemma_rmsnorm_forward, "gemma_rms", DType::bf16)),
                                        *find_kernel(Op::gemma_rmsnorm_forward, "gemma_rms", DType::bf16))),
            bound_label(BoundModel{StatsModel::rms, DType::bf16, DType::f32, SumOrder::sequential, -1, kRmsGainOffset}));
  // The runner judges it through the family table: a run of the two ops alone passes.
  RunConfig cfg = *suite_config("quick");
  cfg.ops = {Op::gemma_rmsnorm_forward, Op::gemma_rmsnorm_backward};
  cfg.dtypes = {DType::bf16, DType::f64};
  cfg.generators = {"normal", "large_mean"};
  cfg.variants = {"gemma_rms"};
  cfg.cases_per_generator = 2;
  const RunResult r = run_suite(cfg);
  EXPECT_EQ(r.records.size(), 2u * 2u * 3u);  // dtypes x generators x outputs (y; dx, dgamma)
  EXPECT_TRUE(records_passed(r));
  for (const Record& rec : r.records) {
    EXPECT_GT(rec.cases, 0) << rec.key.property;
    EXPECT_FALSE(rec.failed() || rec.own_failed_cases > 0)
        << op_name(rec.key.op) << "/" << rec.key.output << " " << dtype_info(rec.key.storage).name << " " << rec.key.property << ": "
        << rec.failed_cases << " failed, " << rec.own_failed_cases << " own-failed of " << rec.cases << "; worst seed " << rec.worst.case_seed
        << " element " << rec.worst.element.index << " kernel " << rec.worst.element.got << " bound " << rec.worst.element.bound
        << (rec.first_kernel_failure.empty() ? "" : "; kernel failure " + rec.first_kernel_failure);
  }
}

TEST(GemmaRmsNorm, RunWritesASchemaValidReportFlagsTheWeakGainAndReplaysARecord) {
  const std::string report = (scratch() / "gemma.json").string();
  const Outcome o = run_cli("run --suite quick --ops gemma_rmsnorm_forward,gemma_rmsnorm_backward --dtypes bf16,f64 --threads 2 --out " + report);
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const nlohmann::json r = read_report_file(report);  // checked against the compiled-in schema
  int sound = 0, flagged = 0;
  for (const auto& rec : r.at("records")) {
    const std::string variant = rec.at("variant").get<std::string>(), verdict = rec.at("verdict").get<std::string>();
    if (variant == "gemma_rms") sound += verdict == "pass" ? 1 : verdict == "uncertified" ? 0 : -1000;
    if (variant == "gemma_gain_storage" && verdict == "flagged") ++flagged;
  }
  EXPECT_GT(sound, 0);
  EXPECT_GT(flagged, 0);  // bf16 only: in f64 the storage is the accumulator
  const Outcome replay = run_cli("replay --report " + report + " --record 0");
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
}

}  // namespace
}  // namespace normcheck
