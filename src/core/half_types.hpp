#pragma once
/// Storage types binary16 (f16) and bfloat16 (bf16): bit containers with correctly rounded
/// conversions. Arithmetic on them rounds every operation to the type (float computes the exact
/// result to 24 bits >= 2p+2, so the second rounding is innocuous): this models a kernel that
/// accumulates in storage precision.
#include <cstdint>

#include "core/float_format.hpp"

namespace normcheck {

template <const FloatFormat& Format>
class SmallFloat {
 public:
  SmallFloat() = default;
  /// Correctly rounded (nearest, ties to even) from double: one rounding, unlike Eigen::half(double).
  explicit SmallFloat(double x) : bits_(static_cast<uint16_t>(round_to_format(x, Format))) {}
  explicit SmallFloat(float x) : SmallFloat(static_cast<double>(x)) {}
  static SmallFloat from_bits(uint16_t bits) {
    SmallFloat v;
    v.bits_ = bits;
    return v;
  }
  uint16_t bits() const { return bits_; }
  float to_float() const { return table()[bits_]; }
  explicit operator float() const { return to_float(); }
  explicit operator double() const { return to_float(); }

  friend SmallFloat operator+(SmallFloat a, SmallFloat b) { return SmallFloat(a.to_float() + b.to_float()); }
  friend SmallFloat operator-(SmallFloat a, SmallFloat b) { return SmallFloat(a.to_float() - b.to_float()); }
  friend SmallFloat operator*(SmallFloat a, SmallFloat b) { return SmallFloat(a.to_float() * b.to_float()); }
  friend SmallFloat operator/(SmallFloat a, SmallFloat b) { return SmallFloat(a.to_float() / b.to_float()); }
  friend SmallFloat operator-(SmallFloat a) { return from_bits(static_cast<uint16_t>(a.bits_ ^ 0x8000u)); }
  SmallFloat& operator+=(SmallFloat b) { return *this = *this + b; }
  SmallFloat& operator-=(SmallFloat b) { return *this = *this - b; }
  SmallFloat& operator*=(SmallFloat b) { return *this = *this * b; }
  friend bool operator<(SmallFloat a, SmallFloat b) { return a.to_float() < b.to_float(); }

 private:
  /// Exact decoding of all 65,536 patterns, built once.
  static const float* table() {
    static const float* t = [] {
      static float values[65536];
      for (uint32_t b = 0; b < 65536; ++b) values[b] = static_cast<float>(decode_bits(b, Format));
      return values;
    }();
    return t;
  }
  uint16_t bits_ = 0;
};

using f16 = SmallFloat<kBinary16>;
using bf16 = SmallFloat<kBfloat16>;

}  // namespace normcheck
