// Every built-in kernel's own a priori bound, and the verdict of the sound ones, on binade-extreme
// rows (issue 42): subnormal, tiny, huge and near-maximal values mixed in one row, eps anywhere in
// binary64's range. A bound whose own double arithmetic underflows or overflows loses terms there;
// a sound kernel that then exceeds it, or returns Inf where the bound predicted no overflow, fails.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "ops/op_kernels.hpp"
#include "bounds/bounds_model.hpp"
#include "core/rng.hpp"
#include "properties/rc_generators.hpp"
#include "io/case_json.hpp"
#include "kernels/jvp_registry.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/jvp_suite.hpp"
#include "suite/judge.hpp"

using namespace normcheck;

namespace {

/// The case as hexfloats, for a failure message that replays without the generator.
std::string case_text(const LayerNormCase& c) {
  std::ostringstream s;
  s << "dtype " << dtype_info(c.dtype).name << " rows " << c.rows << " n " << c.n << " eps " << hexfloat(c.eps) << " seed "
    << c.seed;
  for (auto [v, name] : {std::pair{&c.x, "x"}, {&c.gamma, "gamma"}, {&c.beta, "beta"}, {&c.dy, "dy"}}) {
    s << "\n  " << name << " =";
    for (double e : *v) s << " " << hexfloat(e);
  }
  return s.str();
}

/// Whether every verdict violation of j is an infinity the kernel's own bound predicted (a void
/// bound in the overflow regime): docs/bounds.md section 5.4 fails those by design.
bool only_predicted_overflows(const OutputJudgement& j) {
  const int64_t overflowed_in_regime = j.acc.regime_count(1) - j.acc.overflow_survived();
  return !j.own_failed && j.acc.bound_violations() == j.acc.nonfinite_mismatches() &&
         j.acc.nonfinite_mismatches() <= overflowed_in_regime;
}

/// The first defect of any built-in kernel of `dt` on case c: an own-bound violation (any kernel),
/// or a verdict failure of a must-pass kernel that is not a predicted overflow.
std::string first_defect(const LayerNormCase& c) {
  for (int f = 0; f < kOpFamilies; ++f) {
    const oracle::CertifiedLayerNorm ref = certified_reference(op_of(family_at(f), OpDirection::forward), c, true);
    for (const KernelEntry& k : builtin_kernels()) {
      if (k.storage != c.dtype || op_family_index(k.op) != f) continue;
      const bool must_pass = tolerance_for(k).expectation == Expectation::must_pass;
      for (const OutputJudgement& j : judge_case(k, c, ref)) {
        const bool verdict_defect = must_pass && j.failed && !only_predicted_overflows(j);
        if (!j.own_failed && !verdict_defect) continue;
        std::ostringstream s;
        s << op_name(k.op) << "/" << j.output << " " << k.variant << (j.own_failed ? ": own bound violated" : ": verdict failed")
          << "; element " << j.worst.index << " kernel " << hexfloat(j.worst.got) << " oracle " << hexfloat(j.worst.ref.approx())
          << " bound " << hexfloat(j.worst.bound) << " ratio " << j.acc.max_bound_ratio() << " own ratio "
          << j.own.max_rigor_ratio() << "\n"
          << case_text(c);
        return s.str();
      }
    }
  }
  return "";
}

LayerNormCase f64_row(double eps, std::vector<double> x, std::vector<double> gamma, std::vector<double> beta) {
  LayerNormCase c;
  c.dtype = DType::f64;
  c.rows = 1;
  c.n = static_cast<int64_t>(x.size());
  c.eps = eps;
  c.x = std::move(x);
  c.gamma = std::move(gamma);
  c.beta = std::move(beta);
  c.dy.assign(c.x.size(), 1.0);
  return c;
}

rc::Gen<LayerNormCase> extreme_case(DType dt) {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<int64_t>(1, 5), rc::gen::inRange<int64_t>(1, 9), rc::gen::arbitrary<uint64_t>()),
                      [dt](const std::tuple<int64_t, int64_t, uint64_t>& t) {
                        const auto& [rows, n, seed] = t;
                        return gen::make_layernorm_case("binade_extreme", dt, seed, gen::ShapeRequest{rows, n, 64});
                      });
}

}  // namespace

TEST(BoundExtremes, EveryKernelWithinItsOwnBoundAndSoundVerdictsPassOnBinadeExtremeRows) {
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    // f64 data spans the whole double range, where the bounds' own arithmetic under- and overflows:
    // the classes found so far show after 1e3-1e4 cases (about 0.3 ms each).
    const int cases = dt == DType::f64 ? 3000 : 300;
    const bool ok = rcgen::check_cases(std::string(dtype_info(dt).name) + " bounds on binade-extreme rows", cases, [dt] {
      const LayerNormCase c = *extreme_case(dt);
      const std::string defect = first_defect(c);
      if (!defect.empty()) RC_FAIL(defect);
    });
    EXPECT_TRUE(ok) << dtype_info(dt).name;
  });
}

// The adversarial search's cases of issue 42 (section 1b), each a sound kernel failed by its bound.

