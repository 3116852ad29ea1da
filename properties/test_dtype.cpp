// The dtype layer: exhaustive checks of encoding and correctly rounded conversion to f16/bf16.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "core/dtype.hpp"
#include "core/float_format.hpp"
#include "core/storage_bytes.hpp"
#include "core/rng.hpp"
#include "oracles/certify_interval.hpp"

using namespace normcheck;

namespace {

const FloatFormat* const kHalfFormats[] = {&kBinary16, &kBfloat16};

bool is_nan_pattern(uint32_t b, const FloatFormat& f) { return std::isnan(decode_bits(b, f)); }

/// The even one of two adjacent patterns.
uint32_t even_of(uint32_t a, uint32_t b) { return (a & 1u) == 0 ? a : b; }

}  // namespace

TEST(DType, TraitsTableMatchesIeeeFacts) {
  EXPECT_EQ(dtype_info(DType::f16).max_finite, 65504.0);
  EXPECT_EQ(dtype_info(DType::f16).min_normal, std::ldexp(1.0, -14));
  EXPECT_EQ(dtype_info(DType::f16).denorm_min, std::ldexp(1.0, -24));
  EXPECT_EQ(dtype_info(DType::bf16).max_finite, std::ldexp(255.0, 120));
  EXPECT_EQ(dtype_info(DType::bf16).min_normal, std::ldexp(1.0, -126));
  EXPECT_EQ(dtype_info(DType::f32).max_finite, std::numeric_limits<float>::max());
  EXPECT_EQ(dtype_info(DType::f32).denorm_min, std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(dtype_info(DType::f64).max_finite, std::numeric_limits<double>::max());
  EXPECT_EQ(dtype_info(DType::f64).min_normal, std::numeric_limits<double>::min());
  EXPECT_EQ(dtype_info(DType::f16).unit_roundoff, std::ldexp(1.0, -11));
  EXPECT_EQ(dtype_info(DType::bf16).unit_roundoff, std::ldexp(1.0, -8));
  EXPECT_EQ(dtype_info(DType::f32).unit_roundoff, std::ldexp(1.0, -24));
  EXPECT_EQ(dtype_info(DType::f64).unit_roundoff, std::ldexp(1.0, -53));
  EXPECT_EQ(dtype_info(DType::f16).default_accum, DType::f32);
  EXPECT_EQ(dtype_info(DType::bf16).default_accum, DType::f32);
  EXPECT_EQ(dtype_info(DType::f64).default_accum, DType::f64);
  for (const char* name : {"f16", "bf16", "f32", "f64"}) EXPECT_EQ(dtype_info(*parse_dtype(name)).name, name);
  EXPECT_FALSE(parse_dtype("f8").has_value());
}

TEST(DType, EveryHalfPatternRoundTrips) {
  for (const FloatFormat* f : kHalfFormats)
    for (uint32_t b = 0; b < 65536; ++b) {
      const double v = decode_bits(b, *f);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(decode_bits(round_to_format(v, *f), *f)));
        continue;
      }
      ASSERT_EQ(encode_exact(v, *f), b) << "pattern " << b;
      ASSERT_EQ(round_to_format(v, *f), b) << "pattern " << b;
    }
}

TEST(DType, EveryTieRoundsToEvenAndNeighboursToNearest) {
  for (const FloatFormat* f : kHalfFormats)
    for (uint32_t b = 0; b + 1 < 65536; ++b) {
      if ((b & 0x7fffu) == 0x7fffu || is_nan_pattern(b, *f) || is_nan_pattern(b + 1, *f)) continue;
      const double a = decode_bits(b, *f), c = decode_bits(b + 1, *f);
      if (std::isinf(a) || std::isinf(c) || (a == 0 && c == 0)) continue;
      const double mid = a + (c - a) / 2;  // exact in double
      ASSERT_EQ(round_to_format(mid, *f), even_of(b, b + 1)) << std::hexfloat << mid;
      const double below = std::nextafter(mid, a), above = std::nextafter(mid, c);
      ASSERT_EQ(round_to_format(below, *f), b) << std::hexfloat << below;
      ASSERT_EQ(round_to_format(above, *f), b + 1) << std::hexfloat << above;
    }
}

TEST(DType, OverflowThresholdIsMaxPlusHalfUlp) {
  for (const FloatFormat* f : kHalfFormats) {
    const double max = max_finite(*f), half_ulp = ulp_at(max, *f) / 2;
    EXPECT_EQ(decode_bits(round_to_format(max + half_ulp, *f), *f), HUGE_VAL);
    EXPECT_EQ(decode_bits(round_to_format(std::nextafter(max + half_ulp, 0.0), *f), *f), max);
    EXPECT_EQ(decode_bits(round_to_format(-(max + half_ulp), *f), *f), -HUGE_VAL);
  }
}

TEST(DType, DoubleToHalfRoundsOnceUnlikeEigen) {
  // 1 + 2^-11 + 2^-40 lies just above the tie between 1 and 1 + 2^-10: nearest is 0x3c01.
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(f16(x).bits(), 0x3c01);
  EXPECT_EQ(Eigen::numext::bit_cast<uint16_t>(Eigen::half(x)), 0x3c00) << "Eigen's double rounding fixed?";
}

TEST(DType, FloatToHalfAgreesWithEigenFloatPath) {
  // Eigen::half(float) and Eigen::bfloat16(float) round to nearest even (an independent reference).
  Rng rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const auto bits = static_cast<uint32_t>(rng.next());
    float v;
    std::memcpy(&v, &bits, 4);
    if (std::isnan(v)) continue;
    ASSERT_EQ(f16(v).bits(), Eigen::numext::bit_cast<uint16_t>(Eigen::half(v))) << std::hexfloat << v;
    ASSERT_EQ(bf16(v).bits(), Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(v))) << std::hexfloat << v;
  }
}

