// The correctly rounded reference is decided, not guessed (issue 14): enclosures that straddle a
// rounding boundary of the dtype (a tie, a subnormal tie, the overflow threshold) are undecided and
// make the oracle escalate; exact zeros and huge values get finite certified descriptions; column
// sums whose terms span more bits than the oracle's precision are checked against exact rational
// arithmetic (GMP), which shares no code with the oracle.
#include <gmp.h>
#include <gtest/gtest.h>
#include <mpfi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/float_format.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certify_interval.hpp"

using namespace normcheck;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// [center - r, center + r] with center = a + b + d exactly (2200 bits), outward rounded.
CertifiedValue certify(double a, double b, double r, DType dt, double d = 0.0) {
  mpfr_t c, lo, hi;
  mpfr_inits2(2200, c, lo, hi, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_d(c, a, MPFR_RNDN);
  mpfr_add_d(c, c, b, MPFR_RNDN);
  mpfr_add_d(c, c, d, MPFR_RNDN);
  mpfr_sub_d(lo, c, r, MPFR_RNDD);
  mpfr_add_d(hi, c, r, MPFR_RNDU);
  mpfi_t v;
  mpfi_init2(v, 2200);
  mpfi_interv_fr(v, lo, hi);
  const CertifiedValue out = oracle::certify_interval(v, dt);
  mpfi_clear(v);
  mpfr_clears(c, lo, hi, static_cast<mpfr_ptr>(nullptr));
  return out;
}

/// Correct rounding (nearest, ties to even) of an exact rational to a binary format of precision p,
/// smallest normal exponent emin and largest finite value max; written from the definition.
double round_rational(const mpq_t q, int p, int emin, double max) {
  if (mpq_sgn(q) == 0) return 0.0;
  mpq_t a, scaled, half;
  mpq_inits(a, scaled, half, static_cast<mpq_ptr>(nullptr));
  mpq_abs(a, q);
  // e = floor(log2 a): start from the bit lengths and correct by comparison.
  long e = static_cast<long>(mpz_sizeinbase(mpq_numref(a), 2)) - static_cast<long>(mpz_sizeinbase(mpq_denref(a), 2));
  const auto pow2 = [](mpq_t out, long k) {
    mpq_set_ui(out, 1, 1);
    if (k >= 0) mpz_mul_2exp(mpq_numref(out), mpq_numref(out), static_cast<mp_bitcnt_t>(k));
    else mpz_mul_2exp(mpq_denref(out), mpq_denref(out), static_cast<mp_bitcnt_t>(-k));
    mpq_canonicalize(out);
  };
  mpq_t t;
  mpq_init(t);
  for (;;) {  // 2^e <= a < 2^(e+1)
    pow2(t, e);
    if (mpq_cmp(a, t) < 0) { --e; continue; }
    pow2(t, e + 1);
    if (mpq_cmp(a, t) >= 0) { ++e; continue; }
    break;
  }
  const long quantum = std::max(e, static_cast<long>(emin)) - (p - 1);
  pow2(t, -quantum);
  mpq_mul(scaled, a, t);  // a / 2^quantum
  mpz_t n;
  mpz_init(n);
  mpz_fdiv_q(n, mpq_numref(scaled), mpq_denref(scaled));
  mpq_t frac;
  mpq_init(frac);
  mpq_set_z(frac, n);
  mpq_sub(frac, scaled, frac);
  mpq_set_ui(half, 1, 2);
  const int c = mpq_cmp(frac, half);
  if (c > 0 || (c == 0 && mpz_odd_p(n))) mpz_add_ui(n, n, 1);
  const double value = std::ldexp(mpz_get_d(n), static_cast<int>(quantum));  // exact: n has at most p + 1 bits
  mpz_clear(n);
  mpq_clears(a, scaled, half, t, frac, static_cast<mpq_ptr>(nullptr));
  const double rounded = value > max ? kInf : value;
  return mpq_sgn(q) < 0 ? -rounded : rounded;
}

double round_rational(const mpq_t q, DType dt) {
  const DTypeInfo& d = dtype_info(dt);
  return round_rational(q, d.precision, d.format->emin, d.max_finite);
}

/// The exact sum of doubles as a rational.
void exact_sum(const std::vector<double>& v, mpq_t out) {
  mpq_set_ui(out, 0, 1);
  mpq_t t;
  mpq_init(t);
  for (double x : v) {
    mpq_set_d(t, x);
    mpq_add(out, out, t);
  }
  mpq_clear(t);
}

/// A LayerNorm case of one column (n = 1) whose dbeta is the sum of `dy`.
LayerNormCase column(DType dt, const std::vector<double>& dy) {
  LayerNormCase c;
  c.dtype = dt;
  c.rows = static_cast<int64_t>(dy.size());
  c.n = 1;
  c.x.assign(dy.size(), 1.0);
  c.gamma = {1};
  c.beta = {0};
  c.dy = dy;
  return c;
}

}  // namespace