TEST(BoundExtremes, TheForwardBoundKeepsTheZErrorTermWhenGammaTimesRUnderflows) {
  // |gamma_0| r = 2^-1021 2^-61 underflowed to 0 and the z-error term was lost: ratio 1.14.
  const LayerNormCase c = f64_row(1.0, {0x1p+60, 0x1p+60, 0x1.0000000000001p+61}, {0x1p-1021, 1, 1}, {0, 0, 0});
  EXPECT_EQ(first_defect(c), "");
}

TEST(BoundExtremes, TheForwardBoundPredictsAnOverflowItsOwnSumOverflows) {
  // t + e_t + |beta| overflowed to +inf in double and was read as "does not reach the limit": the
  // kernel's +inf met a finite bound where the exact value is finite.
  const LayerNormCase c = f64_row(1e-5, {-0x1.03914f3ee1be3p+14, -0x1.03914f3ee1be3p+14, -0x1.03914f3ee1be2p+14},
                                  {1, 1, 0x1p1010}, {0, 0, 0x1.ffffffffffdffp+1023});
  EXPECT_EQ(first_defect(c), "");
  const oracle::CertifiedLayerNorm ref = oracle::certified_layernorm(c, false);
  const TensorBound b = layernorm_forward_bound(c, ref, {StatsModel::two_pass, DType::f64, DType::f64});
  EXPECT_TRUE(b.regime[2] & kRegimeOverflow);
}

TEST(BoundExtremes, AVoidBoundWhoseEnvelopeReachesTheMaximumPredictsOverflow) {
  // Unresolved statistics (x, x - ulp, x) make the bound void; gamma near the maximum lets z_hat up to
  // sqrt(3) carry the output past it, and the sound kernel returned +inf: its envelope says it may.
  const LayerNormCase c = f64_row(0x1.02f3108475a92p-907, {0x1.9cf3ca7b11a31p-4, 0x1.9cf3ca7b11a3p-4, 0x1.9cf3ca7b11a31p-4},
                                  {0x1.4b9d787ba2455p-7, 0, 0x1.cdb3d7972f21dp+1023}, {0, 0, -0x1.5adbb0a08b6dep+1019});
  EXPECT_EQ(first_defect(c), "");
}

TEST(BoundExtremes, WelfordsEnvelopeKeepsTheWidthOfASubnormalRow) {
  // Halving +-2^-1074 gave 0: the row's width became 0 and the sound Welford kernel failed its
  // envelope by a ratio of 2e161.
  const LayerNormCase c = f64_row(0x1p-1074, {-0x1p-1074, 0x1p-1074}, {1, 1}, {0, 0});
  EXPECT_EQ(first_defect(c), "");
}

namespace {

/// Batch norm, dense N x 1 in f32, gamma 1, beta 0, running statistics (0, 1), momentum 0.1.
GroupedNormCase batch_norm_column(std::vector<double> x, std::vector<double> dy) {
  GroupedNormCase c;
  c.dtype = DType::f32;
  c.tensor = {audit::Layout::dense, {static_cast<int64_t>(x.size()), 1}};
  c.spec.kind = audit::NormKind::batch_norm;
  c.x = std::move(x);
  c.dy = std::move(dy);
  c.gamma = {1.0};
  c.beta = {0.0};
  c.running_mean = {0.0};
  c.running_var = {1.0};
  return c;
}

/// The grouped kernel's outputs that fail their verdict, except infinities the bound predicted.
std::vector<std::string> grouped_defects(const GroupedNormCase& c) {
  std::vector<std::string> out;
  for (const OutputJudgement& j : judge_grouped(c, run_grouped_kernel(c)).outputs)
    if (j.own_failed || (j.failed && !only_predicted_overflows(j))) out.push_back(j.output + " " + hexfloat(j.worst.got));
  return out;
}

}  // namespace

TEST(BoundExtremes, GroupedSumsOverRowsPredictTheirAccumulatorsOverflow) {
  // dbeta = sum of dy = 2^127 + 2^127 - ...: the f32 partial sum overflows to +inf (exact 0); the
  // bound never checked the accumulator's range.
  const GroupedNormCase c = batch_norm_column({1, -1, 1, -1}, {0x1p127, 0x1p127, -0x1p127, -0x1p127});
  ASSERT_EQ(validate_grouped_case(c), std::nullopt);
  EXPECT_EQ(grouped_defects(c), std::vector<std::string>{});
}

TEST(BoundExtremes, TheRunningStatisticsInheritTheirChannelsOverflow) {
  // The batch mean of (2^127, 2^127) overflows in the f32 sum: running_mean +inf against the exact
  // 0.1 * 2^127; the running-statistics bound ignored the channel's overflow flag.
  const GroupedNormCase c = batch_norm_column({0x1p127, 0x1p127}, {1, 1});
  ASSERT_EQ(validate_grouped_case(c), std::nullopt);
  EXPECT_EQ(grouped_defects(c), std::vector<std::string>{});
}

