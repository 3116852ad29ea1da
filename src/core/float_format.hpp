#pragma once
/// Bit-level encoding and correctly rounded conversion for binary floating-point formats.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace normcheck {

/// Parameters of a binary interchange format (precision includes the hidden bit).
struct FloatFormat {
  int precision;
  int emin;
  int emax;
  int total_bits;
};

inline constexpr FloatFormat kBinary16{11, -14, 15, 16};
inline constexpr FloatFormat kBfloat16{8, -126, 127, 16};
inline constexpr FloatFormat kBinary32{24, -126, 127, 32};
inline constexpr FloatFormat kBinary64{53, -1022, 1023, 64};

/// Decodes a bit pattern of `fmt` exactly into a double (every format here fits in double).
double decode_bits(uint64_t bits, const FloatFormat& fmt);

/// Encodes a double that is exactly representable in `fmt` (or ±inf, NaN) as its bit pattern.
uint64_t encode_exact(double value, const FloatFormat& fmt);

/// Rounds `x` to `fmt`, to nearest with ties to even, in one step (no double rounding).
uint64_t round_to_format(double x, const FloatFormat& fmt);

/// The same rounding as a double (decode_bits(round_to_format(x))), without the encoding.
double round_to_format_double(double x, const FloatFormat& fmt);

/// Largest finite value of `fmt`.
double max_finite(const FloatFormat& fmt);

namespace float_format_detail {

/// 2^k exactly, for k in [-1074, 1023], from its bit pattern.
inline double pow2(int k) {
  const uint64_t bits = k >= -1022 ? static_cast<uint64_t>(k + 1023) << 52 : uint64_t{1} << (k + 1074);
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

/// floor(log2(a)) for a finite a > 0 (subnormal doubles included), from its bits.
inline int exponent_of(double a) {
  uint64_t b;
  std::memcpy(&b, &a, sizeof b);
  const int field = static_cast<int>((b >> 52) & 0x7ff);
  if (field != 0) return field - 1023;
  return 63 - __builtin_clzll(b & ((uint64_t{1} << 52) - 1)) - 1074;
}

}  // namespace float_format_detail

/// v 2^k, exactly as std::ldexp(v, k) gives it (one rounding to nearest, ties to even, where the
/// result is subnormal; +-inf on overflow), without the libm call: one multiplication by an exact
/// power of two, or for |k| beyond a double's exponents two, the first of which is exact (its
/// result stays normal). Inline: judging scales every element of a tiny or huge reference.
inline double scale_by_pow2(double v, int k) {
  using namespace float_format_detail;
  if (k >= -1022 && k <= 1023) return v * pow2(k);
  if (v == 0 || !std::isfinite(v)) return v;
  if (k > 1023 && k <= 2046) return (v * pow2(k - 1023)) * pow2(1023);  // the first product only grows v: exact or inf
  if (k < -1022 && k >= -2044 && exponent_of(std::fabs(v)) + k >= -2044)
    return (v * pow2(k + 1022)) * pow2(-1022);  // the first product stays normal: exact
  return std::ldexp(v, k);
}

/// Spacing of `fmt` at |x| (ulp), floored at the subnormal spacing; for +-inf, the spacing of the
/// top binade (the ULP of the largest finite value). Inline: every judged element needs it.
inline double ulp_at(double x, const FloatFormat& f) {
  using namespace float_format_detail;
  const double a = std::fabs(x);
  if (std::isinf(a)) return pow2(f.emax - (f.precision - 1));  // the top binade's spacing
  if (a == 0.0 || std::isnan(a)) return pow2(f.emin - (f.precision - 1));
  const int e = std::min(std::max(exponent_of(a), f.emin), f.emax);
  return pow2(e - (f.precision - 1));
}

/// Monotone integer key of a bit pattern: consecutive finite values differ by 1, -0 and +0 by 1.
int64_t ordered_key(uint64_t bits, const FloatFormat& fmt);

/// Number of steps between two values of `fmt` along its finite values, the two zeros counting as
/// one value (the sign of zero is not judged): |ULP distance|, 0 for +0 vs -0.
int64_t value_steps(uint64_t a, uint64_t b, const FloatFormat& fmt);

/// Inverse of ordered_key.
uint64_t bits_from_ordered_key(int64_t key, const FloatFormat& fmt);

}  // namespace normcheck
