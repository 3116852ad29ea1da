#pragma once
/// The one dtype-traits table: every fact about f16, bf16, f32 and f64 lives here.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/float_format.hpp"
#include "core/half_types.hpp"

namespace normcheck {

enum class DType { f16, bf16, f32, f64 };

template <class T>
struct dtype_traits;

/// Shared traits of the 16-bit storage types (f16, bf16): accumulate in f32 by default.
template <class Half, DType Id, const FloatFormat& Format>
struct half_traits {
  static constexpr DType id = Id;
  static constexpr const FloatFormat& format = Format;
  using bits_type = uint16_t;
  using default_accum = float;
  static bits_type to_bits(Half v) { return v.bits(); }
  static Half from_bits(bits_type b) { return Half::from_bits(b); }
  static Half from_double(double x) { return Half(x); }
  static double to_double(Half v) { return v.to_float(); }
  static Half sqrt(Half v) { return Half(std::sqrt(v.to_float())); }
};

template <>
struct dtype_traits<f16> : half_traits<f16, DType::f16, kBinary16> {
  static constexpr std::string_view name = "f16";
};

template <>
struct dtype_traits<bf16> : half_traits<bf16, DType::bf16, kBfloat16> {
  static constexpr std::string_view name = "bf16";
};

/// Shared traits of the hardware types (f32, f64): they accumulate in themselves by default.
/// Conversion from double is the IEEE cast (round to nearest even).
template <class T, class Bits, DType Id, const FloatFormat& Format>
struct ieee_traits {
  static constexpr DType id = Id;
  static constexpr const FloatFormat& format = Format;
  using bits_type = Bits;
  using default_accum = T;
  static bits_type to_bits(T v) {
    bits_type b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  }
  static T from_bits(bits_type b) {
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
  static T from_double(double x) { return static_cast<T>(x); }
  static double to_double(T v) { return v; }
  static T sqrt(T v) { return std::sqrt(v); }
};

template <>
struct dtype_traits<float> : ieee_traits<float, uint32_t, DType::f32, kBinary32> {
  static constexpr std::string_view name = "f32";
};

template <>
struct dtype_traits<double> : ieee_traits<double, uint64_t, DType::f64, kBinary64> {
  static constexpr std::string_view name = "f64";
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

/// The ids of all_dtypes, in order.
inline std::vector<DType> dtype_ids() {
  std::vector<DType> out;
  for_each_dtype([&](auto tag) { out.push_back(dtype_traits<decltype(tag)>::id); });
  return out;
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
