#include "core/storage_bytes.hpp"

#include <cmath>
#include <cstring>

#include "core/float_format.hpp"

namespace normcheck {

size_t item_size(DType d) { return d == DType::f64 ? 8 : d == DType::f32 ? 4 : 2; }

void put_bits(void* at, uint64_t bits, size_t item) {
  auto* bytes = static_cast<unsigned char*>(at);
  for (size_t b = 0; b < item; ++b) bytes[b] = static_cast<unsigned char>((bits >> (8 * b)) & 0xffu);
}

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "storage bytes are little-endian: this host's f32/f64 are copied as they are");

uint64_t get_bits(const uint8_t* at, size_t item) {
  uint64_t bits = 0;
  for (size_t b = 0; b < item; ++b) bits |= static_cast<uint64_t>(at[b]) << (8 * b);
  return bits;
}

}  // namespace

// f64 and f32 are the host's own encodings: one copy (f64) or one hardware conversion (f32) per value,
// with NaN (canonicalized by encode_exact) and, when decoding, Inf and NaN bits (decode_bits) taken
// through the generic format code.
void encode_values(const std::vector<double>& values, DType d, std::string& out) {
  const FloatFormat& f = *dtype_info(d).format;
  const size_t item = item_size(d), start = out.size();
  out.resize(start + values.size() * item);
  char* at = out.data() + start;
  if (d == DType::f64 && !values.empty()) std::memcpy(at, values.data(), values.size() * item);
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v)) put_bits(at + i * item, encode_exact(v, f), item);
    else if (d == DType::f32) {
      const float w = static_cast<float>(v);
      std::memcpy(at + i * item, &w, item);
    } else if (d != DType::f64) put_bits(at + i * item, encode_exact(v, f), item);
  }
}

std::vector<double> decode_values(const uint8_t* bytes, size_t count, DType d) {
  std::vector<double> out(count);
  decode_values_to(bytes, count, d, out.data());
  return out;
}

void decode_values_to(const uint8_t* bytes, size_t count, DType d, double* out) {
  const FloatFormat& f = *dtype_info(d).format;
  const size_t item = item_size(d);
  if (d == DType::f64 && count > 0) std::memcpy(out, bytes, count * item);
  for (size_t i = 0; i < count; ++i) {
    if (d == DType::f64) {
      if (!std::isfinite(out[i])) out[i] = decode_bits(get_bits(bytes + i * item, item), f);
    } else if (d == DType::f32) {
      float v;
      std::memcpy(&v, bytes + i * item, item);
      out[i] = std::isfinite(v) ? static_cast<double>(v) : decode_bits(get_bits(bytes + i * item, item), f);
    } else {
      out[i] = decode_bits(get_bits(bytes + i * item, item), f);
    }
  }
}

}  // namespace normcheck
