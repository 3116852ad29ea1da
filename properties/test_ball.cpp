// The double ball (oracles/ball.hpp) is a rigorous enclosure: every rule contains the exact result
// of the operation at the corners and centre of its input balls (checked in 330-bit MPFR), on
// random and adversarial operands (huge, tiny, subnormal, cancelling), and the ball level of the
// LayerNorm, RMSNorm and JVP oracles contains the MPFI level's midpoint of every output and, where
// both decide the rounding to the dtype, rounds to the same value, always.
#include <cmath>

#include <boost/multiprecision/mpfr.hpp>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "oracles/ball.hpp"
#include "oracles/certified_layernorm.hpp"
#include "properties/generators.hpp"
#include "properties/jvp_generators.hpp"

using namespace normcheck;
using oracle::Ball;
using Big = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<100>, boost::multiprecision::et_off>;

namespace {

/// A double drawn to reach the rules' edge cases: ordinary, huge, tiny, subnormal, zero, and
/// neighbours of one another (cancellation).
double adversarial_double() {
  const int kind = *rc::gen::inRange(0, 6);
  const double sign = *rc::gen::element(-1.0, 1.0);
  const double frac = 1 + *rc::gen::inRange(0, 1 << 20) * 0x1p-20;
  switch (kind) {
    case 0: return sign * frac * std::ldexp(1.0, *rc::gen::inRange(-30, 30));
    case 1: return sign * frac * std::ldexp(1.0, *rc::gen::inRange(900, 1000));
    case 2: return sign * frac * std::ldexp(1.0, *rc::gen::inRange(-1021, -900));
    case 3: return sign * std::ldexp(static_cast<double>(*rc::gen::inRange(1, 1 << 20)), -1074);  // subnormal
    case 4: return 0.0;
    default: return sign * (1 + *rc::gen::inRange(0, 64) * 0x1p-52);  // near 1: sums cancel
  }
}

Ball adversarial_ball() {
  const double m = adversarial_double();
  const int r = *rc::gen::inRange(0, 4);
  const double rad = r == 0 ? 0.0 : std::fabs(m) * std::ldexp(1.0, -*rc::gen::inRange(10, 60)) + (r == 3 ? 0x1p-1070 : 0.0);
  return {m, rad};
}

/// The corners and centre of a ball, exactly (in Big).
std::vector<Big> points(const Ball& b) { return {Big(b.mid) - Big(b.rad), Big(b.mid), Big(b.mid) + Big(b.rad)}; }

/// |exact - mid| <= rad for every exact value, or the ball is unbounded.
template <class Exact>
void check_contains(const Ball& got, const Exact& exact_values) {
  if (!got.bounded()) return;  // an unbounded ball claims nothing
  for (const Big& e : exact_values) {
    const Big dist = abs(e - Big(got.mid));
    RC_ASSERT(dist <= Big(got.rad));
  }
}

}  // namespace

RC_GTEST_PROP(Ball, SumAndDifferenceContainTheExactResult, ()) {
  const Ball a = adversarial_ball(), b = adversarial_ball();
  std::vector<Big> sums, diffs;
  for (const Big& x : points(a))
    for (const Big& y : points(b)) {
      sums.push_back(x + y);
      diffs.push_back(x - y);
    }
  check_contains(a + b, sums);
  check_contains(a - b, diffs);
}

RC_GTEST_PROP(Ball, ProductContainsTheExactResult, ()) {
  const Ball a = adversarial_ball(), b = adversarial_ball();
  std::vector<Big> prods;
  for (const Big& x : points(a))
    for (const Big& y : points(b)) prods.push_back(x * y);
  check_contains(a * b, prods);
}

RC_GTEST_PROP(Ball, QuotientContainsTheExactResultOrIsUnbounded, ()) {
  const Ball a = adversarial_ball(), b = adversarial_ball();
  const Ball q = a / b;
  if (std::fabs(b.mid) <= b.rad) RC_ASSERT(!q.bounded());  // a divisor ball containing 0
  std::vector<Big> quots;
  for (const Big& x : points(a))
    for (const Big& y : points(b))
      if (y != 0) quots.push_back(x / y);
  check_contains(q, quots);
}

RC_GTEST_PROP(Ball, SquareRootContainsTheExactResultOrIsUnbounded, ()) {
  Ball a = adversarial_ball();
  a.mid = std::fabs(a.mid);
  const Ball s = sqrt(a);
  std::vector<Big> roots;
  for (const Big& x : points(a))
    if (x >= 0) roots.push_back(sqrt(x));
  if (a.mid - a.rad <= 0 && a.rad > 0) RC_ASSERT(!s.bounded());
  check_contains(s, roots);
}

RC_GTEST_PROP(Ball, TheBallLevelContainsTheMpfiMidpointOfEveryOutput, ()) {
  // LayerNorm forward and VJP, RMSNorm, and the JVP on every row generator and dtype: wherever the ball
  // level is bounded, the 168-bit MPFI enclosure's midpoint lies inside it.
  const auto& gens = gen::jvp_generator_names();
  const std::string g = gens[*rc::gen::inRange<size_t>(0, gens.size())];
  const DType dt = *rc::gen::element(DType::f16, DType::bf16, DType::f32, DType::f64);
  const gen::JvpCase jc = gen::make_jvp_case(g, dt, *rc::gen::arbitrary<uint64_t>(), 512);
  const auto inside = [](const std::vector<CertifiedValue>& ball, const std::vector<CertifiedValue>& mpfi) {
    RC_ASSERT(ball.size() == mpfi.size());
    for (size_t k = 0; k < ball.size(); ++k) {
      if (ball[k].unbounded() || mpfi[k].unbounded()) continue;
      const Big exact_mid = Big(mpfi[k].hi) + Big(mpfi[k].lo);  // scale: values below 2^-900 are compared scaled
      const Big mid = mpfi[k].scale == 0 ? exact_mid : Big(ldexp(exact_mid, mpfi[k].scale));
      const Big mpfi_rad = mpfi[k].scale == 0 ? Big(mpfi[k].rad) : Big(ldexp(Big(mpfi[k].rad), mpfi[k].scale));
      // Both enclose the exact value, so they overlap: the MPFI midpoint is inside the ball up to
      // MPFI's own radius (2^-168 relative; a ball made exact by TwoSum can be tighter than that).
      RC_ASSERT(abs(mid - Big(ball[k].hi)) <= Big(ball[k].rad) + mpfi_rad);
      if (ball[k].rounding_decided && mpfi[k].rounding_decided) RC_ASSERT(ball[k].rounded == mpfi[k].rounded);  // the same correct rounding
    }
  };
  const oracle::CertifiedLayerNorm lb = oracle::evaluate_layernorm_ball(jc.c, true), lm = oracle::evaluate_layernorm_mpfi50(jc.c, true);
  inside(lb.y, lm.y);
  inside(lb.dx, lm.dx);
  inside(lb.dgamma, lm.dgamma);
  inside(lb.dbeta, lm.dbeta);
  const oracle::CertifiedLayerNorm rb = oracle::evaluate_rmsnorm_ball(jc.c, true), rm = oracle::evaluate_rmsnorm_mpfi50(jc.c, true);
  inside(rb.y, rm.y);
  inside(rb.dx, rm.dx);
  inside(rb.dgamma, rm.dgamma);
  inside(oracle::evaluate_layernorm_jvp_ball(jc.c, jc.t).du, oracle::evaluate_layernorm_jvp_mpfi50(jc.c, jc.t).du);
}
