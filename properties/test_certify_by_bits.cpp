// Rule C (docs/bounds.md section 18): the oracle's inline certification of a ball's rounding on the
// bits of its midpoint (the target's normal and subnormal binades, zero midpoints). Checked against exact comparisons in MPFR (2,400 bits hold every sum of
// doubles exactly): whenever rule C decides, every real number of the ball lies strictly between
// the rounding boundaries around r (the midpoints to r's neighbours in the target format, and the
// overflow threshold above the largest finite value), r is a value of the format and the radius in
// ULPs equals the general accounting's; and rule C does decide balls far from every boundary.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpfr.h>
#include <rapidcheck/gtest.h>

#include "core/dtype.hpp"
#include "core/float_format.hpp"
#include "oracles/certificate_accounting.hpp"
#include "oracles/certify_ball.hpp"

using namespace normcheck;

namespace {

/// An exact real number: a sum of doubles at 2,400 bits (every such sum of up to 4 terms is exact).
class Exact {
 public:
  Exact() { mpfr_init2(v_, 2400); mpfr_set_zero(v_, 1); }
  ~Exact() { mpfr_clear(v_); }
  Exact(const Exact&) = delete;
  Exact& operator=(const Exact&) = delete;
  Exact& add(double d) {
    mpfr_add_d(v_, v_, d, MPFR_RNDN);  // exact at this precision
    return *this;
  }
  Exact& half() {
    mpfr_div_2ui(v_, v_, 1, MPFR_RNDN);
    return *this;
  }
  friend bool operator<(const Exact& a, const Exact& b) { return mpfr_less_p(a.v_, b.v_) != 0; }