TEST(Rounding, ExactZerosAndTheSignOfZero) {
  mpfi_t zero;
  mpfi_init2(zero, 200);
  mpfi_set_d(zero, 0.0);  // MPFI's exact zero, [+0, -0]
  const CertifiedValue z = oracle::certify_interval(zero, DType::f32);
  mpfi_clear(zero);
  EXPECT_TRUE(z.rounding_decided);
  EXPECT_FALSE(z.zero_sign_undecided);
  EXPECT_EQ(z.rounded, 0.0);
  EXPECT_FALSE(std::signbit(z.rounded));
  // An enclosure of a tiny value of unknown sign: its rounding is 0, decided; only the sign is not.
  const CertifiedValue s = certify(0.0, 0.0, 0x1p-1000, DType::f32);
  EXPECT_TRUE(s.rounding_decided);
  EXPECT_TRUE(s.zero_sign_undecided);
  // A tiny value of known sign rounds to the zero of its own sign.
  const CertifiedValue neg = certify(-0x1p-900, 0.0, 0x1p-1000, DType::f16);
  EXPECT_TRUE(neg.rounding_decided);
  EXPECT_EQ(neg.rounded, 0.0);
  EXPECT_TRUE(std::signbit(neg.rounded));
}

TEST(Rounding, AnEnclosureAcrossATieIsUndecidedInEveryDtype) {
  for (DType dt : dtype_ids()) {
    const double u = dtype_info(dt).unit_roundoff;  // 1 + u lies halfway between 1 and 1 + 2u
    const CertifiedValue straddle = certify(1.0, u, 0x1p-120, dt);
    EXPECT_FALSE(straddle.rounding_decided) << dtype_info(dt).name;
    EXPECT_EQ(straddle.rounded, 1.0);
    EXPECT_EQ(straddle.rounded_alt, 1 + 2 * u);
    const CertifiedValue point = certify(1.0, u, 0.0, dt);  // exactly the tie: to even
    EXPECT_TRUE(point.rounding_decided);
    EXPECT_EQ(point.rounded, 1.0);
    const CertifiedValue above = certify(1.0, u, 0x1p-120, dt, 0x1p-100);
    EXPECT_TRUE(above.rounding_decided);
    EXPECT_EQ(above.rounded, 1 + 2 * u);
  }
}

TEST(Rounding, SubnormalTiesAndTheOverflowThreshold) {
  // f32: 5 2^-150 lies halfway between the subnormals 2 2^-149 and 3 2^-149.
  const CertifiedValue sub = certify(5 * 0x1p-150, 0.0, 0x1p-300, DType::f32);
  EXPECT_FALSE(sub.rounding_decided);
  EXPECT_EQ(sub.rounded, 2 * 0x1p-149);
  EXPECT_EQ(sub.rounded_alt, 3 * 0x1p-149);
  // f32: FLT_MAX + half its ulp is the overflow threshold: below it FLT_MAX, above it inf.
  const double max = dtype_info(DType::f32).max_finite;
  const CertifiedValue threshold = certify(max, 0x1p103, 0x1p-60, DType::f32);
  EXPECT_FALSE(threshold.rounding_decided);
  EXPECT_EQ(threshold.rounded, max);
  EXPECT_EQ(threshold.rounded_alt, kInf);
  EXPECT_EQ(certify(max, 0x1p103, 0.0, DType::f32).rounded, kInf);  // the threshold itself: to even (inf)
  // f64 values at and beyond DBL_MAX get finite, scaled descriptions (no inf, no NaN radius).
  const double dmax = std::numeric_limits<double>::max();
  for (const auto& [a, b, expected] : {std::tuple{dmax, 0x1p969, dmax}, {dmax, 0x1p971, kInf}, {0x1p1023, 0x1p1023, kInf}}) {
    const CertifiedValue v = certify(a, b, 0x1p900, DType::f64);
    EXPECT_FALSE(v.unbounded());
    EXPECT_TRUE(std::isfinite(v.hi));
    EXPECT_TRUE(std::isfinite(v.rad));
    EXPECT_NE(v.scale, 0);
    EXPECT_TRUE(v.rounding_decided);
    EXPECT_EQ(v.rounded, expected);
  }
}

