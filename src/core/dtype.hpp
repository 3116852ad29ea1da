#pragma once
/// The one dtype-traits table: every fact about f16, bf16, f32 and f64 lives here.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "core/float_format.hpp"
#include "core/half_types.hpp"

namespace normcheck {

enum class DType { f16, bf16, f32, f64 };

template <class T>
struct dtype_traits;

template <>
struct dtype_traits<f16> {
  static constexpr DType id = DType::f16;
  static constexpr std::string_view name = "f16";
  static constexpr const FloatFormat& format = kBinary16;
  using bits_type = uint16_t;
  using default_accum = float;
  static bits_type to_bits(f16 v) { return v.bits(); }
  static f16 from_bits(bits_type b) { return f16::from_bits(b); }
  static f16 from_double(double x) { return f16(x); }
  static double to_double(f16 v) { return v.to_float(); }
  static f16 sqrt(f16 v) { return f16(std::sqrt(v.to_float())); }
};

template <>
struct dtype_traits<bf16> {
  static constexpr DType id = DType::bf16;
  static constexpr std::string_view name = "bf16";
  static constexpr const FloatFormat& format = kBfloat16;
  using bits_type = uint16_t;
  using default_accum = float;
  static bits_type to_bits(bf16 v) { return v.bits(); }
  static bf16 from_bits(bits_type b) { return bf16::from_bits(b); }
  static bf16 from_double(double x) { return bf16(x); }
  static double to_double(bf16 v) { return v.to_float(); }
  static bf16 sqrt(bf16 v) { return bf16(std::sqrt(v.to_float())); }
};

template <>
struct dtype_traits<float> {
  static constexpr DType id = DType::f32;
  static constexpr std::string_view name = "f32";
  static constexpr const FloatFormat& format = kBinary32;
  using bits_type = uint32_t;
  using default_accum = float;
  static bits_type to_bits(float v) { bits_type b; std::memcpy(&b, &v, 4); return b; }
  static float from_bits(bits_type b) { float v; std::memcpy(&v, &b, 4); return v; }
  static float from_double(double x) { return static_cast<float>(x); }  // IEEE RNE
  static double to_double(float v) { return v; }
  static float sqrt(float v) { return std::sqrt(v); }
};

template <>
struct dtype_traits<double> {
  static constexpr DType id = DType::f64;
  static constexpr std::string_view name = "f64";
  static constexpr const FloatFormat& format = kBinary64;
  using bits_type = uint64_t;
  using default_accum = double;
  static bits_type to_bits(double v) { bits_type b; std::memcpy(&b, &v, 8); return b; }
  static double from_bits(bits_type b) { double v; std::memcpy(&v, &b, 8); return v; }
  static double from_double(double x) { return x; }
  static double to_double(double v) { return v; }
  static double sqrt(double v) { return std::sqrt(v); }
};

template <class Storage>
using default_accum_t = typename dtype_traits<Storage>::default_accum;

/// The list every test and the CLI loop over; nobody hand-lists dtypes elsewhere.
using all_dtypes = std::tuple<f16, bf16, float, double>;

/// Calls f(T{}) for each dtype of all_dtypes, in order.
template <class F>
void for_each_dtype(F&& f) {
  std::apply([&](auto... tag) { (f(tag), ...); }, all_dtypes{});
}

/// Runtime view of the traits table.
struct DTypeInfo {
  DType id;
  std::string_view name;
  const FloatFormat* format;
  int precision;
  double unit_roundoff;  ///< u = 2^-p
  double max_finite;
  double min_normal;
  double denorm_min;
  DType default_accum;
};

/// The runtime row of the traits table for `id`.
const DTypeInfo& dtype_info(DType id);

/// Parses "f16", "bf16", "f32", "f64"; nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view name);

/// Rounds a double correctly (nearest, ties to even) to `id` and returns it as a double.
double round_to_dtype(double x, DType id);

/// Bit pattern of a value exactly representable in `id`.
uint64_t dtype_bits(double exact_value, DType id);

/// Exact value of a bit pattern of `id`.
double dtype_value(uint64_t bits, DType id);

/// True if `x` is exactly representable in `id` (finite or not).
bool representable(double x, DType id);

}  // namespace normcheck
