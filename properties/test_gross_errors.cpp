// No gross error passes where the a priori bound is void (issue 42, item 2): planted kernels that
// return an output of the wrong size where the bound used to be void must fail on the default suite's
// own cases, and the sound kernels they are planted in must not.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_kernels.hpp"
#include "kernels/jvp_registry.hpp"
#include "generators/generators.hpp"
#include "generators/jvp_generators.hpp"
#include "io/case_json.hpp"
#include "suite/judge.hpp"
#include "suite/jvp_suite.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"

using namespace normcheck;

namespace {

/// The default suite's per-op cases of one dtype, as `normcheck run --suite default` draws them.
std::vector<LayerNormCase> default_suite_cases(DType dt) {
  const RunConfig cfg = *suite_config("default");
  std::vector<LayerNormCase> out;
  for (size_t g = 0; g < cfg.generators.size(); ++g) {
    const std::string& name = cfg.generators[g];
    for (int64_t i = 0; i < gen::generator_case_count(name, dt, cfg.cases_per_generator); ++i) {
      const uint64_t seed = name == gen::kCorpusGenerator ? static_cast<uint64_t>(i) : case_seed(cfg.seed, dt, g, i);
      out.push_back(gen::make_layernorm_case(name, dt, seed, cfg.shape));
    }
  }
  return out;
}

/// `base` with its outputs rewritten by `plant` (which may change them only on some rows).
KernelEntry planted(const KernelEntry& base, std::function<void(const LayerNormCase&, KernelOutputs&)> plant) {
  KernelEntry k = base;
  k.run = [base, plant](const LayerNormCase& c) {
    KernelOutputs o = base.run(c);
    plant(c, o);
    return o;
  };
  return k;
}

struct Caught {
  int planted_cases = 0, failed = 0, base_failed = 0;
};

/// Judges `k` and its sound base on every case where `applies` (the planted defect changes something).
Caught judge_on(const std::vector<LayerNormCase>& cases, const KernelEntry& base, const KernelEntry& k,
                const std::function<bool(const LayerNormCase&)>& applies) {
  Caught c;
  for (const LayerNormCase& lc : cases) {
    if (!applies(lc)) continue;
    ++c.planted_cases;
    const oracle::CertifiedLayerNorm ref = certified_reference(k.op, lc, is_backward(k.op));
    const auto failed = [&](const KernelEntry& e) {
      for (const OutputJudgement& j : judge_case(e, lc, ref))
        if (j.failed) return true;
      return false;
    };
    const bool caught = failed(k);
    c.failed += caught;
    c.base_failed += failed(base);
    if (!caught) {
      const OutputJudgement j = judge_case(k, lc, ref).front();
      ADD_FAILURE() << "not caught: generator " << lc.generator << " seed " << lc.seed << " shape " << lc.rows << "x" << lc.n
                    << " eps " << hexfloat(lc.eps) << " x[0] " << hexfloat(lc.x[0]) << " gamma[0] " << hexfloat(lc.gamma[0])
                    << " beta[0] " << hexfloat(lc.beta[0]) << "; worst " << j.worst.index << " got " << hexfloat(j.worst.got) << " exact "
                    << hexfloat(j.worst.ref.approx()) << " bound " << hexfloat(j.worst.bound) << " ratio " << j.acc.max_bound_ratio()
                    << " void " << j.acc.void_bounds();
    }
  }
  return c;
}

/// A row whose exact mean of squares is below eps / 16: its output is eps-dominated.
bool eps_dominated_row(const LayerNormCase& c, int64_t i) {
  double ms = 0;
  for (int64_t j = 0; j < c.n; ++j) ms += c.x[static_cast<size_t>(i * c.n + j)] * c.x[static_cast<size_t>(i * c.n + j)];
  return ms / static_cast<double>(c.n) < c.eps / 16;
}

}  // namespace