TEST(DType, DoubleToFloatMatchesHardware) {
  Rng rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const double d = std::ldexp(rng.uniform() + 0.5, static_cast<int>(rng.range(-160, 140))) * (rng.coin() ? 1 : -1);
    ASSERT_EQ(round_to_dtype(d, DType::f32), static_cast<double>(static_cast<float>(d))) << std::hexfloat << d;
  }
}

TEST(DType, MpfrToHalfIsCorrectlyRoundedOnTiesAndNearTies) {
  mpfr_t x;
  mpfr_init2(x, 300);
  for (const auto& [f, dt] : {std::pair{&kBinary16, DType::f16}, std::pair{&kBfloat16, DType::bf16}})
    for (uint32_t b = 0; b < encode_exact(max_finite(*f), *f); ++b) {
      const double a = decode_bits(b, *f), c = decode_bits(b + 1, *f);
      const double mid = a + (c - a) / 2;
      mpfr_set_d(x, mid, MPFR_RNDN);
      ASSERT_EQ(oracle::round_mpfr_to_dtype(x, dt), decode_bits(even_of(b, b + 1), *f));
      // mid +- 2^-200 relative: beyond double precision, so a double-rounding path would fail.
      mpfr_set_d(x, mid, MPFR_RNDN);
      mpfr_t tiny;
      mpfr_init2(tiny, 300);
      mpfr_set_d(tiny, mid == 0 ? std::ldexp(1.0, -1000) : std::ldexp(mid, -200), MPFR_RNDN);
      mpfr_add(x, x, tiny, MPFR_RNDN);
      ASSERT_EQ(oracle::round_mpfr_to_dtype(x, dt), c) << "pattern " << b;
      mpfr_set_d(x, mid, MPFR_RNDN);
      mpfr_sub(x, x, tiny, MPFR_RNDN);
      ASSERT_EQ(oracle::round_mpfr_to_dtype(x, dt), a) << "pattern " << b;
      mpfr_clear(tiny);
    }
  mpfr_clear(x);
}

TEST(DType, OrderedKeyCountsRepresentableSteps) {
  for (const FloatFormat* f : kHalfFormats) {
    EXPECT_EQ(ordered_key(encode_exact(0.0, *f), *f) - ordered_key(encode_exact(-0.0, *f), *f), 1);
    for (uint32_t b = 0; b < 0x7c00u; ++b) ASSERT_EQ(ordered_key(b + 1, *f) - ordered_key(b, *f), 1);
    const double one = 1.0;
    EXPECT_EQ(ordered_key(encode_exact(one, *f), *f) - ordered_key(encode_exact(-one, *f), *f),
              2 * static_cast<int64_t>(encode_exact(one, *f)) + 1);
  }
}

TEST(DType, StorageArithmeticRoundsEveryOperation) {
  // In f16, 2048 + 1 = 2048 (ties to even), while float keeps 2049.
  const f16 big(2048.0), one(1.0);
  EXPECT_EQ(static_cast<double>(big + one), 2048.0);
  EXPECT_EQ(static_cast<double>(bf16(256.0) + bf16(1.0)), 256.0);
  EXPECT_EQ(static_cast<double>(f16(65504.0) * f16(2.0)), HUGE_VAL);
}

namespace {

/// Values of every kind a storage buffer holds: zeros, subnormals, normals across the range, the
/// largest finite, infinities and NaN, each rounded to the dtype.
std::vector<double> storage_values(DType d, Rng& rng) {
  const FloatFormat& f = *dtype_info(d).format;
  std::vector<double> v = {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), decode_bits(1, f), decode_bits(encode_exact(1.0, f) - 1, f)};
  for (int k = 0; k < 2000; ++k) v.push_back(round_to_dtype(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.range(-30, 30))), d));
  const uint64_t mask = item_size(d) == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * item_size(d))) - 1;
  for (int k = 0; k < 200; ++k) v.push_back(decode_bits(rng.next() & mask, f));  // any pattern
  return v;
}

}  // namespace

TEST(DType, StorageBytesAreEachValuesEncodingAndDecodeBack) {
  // encode_values/decode_values copy f64 and convert f32 in bulk: the bytes must equal the generic
  // format code's encoding of each value (NaN canonical), and decoding must give the value back.
  Rng rng(0x5b);
  for (const DType d : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    const FloatFormat& f = *dtype_info(d).format;
    const std::vector<double> v = storage_values(d, rng);
    std::string bytes = "ab";  // appended after what is there
    encode_values(v, d, bytes);
    ASSERT_EQ(bytes.size(), 2 + v.size() * item_size(d));
    const auto* at = reinterpret_cast<const uint8_t*>(bytes.data()) + 2;
    const std::vector<double> back = decode_values(at, v.size(), d);
    for (size_t i = 0; i < v.size(); ++i) {
      uint64_t bits = 0;
      for (size_t b = 0; b < item_size(d); ++b) bits |= static_cast<uint64_t>(at[i * item_size(d) + b]) << (8 * b);
      EXPECT_EQ(bits, encode_exact(v[i], f)) << dtype_info(d).name << " " << std::hexfloat << v[i];
      if (std::isnan(v[i])) {
        EXPECT_TRUE(std::isnan(back[i]));
        continue;
      }
      EXPECT_EQ(back[i], v[i]) << std::hexfloat << v[i];
      EXPECT_EQ(std::signbit(back[i]), std::signbit(v[i])) << std::hexfloat << v[i];
    }
  }
}