namespace {

/// The first defect of a sound built-in JVP kernel on case c along tangents from its own extreme
/// values (x tangent dy, gamma tangent beta, beta tangent gamma): own bound or verdict, as above.
std::string first_jvp_defect(const LayerNormCase& c) {
  const LayerNormTangents t{c.dy, c.beta, c.gamma};
  for (const JvpKernelInfo& k : jvp_kernels()) {
    if (k.known_weak) continue;
    const JvpKernel run = [&k](const LayerNormCase& kc, const LayerNormTangents& kt) {
      JvpOutputs o;
      o.du = run_jvp_kernel(k.name, kc, kt);
      return o;
    };
    for (const JvpJudgement& j : judge_jvp(k.op, c, t, {run}))
      if (j.du.own_failed || (j.du.failed && !only_predicted_overflows(j.du)))
        return k.op + " " + k.name + ": element " + std::to_string(j.du.worst.index) + " kernel " + hexfloat(j.du.worst.got) + " oracle " +
               hexfloat(j.du.worst.ref.approx()) + " bound " + hexfloat(j.du.worst.bound) + "\n" + case_text(c);
  }
  return "";
}

}  // namespace

TEST(BoundExtremes, SoundJvpKernelsWithinTheirBoundsOnBinadeExtremeRows) {
  for_each_dtype([](auto tag) {
    const DType dt = dtype_traits<decltype(tag)>::id;
    const int cases = dt == DType::f64 ? 1000 : 200;
    const bool ok = rcgen::check_cases(std::string(dtype_info(dt).name) + " JVP bounds on binade-extreme rows", cases, [dt] {
      const std::string defect = first_jvp_defect(*extreme_case(dt));
      if (!defect.empty()) RC_FAIL(defect);
    });
    EXPECT_TRUE(ok) << dtype_info(dt).name;
  });
}

namespace {

/// The exact-exponent product as docs/bounds.md section 1.4 states it, with the library's frexp:
/// mantissas multiplied in [1/2, 1), exponents added exactly, m 2^e rounded up at the end.
double scaled_up_by_ldexp(double m, int64_t e) {
  if (e > 1025) return std::numeric_limits<double>::infinity();
  if (e < -1074) return std::numeric_limits<double>::denorm_min();
  const double p = std::ldexp(m, static_cast<int>(e));
  return p >= 0x1p-1022 || std::ldexp(p, static_cast<int>(-e)) >= m ? p : std::nextafter(p, std::numeric_limits<double>::infinity());
}

double product_up_by_frexp(std::initializer_list<double> factors) {
  double m = 1;
  int64_t e = 0;
  for (const double f : factors) {
    const double a = std::fabs(f);
    if (a == 0) return 0.0;
    int ef = 0, em = 0;
    m = std::frexp(m * std::frexp(a, &ef), &em);
    e += ef + em;
  }
  return scaled_up_by_ldexp(m, e);
}

/// |a| / b for finite a and b > 0 with the exponents subtracted exactly, as section 1.4 states it.
double quotient_up_by_frexp(double a, double b) {
  const double q = std::fabs(a) / b;
  if (a == 0 || (q >= 0x1p-1022 && q <= std::numeric_limits<double>::max())) return q;
  int ea = 0, eb = 0;
  const double ma = std::frexp(std::fabs(a), &ea), mb = std::frexp(b, &eb);
  return scaled_up_by_ldexp(ma / mb, static_cast<int64_t>(ea) - eb);
}

}  // namespace

TEST(BoundExtremes, ProductsOutsideTheNormalRangeKeepTheirExactExponents) {
  // product_up and quotient_up take their exponents from the bits and scale by powers of two (no
  // library frexp or ldexp): the same values as the frexp/ldexp formulas, on finite factors from the
  // smallest subnormal to near the largest double and with the underflow allowance kEvalEta
  // (denorm_min) that the bounds multiply per element.
  Rng rng(0x1a);
  const auto factor = [&] {
    if (rng.range(0, 9) == 0) return bounds_detail::kEvalEta * static_cast<double>(rng.range(1, 1 << 20));  // subnormal
    return std::ldexp(1 + rng.uniform(), static_cast<int>(rng.range(-1074, 1023)));
  };
  for (int k = 0; k < 200000; ++k) {
    const double a = factor(), b = factor(), c = factor();
    ASSERT_EQ(bounds_detail::product_up({a, b}), product_up_by_frexp({a, b})) << std::hexfloat << a << " " << b;
    ASSERT_EQ(bounds_detail::product_up_exact({a, b}), product_up_by_frexp({a, b})) << std::hexfloat << a << " " << b;
    ASSERT_EQ(bounds_detail::product_up({a, b, c}), product_up_by_frexp({a, b, c})) << std::hexfloat << a << " " << b << " " << c;
    ASSERT_EQ(bounds_detail::product_up({bounds_detail::kEvalEta, a}), product_up_by_frexp({bounds_detail::kEvalEta, a})) << std::hexfloat << a;
    ASSERT_EQ(bounds_detail::quotient_up(a, b), quotient_up_by_frexp(a, b)) << std::hexfloat << a << " " << b;
  }
}
