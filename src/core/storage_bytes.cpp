#include "core/storage_bytes.hpp"

#include "core/float_format.hpp"

namespace normcheck {

size_t item_size(DType d) { return d == DType::f64 ? 8 : d == DType::f32 ? 4 : 2; }

void encode_values(const std::vector<double>& values, DType d, std::string& out) {
  const FloatFormat& f = *dtype_info(d).format;
  for (double v : values) {
    const uint64_t bits = encode_exact(v, f);
    for (size_t b = 0; b < item_size(d); ++b) out.push_back(static_cast<char>((bits >> (8 * b)) & 0xffu));
  }
}

std::vector<double> decode_values(const uint8_t* bytes, size_t count, DType d) {
  const FloatFormat& f = *dtype_info(d).format;
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < item_size(d); ++b) bits |= static_cast<uint64_t>(bytes[i * item_size(d) + b]) << (8 * b);
    out[i] = decode_bits(bits, f);
  }
  return out;
}

}  // namespace normcheck