 private:
  mpfr_t v_;
};

const FloatFormat& format_of(DType d) { return *dtype_info(d).format; }

/// The neighbour of the nonzero format value r one step up (+1) or down (-1) in value order (+-inf
/// past the largest finite value).
double neighbour(double r, int step, const FloatFormat& f) {
  return decode_bits(bits_from_ordered_key(ordered_key(encode_exact(r, f), f) + step, f), f);
}

/// The boundary between the format values r and its neighbour q (their midpoint, or the overflow
/// threshold max + ulp(max)/2 when q is infinite).
void boundary(double r, double q, const FloatFormat& f, Exact& out) {
  if (std::isinf(q)) {
    out.add(r).add(std::copysign(ulp_at(r, f) / 2, r));
    return;
  }
  out.add(r).add(q).half();
}

/// A double near a rounding boundary of the format, a binade edge, the largest finite value or the
/// smallest normal, a few double ULPs off, or anywhere in the format's normal range.
double adversarial_midpoint(const FloatFormat& f) {
  const double sign = *rc::gen::element(-1.0, 1.0);
  const int p = f.precision;
  const int e = *rc::gen::inRange(f.emin - p - 2, f.emax + 1);  // the target's subnormals, and below them
  const double spacing = ulp_at(std::ldexp(1.0, e), f);
  const double base = std::ldexp(1.0, e) + spacing * static_cast<double>(*rc::gen::inRange<int64_t>(0, int64_t{1} << std::min(p - 1, 20)));
  double m = base;
  switch (*rc::gen::inRange(0, 6)) {
    case 0: m = base + spacing / 2; break;                           // a rounding boundary
    case 1: m = std::ldexp(1.0, e); break;                           // a binade edge
    case 2: m = max_finite(f) + ulp_at(max_finite(f), f) * *rc::gen::inRange(-2, 2) / 2; break;  // the overflow edge
    case 3: m = std::ldexp(1.0, f.emin) * (1 + *rc::gen::inRange(-4, 4) * 0x1p-20); break;  // the smallest normal
    case 4: m = base + spacing * *rc::gen::inRange(0, 1 << 10) * 0x1p-10; break;
    default: break;
  }
  const int ulps = *rc::gen::inRange(-3, 4);  // a few double ULPs off
  for (int k = 0; k < std::abs(ulps); ++k) m = std::nextafter(m, ulps > 0 ? HUGE_VAL : -HUGE_VAL);
  return sign * m;
}

/// A radius at the scale of m's distance to its boundaries: 0, a power of two around the format's
/// spacing at m, an exact multiple of m's double ULP (the strict edge), or unbounded.
double adversarial_radius(double m, const FloatFormat& f) {
  const double ulp_d = std::fabs(m) > 0 ? std::ldexp(1.0, std::ilogb(m) - 52) : 0x1p-1074;
  switch (*rc::gen::inRange(0, 6)) {
    case 0: return 0.0;
    case 1: return std::ldexp(ulp_at(m, f), -*rc::gen::inRange(0, 40));
    case 2:  // any 20-bit fraction of the format's spacing
      return std::ldexp(ulp_d * static_cast<double>(*rc::gen::inRange<int64_t>(1, int64_t{1} << 20)),
                        *rc::gen::inRange(0, std::max(1, 53 - f.precision - 19)));
    case 3: return ulp_d * std::ldexp(1.0, *rc::gen::inRange(0, 53 - f.precision));
    case 4: return *rc::gen::element(HUGE_VAL, std::numeric_limits<double>::quiet_NaN());
    default: return ulp_d * static_cast<double>(*rc::gen::inRange(1, 8));
  }
}

/// Rule C's claim for the ball hi + lo -+ rad checked exactly: r a value of the format, every point
/// strictly inside r's rounding interval, the radius in ULPs the general accounting's.
void check_sound(double hi, double lo, double rad, const CertifiedValue& cv, double rad_ulps, const FloatFormat& f) {
  const double r = cv.rounded;
  if (r == 0 && rad == 0) {  // an exact zero is decided to itself, with its own sign
    RC_ASSERT(hi == 0 && lo == 0 && rad_ulps == 0.0 && cv.rounding_decided && cv.rounded_alt == 0);
    RC_ASSERT(std::signbit(r) == std::signbit(hi) && !cv.zero_sign_undecided);
    return;
  }
  if (r == 0) {  // a zero midpoint: every point within half the smallest subnormal of 0, the sign undecided
    RC_ASSERT(hi == 0 && lo == 0 && cv.rounding_decided && cv.zero_sign_undecided && cv.rounded_alt == 0);
    Exact high, half_min;
    high.add(rad);
    half_min.add(decode_bits(1, f)).half();
    RC_ASSERT(high < half_min);
    RC_ASSERT(rad_ulps == oracle::radius_in_ulps(cv, f));
    return;
  }
  RC_ASSERT(cv.rounding_decided);
  RC_ASSERT(cv.rounded_alt == r);
  RC_ASSERT(std::isfinite(r));
  RC_ASSERT(round_to_format_double(r, f) == r);
  Exact below, above, low, high;
  boundary(r, neighbour(r, -1, f), f, below);
  boundary(r, neighbour(r, +1, f), f, above);
  low.add(hi).add(lo).add(-rad);
  high.add(hi).add(lo).add(rad);
  if (!(below < low) || !(high < above))
    RC_FAIL(fmt::format("rule C decided {:a} + {:a} -+ {:a} to {:a}, but the ball reaches a rounding boundary", hi, lo, rad, r));
  RC_ASSERT(cv.hi == hi && cv.lo == lo && cv.rad == rad && cv.scale == 0);
  RC_ASSERT(rad_ulps == oracle::radius_in_ulps(cv, f));
}

/// One double ball at an edge of its target: checked when rule C decides it.
void check_one_double_ball() {
  const DType dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  const FloatFormat& f = format_of(dtype);
  const bool zero = *rc::gen::inRange(0, 20) == 0;
  const double m = zero ? *rc::gen::element(0.0, -0.0) : adversarial_midpoint(f);
  const double half_min = decode_bits(1, f) / 2;  // half the smallest subnormal, and its neighbours
  const double zero_rad = *rc::gen::element(0.0, half_min, std::nextafter(half_min, 0.0), std::nextafter(half_min, 1.0), half_min / 1024);
  const double rad = zero ? zero_rad : adversarial_radius(m, f);
  CertifiedValue cv;
  double rad_ulps = 0;
  const bool decided = oracle::certify_by_bits(m, 0.0, rad, f, cv, rad_ulps);
  if (decided) {
    check_sound(m, 0.0, rad, cv, rad_ulps, f);
    const CertifiedValue general = oracle::certify_ball(oracle::Ball(m, rad), dtype);
    RC_ASSERT(general.rounding_decided && general.rounded == cv.rounded && std::signbit(general.rounded) == std::signbit(cv.rounded));
    RC_ASSERT(general.zero_sign_undecided == cv.zero_sign_undecided && general.rounded_alt == cv.rounded_alt);
  }
}

/// One double-double ball at an edge of its target (f64 included): checked when rule C decides it.
void check_one_double_double_ball() {
  const DType dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32, DType::f64);
  const FloatFormat& f = format_of(dtype);
  const FloatFormat& scale_format = dtype == DType::f64 ? format_of(DType::f32) : f;  // f64: f32's binades, radii 2^-29 as small
  const double hi = adversarial_midpoint(scale_format);
  // lo within half a double ULP of hi (the double-double invariant), often exactly half (a tie).
  const double half_ulp = std::ldexp(1.0, std::ilogb(hi) - 53);
  const double lo = *rc::gen::element(0.0, half_ulp, -half_ulp, half_ulp * *rc::gen::inRange(-1024, 1024) / 1024);
  const double rad = adversarial_radius(hi, scale_format) * (dtype == DType::f64 ? 0x1p-29 : 1.0);
  CertifiedValue cv;
  double rad_ulps = 0;
  const bool decided = oracle::certify_by_bits(hi, lo, rad, f, cv, rad_ulps);
  if (decided) {
    check_sound(hi, lo, rad, cv, rad_ulps, f);
    const CertifiedValue general = oracle::certify_dd_ball(oracle::DdBall(hi, lo, rad), dtype);
    if (general.rounding_decided) RC_ASSERT(general.rounded == cv.rounded);
  }
}

