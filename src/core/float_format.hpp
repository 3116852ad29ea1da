#pragma once
/// Bit-level encoding and correctly rounded conversion for binary floating-point formats.
#include <cstdint>

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

/// Spacing of `fmt` at |x| (ulp), floored at the subnormal spacing; for +-inf, the spacing of the
/// top binade (the ULP of the largest finite value).
double ulp_at(double x, const FloatFormat& fmt);

/// Monotone integer key of a bit pattern: consecutive finite values differ by 1, -0 and +0 by 1.
int64_t ordered_key(uint64_t bits, const FloatFormat& fmt);

/// Number of steps between two values of `fmt` along its finite values, the two zeros counting as
/// one value (the sign of zero is not judged): |ULP distance|, 0 for +0 vs -0.
int64_t value_steps(uint64_t a, uint64_t b, const FloatFormat& fmt);

/// Inverse of ordered_key.
uint64_t bits_from_ordered_key(int64_t key, const FloatFormat& fmt);

}  // namespace normcheck
