#include "core/storage_bytes.hpp"

#include <cmath>
#include <cstring>

#include "core/float_format.hpp"

namespace normcheck {

size_t item_size(DType d) { return d == DType::f64 ? 8 : d == DType::f32 ? 4 : 2; }

namespace {

/// The bits of v in f32 or f64 by a hardware conversion (exact for representable values), or
/// nullopt for NaN (canonicalized by encode_exact) and other dtypes.
bool hardware_bits(double v, DType d, uint64_t& bits) {
  if (std::isnan(v)) return false;
  if (d == DType::f64) {
    std::memcpy(&bits, &v, 8);
    return true;
  }
  if (d == DType::f32) {
    const float f = static_cast<float>(v);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    bits = w;
    return true;
  }
  return false;
}

}  // namespace

void encode_values(const std::vector<double>& values, DType d, std::string& out) {
  const FloatFormat& f = *dtype_info(d).format;
  out.reserve(out.size() + values.size() * item_size(d));
  for (double v : values) {
    uint64_t bits = 0;
    if (!hardware_bits(v, d, bits)) bits = encode_exact(v, f);
    for (size_t b = 0; b < item_size(d); ++b) out.push_back(static_cast<char>((bits >> (8 * b)) & 0xffu));
  }
}

std::vector<double> decode_values(const uint8_t* bytes, size_t count, DType d) {
  const FloatFormat& f = *dtype_info(d).format;
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < item_size(d); ++b) bits |= static_cast<uint64_t>(bytes[i * item_size(d) + b]) << (8 * b);
    if (d == DType::f64 && (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull) {  // finite: the bits are the double
      std::memcpy(&out[i], &bits, 8);
    } else if (d == DType::f32 && (bits & 0x7f800000u) != 0x7f800000u) {
      float v;
      const auto w = static_cast<uint32_t>(bits);
      std::memcpy(&v, &w, 4);
      out[i] = v;
    } else {
      out[i] = decode_bits(bits, f);
    }
  }
  return out;
}

}  // namespace normcheck