constexpr int kBallsPerCase = 64;  // 6,400 balls per property at RapidCheck's default 100 cases

/// Two certificates equal in every field, bit for bit (the sign of zero included).
bool same_bits(const CertifiedValue& a, const CertifiedValue& b) {
  const auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  };
  return bits(a.hi) == bits(b.hi) && bits(a.lo) == bits(b.lo) && bits(a.rad) == bits(b.rad) && a.scale == b.scale &&
         bits(a.rounded) == bits(b.rounded) && bits(a.rounded_alt) == bits(b.rounded_alt) && a.rounding_decided == b.rounding_decided &&
         a.zero_sign_undecided == b.zero_sign_undecided;
}

}  // namespace

// The run certifier (the double ball's and the a priori level's outputs) is rule C with the format's
// constants hoisted: on adversarial balls of every kind (edges of the target's normal and subnormal
// ranges, the overflow edge, zeros, NaN and infinite radii, negative midpoints) it decides exactly
// the balls certify_by_bits decides, with the same certificate bit for bit and the same maximum.
RC_GTEST_PROP(RuleC, TheRunCertifierDecidesWhatCertifyByBitsDecidesBitForBit, ()) {
  const DType dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  const FloatFormat& f = format_of(dtype);
  std::vector<oracle::Ball> balls;
  for (int k = 0; k < kBallsPerCase; ++k) {
    const int kind = *rc::gen::inRange(0, 24);
    const double m = kind == 0 ? *rc::gen::element(0.0, -0.0) : adversarial_midpoint(f) * (kind % 2 ? -1.0 : 1.0);
    const double rad = kind == 1 ? *rc::gen::element(std::nan(""), HUGE_VAL, 0.0) : adversarial_radius(std::fabs(m) > 0 ? m : 1.0, f);
    balls.emplace_back(m, rad);
  }
  std::vector<CertifiedValue> run;
  std::unique_ptr<bool[]> decided(new bool[balls.size()]);
  double run_err = 0.25e-3;  // a maximum carried in from earlier outputs
  oracle::certify_balls_by_bits(balls.data(), balls.size(), f, run, decided.get(), run_err);
  RC_ASSERT(run.size() == balls.size());
  double err = 0.25e-3;
  for (size_t k = 0; k < balls.size(); ++k) {
    CertifiedValue one;
    double rad_ulps = 0;
    const bool ok = oracle::certify_by_bits(balls[k].mid, 0.0, balls[k].rad, f, one, rad_ulps);
    if (ok != decided[k])
      RC_FAIL(fmt::format("{:a} -+ {:a}: certify_by_bits {} it, the run certifier {}", balls[k].mid, balls[k].rad,
                          ok ? "decides" : "declines", decided[k] ? "decides" : "declines"));
    if (!ok) continue;
    RC_ASSERT(same_bits(one, run[k]));
    err = std::max(err, rad_ulps);
  }
  RC_ASSERT(err == run_err);
}