TEST(GrossErrors, ALayerNormReturningZeroInsteadOfBetaAtNEqualsOneFails) {
  // At n = 1 the exact output is beta whatever x; the |mu| margin of d's bound made it void on
  // rows of large |x| and the envelope accepted 0.
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    const KernelEntry& base = *find_kernel(Op::layernorm_forward, "two_pass", dt);
    const KernelEntry k = planted(base, [](const LayerNormCase& c, KernelOutputs& o) {
      if (c.n == 1) std::fill(o.y.begin(), o.y.end(), 0.0);
    });
    const auto applies = [](const LayerNormCase& c) {
      return c.n == 1 && std::any_of(c.beta.begin(), c.beta.end(), [](double b) { return b != 0; });
    };
    const Caught got = judge_on(default_suite_cases(dt), base, k, applies);
    ASSERT_GT(got.planted_cases, 0) << dtype_info(dt).name;
    EXPECT_EQ(got.failed, got.planted_cases) << dtype_info(dt).name;
    EXPECT_EQ(got.base_failed, 0) << dtype_info(dt).name;
  });
}

TEST(GrossErrors, AnRmsNormReturningZeroOnEpsDominatedRowsFails) {
  // eps near the dtype's largest value (the structured corpus): the overflow prediction read
  // fl(v + eps) as overflowing and voided the bound; the envelope, centred on 0, accepted y = 0.
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    const KernelEntry& base = *find_kernel(Op::rmsnorm_forward, "rms", dt);
    const KernelEntry k = planted(base, [](const LayerNormCase& c, KernelOutputs& o) {
      for (int64_t i = 0; i < c.rows; ++i)
        if (eps_dominated_row(c, i)) std::fill(o.y.begin() + i * c.n, o.y.begin() + (i + 1) * c.n, 0.0);
    });
    const auto applies = [](const LayerNormCase& c) {
      for (int64_t i = 0; i < c.rows; ++i)
        if (eps_dominated_row(c, i) && c.eps > 1e30) return true;
      return false;
    };
    // In f16 such rows' outputs (|x| / sqrt(eps) below 2^-40) round to 0: the planted kernel is right there.
    if (dt == DType::f16) return;
    const Caught got = judge_on(default_suite_cases(dt), base, k, applies);
    if (dt == DType::bf16 && got.planted_cases == 0) return;  // the bf16 corpus may hold no such row
    ASSERT_GT(got.planted_cases, 0) << dtype_info(dt).name;
    EXPECT_EQ(got.failed, got.planted_cases) << dtype_info(dt).name;
    EXPECT_EQ(got.base_failed, 0) << dtype_info(dt).name;
  });
}

TEST(GrossErrors, AJvpDroppingTheBetaTangentWhereTheBoundIsVoidFails) {
  // The JVPs had no envelope: an element with a void bound had no verdict, and a case whose every
  // element was void recorded "uncertified". The planted kernel drops dbeta on rows of
  // unresolved statistics (|mean| / spread >= 1e4) only.
  const JvpSuiteConfig cfg = *suite_jvp_config("default");
  int void_judged = 0, caught = 0, cases = 0;
  for (const DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64})
    for (size_t g = 0; g < cfg.generators.size(); ++g)
      for (int64_t i = 0; i < cfg.cases_per_generator; ++i) {
        const gen::JvpCase jc = gen::make_jvp_case(cfg.generators[g], dt, jvp_case_seed(cfg.seed, dt, g, i), cfg.max_elements);
        if (cfg.generators[g] != "large_mean_extreme") continue;
        ++cases;
        const JvpKernel drop = [](const LayerNormCase& c, const LayerNormTangents& t) {
          JvpOutputs o;
          o.du = run_jvp_kernel("two_pass", c, t);
          for (size_t k = 0; k < o.du.size(); ++k) o.du[k] = round_to_dtype(o.du[k] - t.dbeta[k % static_cast<size_t>(c.n)], c.dtype);
          return o;
        };
        const std::vector<JvpJudgement> j = judge_jvp("layernorm_jvp", jc.c, jc.t, {drop});
        void_judged += static_cast<int>(j.front().du.acc.void_bounds());
        caught += j.front().du.failed;
        EXPECT_EQ(j.front().du.acc.envelope_void(), 0) << "a JVP element without any verdict";
      }
  ASSERT_GT(cases, 0);
  EXPECT_GT(void_judged, 0);   // the rows where only the envelope judges
  EXPECT_GT(caught, 0) << "dropping the beta tangent on unresolved rows is never caught";
}