TEST(Rounding, ColumnSumsAcrossManyBinadesMatchExactRationalRounding) {
  struct Sum {
    DType dt;
    std::vector<double> dy;
    bool decided;    ///< decided at the top precision (the terms span fewer than 1331 bits)
    bool escalates;  ///< the first (168-bit) enclosure straddles; it does not when its end on the
                     ///< boundary itself rounds (to even) like the rest of it
  };
  const double max32 = dtype_info(DType::f32).max_finite;
  const std::vector<Sum> sums = {
      {DType::f32, {0x1p100, 0x1p76, 0x1p-149}, true, true},    // just above a tie: rounds up
      {DType::f32, {0x1p100, 0x1p76, -0x1p-149}, true, false},  // just below it: rounds down
      {DType::f32, {max32, 0x1p103, 0x1p-149}, true, false},    // just above the overflow threshold: inf
      {DType::f32, {max32, 0x1p103, -0x1p-149}, true, true},    // just below it: FLT_MAX
      {DType::bf16, {0x1p100, 0x1p92, 0x1p-133}, true, true},   // bf16: above a tie
      {DType::f16, {1024, 0.5, 0x1p-24}, true, false},          // f16: above a tie (34 bits: exact at once)
      {DType::f64, {0x1p100, 0x1p47, 0x1p-1074}, true, true},   // 1174 bits: decided at 1331 bits
      {DType::f64, {0x1p1000, 0x1p947, 0x1p-1074}, false, true},  // 2074 bits: undecided even at 1331 bits
  };
  mpq_t exact;
  mpq_init(exact);
  for (const Sum& s : sums) {
    const LayerNormCase c = column(s.dt, s.dy);
    const auto ref = oracle::certified_layernorm(c, true);
    exact_sum(s.dy, exact);
    const double truth = round_rational(exact, s.dt);
    const CertifiedValue& db = ref.dbeta[0];
    const std::string what = std::string(dtype_info(s.dt).name) + " " + std::to_string(s.dy[0]);
    if (s.decided) {
      EXPECT_TRUE(db.rounding_decided) << what;
      EXPECT_EQ(db.rounded, truth) << what;
    } else {
      // Undecided: the truth is one of the two candidates, and the oracle went to its top precision.
      EXPECT_FALSE(db.rounding_decided) << what;
      EXPECT_TRUE(db.rounded == truth || db.rounded_alt == truth) << what;
      EXPECT_GT(ref.precision_bits, 1000) << what;
    }
    if (s.escalates) {
      EXPECT_GT(ref.precision_bits, 168) << what << ": the first enclosure straddles and must escalate";
    }
  }
  mpq_clear(exact);
}