RC_GTEST_PROP(RuleC, ADecidedDoubleBallLiesInsideOneRoundingIntervalOfItsTarget, ()) {
  for (int k = 0; k < kBallsPerCase; ++k) check_one_double_ball();
}

RC_GTEST_PROP(RuleC, ADecidedDoubleDoubleBallLiesInsideOneRoundingIntervalOfItsTarget, ()) {
  for (int k = 0; k < kBallsPerCase; ++k) check_one_double_double_ball();
}

// Rule C must not be vacuous: balls whose radius is a thousandth of the format's spacing, around
// midpoints drawn uniformly in the normal binades, are decided unless they lie within that radius
// of a boundary (about 0.2 % of them).
TEST(RuleC, DecidesAlmostEveryBallFarFromABoundary) {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    const FloatFormat& f = format_of(dtype);
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    int decided = 0;
    const int trials = 20000;
    for (int t = 0; t < trials; ++t) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const int e = std::max(f.emin, -900) + static_cast<int>((state >> 33) % static_cast<uint64_t>(std::min(f.emax, 900) - std::max(f.emin, -900)));
      const double m = std::ldexp(1.0 + static_cast<double>(state >> 12 & ((uint64_t{1} << 40) - 1)) * 0x1p-40, e);
      CertifiedValue cv;
      double rad_ulps = 0;
      decided += oracle::certify_by_bits(m, 0.0, ulp_at(m, f) * 1e-3, f, cv, rad_ulps) ? 1 : 0;
    }
    EXPECT_GT(decided, trials * 99 / 100) << dtype_info(dtype).name;
  }
}

