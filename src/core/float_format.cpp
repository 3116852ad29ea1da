#include "core/float_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

// Bit-level arithmetic on binary64 instead of frexp/ldexp (libm calls that took a fifth of the
// default suite's CPU, issue 17 item 3). Every function here is exact: powers of two are built from
// their bit patterns, exponents read from the bits, scalings are multiplications by exact powers of
// two whose results are representable. properties/test_rounding.cpp compares them with the
// frexp/ldexp definitions on random doubles of every binade.

namespace normcheck {
namespace {

uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

constexpr uint64_t kDoubleMantissa = (uint64_t{1} << 52) - 1;

using float_format_detail::exponent_of;
using float_format_detail::pow2;

uint64_t sign_mask(const FloatFormat& f) { return uint64_t{1} << (f.total_bits - 1); }
int mantissa_bits(const FloatFormat& f) { return f.precision - 1; }
int exponent_field_max(const FloatFormat& f) { return 2 * f.emax + 1; }
uint64_t infinity_bits(const FloatFormat& f) {
  return static_cast<uint64_t>(exponent_field_max(f)) << mantissa_bits(f);
}
uint64_t quiet_nan_bits(const FloatFormat& f) {
  return infinity_bits(f) | (uint64_t{1} << (mantissa_bits(f) - 1));
}

}  // namespace

double max_finite(const FloatFormat& f) { return (2.0 - pow2(1 - f.precision)) * pow2(f.emax); }

double decode_bits(uint64_t bits, const FloatFormat& f) {
  const int mb = mantissa_bits(f);
  const bool negative = (bits & sign_mask(f)) != 0;
  const uint64_t field = (bits >> mb) & static_cast<uint64_t>(exponent_field_max(f));
  const uint64_t mant = bits & ((uint64_t{1} << mb) - 1);
  double magnitude;
  if (field == static_cast<uint64_t>(exponent_field_max(f))) {
    magnitude = mant == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  } else if (field == 0) {
    magnitude = static_cast<double>(mant) * pow2(f.emin - mb);  // exact: mant < 2^mb, a multiple of the subnormal spacing
  } else {
    const int e = static_cast<int>(field) - f.emax;
    magnitude = static_cast<double>(mant | (uint64_t{1} << mb)) * pow2(e - mb);
  }
  return negative ? -magnitude : magnitude;
}

uint64_t encode_exact(double value, const FloatFormat& f) {
  const int mb = mantissa_bits(f);
  const uint64_t sign = std::signbit(value) ? sign_mask(f) : 0;
  if (std::isnan(value)) return sign | quiet_nan_bits(f);
  const double a = std::fabs(value);
  if (std::isinf(a)) return sign | infinity_bits(f);
  if (a == 0.0) return sign;
  const int e = exponent_of(a);
  if (e < f.emin) {  // subnormal in f
    if (mb == 52) return sign | (bits_of(a) & kDoubleMantissa);  // binary64: a is a subnormal double
    return sign | static_cast<uint64_t>(a * pow2(mb - f.emin));   // exact integer below 2^mb
  }
  // a is a normal double whose low 52 - mb mantissa bits are zero (it is representable in f)
  const uint64_t mant = (bits_of(a) & kDoubleMantissa) >> (52 - mb);
  return sign | (static_cast<uint64_t>(e + f.emax) << mb) | mant;
}

namespace {

/// x rounded to f (to nearest, ties to even), as a double; +-inf beyond the overflow threshold.
double round_to_format_value(double x, const FloatFormat& f) {
  if (!std::isfinite(x) || x == 0.0 || f.precision == 53) return x;  // binary64 holds every double
  const double a = std::fabs(x);
  const int e = std::max(exponent_of(a), f.emin);
  const int quantum_exp = e - (f.precision - 1);
  // a 2^-quantum_exp is exact (a power-of-two scaling, |quantum_exp| <= 149 here) and below 2^25:
  // adding and subtracting 2^52 rounds it to an integer, to nearest with ties to even.
  const double scaled = a * pow2(-quantum_exp);
  const double units = (scaled + 0x1p52) - 0x1p52;
  double rounded = units * pow2(quantum_exp);
  if (rounded > max_finite(f)) rounded = std::numeric_limits<double>::infinity();
  return std::signbit(x) ? -rounded : rounded;
}

}  // namespace

uint64_t round_to_format(double x, const FloatFormat& f) { return encode_exact(round_to_format_value(x, f), f); }

double round_to_format_double(double x, const FloatFormat& f) { return round_to_format_value(x, f); }

int64_t ordered_key(uint64_t bits, const FloatFormat& f) {
  const uint64_t magnitude = bits & (sign_mask(f) - 1);
  // +0 -> 0, -0 -> -1, so that the two zeros are one step apart.
  return (bits & sign_mask(f)) ? -static_cast<int64_t>(magnitude) - 1
                               : static_cast<int64_t>(magnitude);
}

int64_t value_steps(uint64_t a, uint64_t b, const FloatFormat& f) {
  // Unsigned magnitudes: for f64 the two sides of zero together can exceed INT64_MAX steps.
  const uint64_t ma = a & (sign_mask(f) - 1), mb = b & (sign_mask(f) - 1);
  const bool na = (a & sign_mask(f)) && ma != 0, nb = (b & sign_mask(f)) && mb != 0;  // -0 counts as +0
  const uint64_t steps = na == nb ? (ma > mb ? ma - mb : mb - ma) : ma + mb;  // each < 2^63: no wrap
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return steps > static_cast<uint64_t>(kMax) ? kMax : static_cast<int64_t>(steps);
}

uint64_t bits_from_ordered_key(int64_t key, const FloatFormat& f) {
  return key >= 0 ? static_cast<uint64_t>(key) : (sign_mask(f) | static_cast<uint64_t>(-(key + 1)));
}

}  // namespace normcheck
