#include "core/float_format.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace normcheck {
namespace {

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

double max_finite(const FloatFormat& f) {
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.precision), f.emax);
}

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
    magnitude = std::ldexp(static_cast<double>(mant), f.emin - mb);
  } else {
    const int e = static_cast<int>(field) - f.emax;
    magnitude = std::ldexp(static_cast<double>(mant | (uint64_t{1} << mb)), e - mb);
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
  int e2 = 0;
  std::frexp(a, &e2);
  const int e = e2 - 1;
  if (e < f.emin) {
    return sign | static_cast<uint64_t>(std::ldexp(a, mb - f.emin));
  }
  const uint64_t mant = static_cast<uint64_t>(std::ldexp(a, mb - e)) - (uint64_t{1} << mb);
  return sign | (static_cast<uint64_t>(e + f.emax) << mb) | mant;
}

uint64_t round_to_format(double x, const FloatFormat& f) {
  if (!std::isfinite(x) || x == 0.0) return encode_exact(x, f);
  const double a = std::fabs(x);
  int e2 = 0;
  std::frexp(a, &e2);
  const int e = e2 - 1 < f.emin ? f.emin : e2 - 1;
  const int quantum_exp = e - (f.precision - 1);
  // a * 2^-quantum_exp is exact (power-of-two scaling) and below 2^54: nearbyint rounds to even.
  const double units = std::nearbyint(std::ldexp(a, -quantum_exp));
  double rounded = std::ldexp(units, quantum_exp);
  if (rounded > max_finite(f)) rounded = std::numeric_limits<double>::infinity();
  return encode_exact(std::signbit(x) ? -rounded : rounded, f);
}

double ulp_at(double x, const FloatFormat& f) {
  const double a = std::fabs(x);
  int e2 = 0;
  if (std::isinf(a)) return std::ldexp(1.0, f.emax - (f.precision - 1));  // the top binade's spacing
  if (a == 0.0 || std::isnan(a)) return std::ldexp(1.0, f.emin - (f.precision - 1));
  std::frexp(a, &e2);
  int e = e2 - 1;
  if (e < f.emin) e = f.emin;
  if (e > f.emax) e = f.emax;
  return std::ldexp(1.0, e - (f.precision - 1));
}

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