namespace {

/// Whether every real point of [hi + lo - rad, hi + lo + rad] rounds to the format value r: strictly
/// between the boundaries to r's neighbours (exact comparisons in MPFR).
bool ball_inside_rounding_interval(double hi, double lo, double rad, double r, const FloatFormat& f) {
  if (!std::isfinite(r) || r == 0 || round_to_format_double(r, f) != r) return false;
  Exact below, above, low, high;
  boundary(r, neighbour(r, -1, f), f, below);
  boundary(r, neighbour(r, +1, f), f, above);
  low.add(hi).add(lo).add(-rad);
  high.add(hi).add(lo).add(rad);
  return below < low && high < above;
}

/// A ball at a power of two P of the format, where the spacing below P is half the one above: the
/// centre on P or up to half a spacing below off it (and a few double ULPs), the radius from a quarter
/// of the spacing below to half the spacing above; f64 targets get double-double centres.
struct PowerOfTwoBall {
  double hi, lo, rad;
};

PowerOfTwoBall power_of_two_ball(const FloatFormat& f, bool f64_target) {
  const int e = *rc::gen::inRange(std::max(f.emin + 1, -1000), std::min(f.emax, 1000) + 1);
  const double p = std::ldexp(1.0, e) * *rc::gen::element(1.0, -1.0);
  const double above = ulp_at(p, f), below = above / 2;
  double hi = p - std::copysign(below, p) * *rc::gen::inRange(0, 513) * 0x1p-10;  // P, or up to half a spacing below
  const int ulps = *rc::gen::inRange(-2, 3);
  for (int k = 0; k < std::abs(ulps); ++k) hi = std::nextafter(hi, ulps > 0 ? HUGE_VAL : -HUGE_VAL);
  const double rad = below / 4 + (above / 2 - below / 4) * *rc::gen::inRange(0, 1025) * 0x1p-10;
  const double half_ulp = std::ldexp(1.0, std::ilogb(hi) - 53);
  const double lo = f64_target ? *rc::gen::element(0.0, half_ulp, -half_ulp, half_ulp * *rc::gen::inRange(-1024, 1025) * 0x1p-10) : 0.0;
  return {hi, lo, rad};
}

}  // namespace

// Issue 49 item 1: the general certifiers' fast decision (a quarter of the spacing above r, which is
// half the spacing below a power of two) must not decide a ball that reaches below P's rounding
// interval. Every decided ball lies inside the interval of its rounding; undecided ones are fine.
RC_GTEST_PROP(RuleC, BallsAtPowersOfTwoAreUndecidedOrRoundedCorrectly, ()) {
  int decided = 0;
  for (int k = 0; k < kBallsPerCase; ++k) {
    const DType dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32, DType::f64);
    const FloatFormat& f = format_of(dtype);
    const PowerOfTwoBall b = power_of_two_ball(f, dtype == DType::f64);
    const CertifiedValue dd = oracle::certify_dd_ball(oracle::DdBall(b.hi, b.lo, b.rad), dtype);
    if (dd.rounding_decided) {
      ++decided;
      if (!ball_inside_rounding_interval(b.hi, b.lo, b.rad, dd.rounded, f))
        RC_FAIL(fmt::format("{}: the double-double ball {:a} + {:a} -+ {:a} was decided to {:a}, which it does not round to everywhere",
                            dtype_info(dtype).name, b.hi, b.lo, b.rad, dd.rounded));
    }
    if (dtype == DType::f64) continue;
    const CertifiedValue one = oracle::certify_ball(oracle::Ball(b.hi, b.rad), dtype);
    if (one.rounding_decided) {
      ++decided;
      if (!ball_inside_rounding_interval(b.hi, 0.0, b.rad, one.rounded, f))
        RC_FAIL(fmt::format("{}: the ball {:a} -+ {:a} was decided to {:a}, which it does not round to everywhere", dtype_info(dtype).name,
                            b.hi, b.rad, one.rounded));
    }
  }
  RC_TAG(decided > 0 ? "some decided" : "none decided");
}

// The property above is not vacuous: balls on P within the quarter-spacing rule are decided by it.
TEST(RuleC, ABallOnAPowerOfTwoWithinAQuarterOfTheSpacingAboveIsDecided) {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    const FloatFormat& f = format_of(dtype);
    const double p = 1.0, quarter = ulp_at(p, f) / 4;
    EXPECT_TRUE(oracle::certify_ball(oracle::Ball(p, quarter * 0.9), dtype).rounding_decided) << dtype_info(dtype).name;
    EXPECT_TRUE(oracle::certify_dd_ball(oracle::DdBall(p, 0.0, quarter * 0.9), dtype).rounding_decided) << dtype_info(dtype).name;
    EXPECT_FALSE(oracle::certify_ball(oracle::Ball(p, quarter * 1.5), dtype).rounding_decided) << dtype_info(dtype).name;
  }
}