// The bit-level encode/decode/round/ULP functions (src/core/float_format.cpp, issue 17 item 3) agree
// with their frexp/ldexp definitions (written here independently) on doubles of every binade, and
// MPFR's correct rounding decides the rounding of each double to each format.
namespace {

/// x rounded to a format of precision p and minimum exponent emin by MPFR (exact: a double has 53 bits).
double rounded_by_mpfr(double x, int p, int emin, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  mpfr_t m;
  mpfr_init2(m, p);
  const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
  mpfr_set_emin(emin - p + 2);  // MPFR's exponents are one above IEEE's: [0.5, 1) binades
  mpfr_set_emax(2000);
  const int t = mpfr_set_d(m, x, MPFR_RNDN);
  mpfr_subnormalize(m, t, MPFR_RNDN);
  double r = mpfr_get_d(m, MPFR_RNDN);
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  mpfr_clear(m);
  if (std::fabs(r) > max_finite) r = std::copysign(kInf, x);
  return r;
}

/// The next value of a xorshift64 generator: random bit patterns of doubles.
uint64_t xorshift64(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

/// The spacing of the format at |x| by frexp/ldexp (the definition).
double ulp_by_frexp(double x, const FloatFormat& f) {
  int e2 = 0;
  std::frexp(std::fabs(x), &e2);
  const int e = std::min(std::max(e2 - 1, f.emin), f.emax);
  return std::ldexp(1.0, e - (f.precision - 1));
}

}  // namespace

TEST(Rounding, BitLevelRoundingEncodingAndUlpAgreeWithMpfrAndFrexpInEveryBinade) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  const auto next = [&] { return xorshift64(state); };
  int checked = 0;
  for (const FloatFormat* f : {&kBinary16, &kBfloat16, &kBinary32, &kBinary64}) {
    const double mx = max_finite(*f);
    EXPECT_EQ(mx, std::ldexp(2.0 - std::ldexp(1.0, 1 - f->precision), f->emax));
    for (int k = 0; k < 200000; ++k) {
      // random bit patterns of doubles (every binade, subnormals, both signs), plus values near the
      // format's own range where its roundings, subnormals and overflow happen
      uint64_t bits = next();
      if (k % 2 == 1) {
        const int e = f->emin - f->precision - 2 + static_cast<int>(next() % static_cast<uint64_t>(f->emax - f->emin + f->precision + 6));
        bits = (bits & ~(uint64_t{0x7ff} << 52)) | (static_cast<uint64_t>(e + 1023) << 52);
      }
      double x;
      std::memcpy(&x, &bits, 8);
      if (std::isnan(x)) continue;
      const double want = rounded_by_mpfr(x, f->precision, f->emin, mx);
      const double got = round_to_format_double(x, *f);
      ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want)) << std::hexfloat << x << " fmt p" << f->precision;
      ASSERT_EQ(decode_bits(round_to_format(x, *f), *f), want) << std::hexfloat << x;
      if (std::isfinite(want)) {
        ASSERT_EQ(decode_bits(encode_exact(want, *f), *f), want) << std::hexfloat << want;
      }
      ASSERT_EQ(ulp_at(x, *f), ulp_by_frexp(x, *f)) << std::hexfloat << x;
      ++checked;
    }
  }
  EXPECT_GT(checked, 700000);
}

TEST(Rounding, ScaleByPow2IsLdexpBitForBit) {
  // scale_by_pow2 (judging's scaling of tiny and huge references) against std::ldexp: random
  // doubles of every binade (subnormals, both signs, zeros, infinities, NaN), with k anywhere and
  // with k putting the result at the subnormal range, the underflow to zero and the overflow edge,
  // where the two-multiplication paths must round exactly once.
  uint64_t state = 0x2545f4914f6cdd1dull;
  const auto next = [&] { return xorshift64(state); };
  const auto same = [](double a, double b) {
    uint64_t x, y;
    std::memcpy(&x, &a, 8);
    std::memcpy(&y, &b, 8);
    return x == y || (std::isnan(a) && std::isnan(b));
  };
  int64_t paths[3] = {0, 0, 0};  // one product, two (k < -1022), two (k > 1023)
  for (int i = 0; i < 2000000; ++i) {
    uint64_t bits = next();
    if (i % 1000 == 0) bits = (i / 1000) % 2 ? 0x7ff0000000000000ull : 0;  // inf, 0
    if (i % 1000 == 500) bits |= uint64_t{1} << 63;
    double v;
    std::memcpy(&v, &bits, 8);
    const int e = (v != 0 && std::isfinite(v)) ? std::ilogb(v) : 0;
    int k;
    switch (i % 4) {
      case 0: k = static_cast<int>(next() % 4401) - 2200; break;
      case 1: k = -1074 - e + static_cast<int>(next() % 60) - 6; break;  // result near the smallest subnormals
      case 2: k = -1022 - e + static_cast<int>(next() % 60) - 54; break;  // result across the subnormal/normal edge
      default: k = 1023 - e + static_cast<int>(next() % 6) - 3; break;     // result at the overflow edge
    }
    const double want = std::ldexp(v, k), got = normcheck::scale_by_pow2(v, k);
    ASSERT_TRUE(same(got, want)) << std::hexfloat << v << " k " << k << " got " << got << " want " << want;
    ++paths[k >= -1022 && k <= 1023 ? 0 : (k < -1022 ? 1 : 2)];
  }
  for (int64_t p : paths) EXPECT_GT(p, 100000);  // every path exercised
}
