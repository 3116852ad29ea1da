/// Protobuf wire-format decoding of ONNX TensorProto messages.
#include "properties/onnx_testdata.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace normcheck::onnx {
namespace {

/// Largest tensor accepted, so that a corrupt dims field cannot demand a huge allocation.
constexpr int64_t kMaxElements = int64_t{1} << 28;
/// TensorProto.DataType FLOAT.
constexpr int64_t kFloat = 1;

/// Reassembles a little-endian 32-bit word from bytes, independent of host byte order.
uint32_t load_le32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

/// Product of dims; throws on negative dims or more than kMaxElements elements.
int64_t element_count(const std::vector<int64_t>& dims, const std::string& context) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw std::runtime_error(context + ": negative dimension in " + dims_string(dims));
    if (d != 0 && count > kMaxElements / d)
      throw std::runtime_error(context + ": tensor too large " + dims_string(dims));
    count *= d;
  }
  return count;
}

/// dims (field 1): one varint, or a packed run of varints.
void read_dims(WireReader& r, const FieldKey& k, std::vector<int64_t>& dims) {
  if (k.type == WireType::varint) {
    dims.push_back(static_cast<int64_t>(r.varint()));
    return;
  }
  r.expect_type(k, WireType::length_delimited, "dims");
  WireReader packed(r.bytes(), r.context() + ".dims");
  while (!packed.done()) dims.push_back(static_cast<int64_t>(packed.varint()));
}

/// float_data (field 4): one fixed32, or a packed run of little-endian floats.
void read_float_data(WireReader& r, const FieldKey& k, std::vector<float>& out) {
  if (k.type == WireType::fixed32) {
    out.push_back(bits_to_float(r.fixed32()));
    return;
  }
  r.expect_type(k, WireType::length_delimited, "float_data");
  const std::string_view b = r.bytes();
  if (b.size() % 4 != 0) r.fail("packed float_data length " + std::to_string(b.size()) + " is not a multiple of 4");
  for (size_t i = 0; i < b.size(); i += 4) out.push_back(bits_to_float(load_le32(b.data() + i)));
}

/// Fields of a TensorProto as they appear on the wire.
struct TensorFields {
  OnnxTensor t;
  int64_t data_type = 0;
  bool has_raw = false, has_float = false;
  std::string_view raw;
};

/// Reads the fields of a TensorProto; rejects external or segmented data.
TensorFields read_tensor_fields(WireReader& r) {
  TensorFields f;
  while (!r.done()) {
    const FieldKey k = r.key();
    if (k.number == 1) {
      read_dims(r, k, f.t.dims);
    } else if (k.number == 2) {
      r.expect_type(k, WireType::varint, "data_type");
      f.data_type = static_cast<int64_t>(r.varint());
    } else if (k.number == 4) {
      read_float_data(r, k, f.t.data);
      f.has_float = true;
    } else if (k.number == 8) {
      r.expect_type(k, WireType::length_delimited, "name");
      f.t.name = std::string(r.bytes());
    } else if (k.number == 9) {
      r.expect_type(k, WireType::length_delimited, "raw_data");
      f.raw = r.bytes();
      f.has_raw = true;
    } else if (k.number == 3 || k.number == 13 || k.number == 14) {
      r.fail("segmented or external tensor data (field " + std::to_string(k.number) + ") is not supported");
    } else {
      r.skip(k.type);
    }
  }
  return f;
}

}  // namespace

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << ']';
  return s.str();
}

WireReader::WireReader(std::string_view bytes, std::string context) : bytes_(bytes), context_(std::move(context)) {}

void WireReader::fail(const std::string& what) const {
  throw std::runtime_error(context_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
}

uint64_t WireReader::varint() {
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (done()) fail("truncated varint");
    const auto b = static_cast<unsigned char>(bytes_[pos_++]);
    if (i == 9 && b > 1) fail("varint overflows 64 bits");
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return v;
  }
  fail("varint longer than 10 bytes");
}

FieldKey WireReader::key() {
  const uint64_t k = varint();
  const uint64_t number = k >> 3, type = k & 7;
  if (number == 0 || number > 0x1fffffff) fail("invalid field number " + std::to_string(number));
  if (type == 3 || type == 4) fail("group wire types are not supported");
  if (type != 0 && type != 1 && type != 2 && type != 5) fail("invalid wire type " + std::to_string(type));
  return {static_cast<uint32_t>(number), static_cast<WireType>(type)};
}

uint32_t WireReader::fixed32() {
  if (bytes_.size() - pos_ < 4) fail("truncated 32-bit field");
  const uint32_t v = load_le32(bytes_.data() + pos_);
  pos_ += 4;
  return v;
}

uint64_t WireReader::fixed64() {
  if (bytes_.size() - pos_ < 8) fail("truncated 64-bit field");
  const uint64_t lo = load_le32(bytes_.data() + pos_), hi = load_le32(bytes_.data() + pos_ + 4);
  pos_ += 8;
  return lo | (hi << 32);
}

std::string_view WireReader::bytes() {
  const uint64_t len = varint();
  if (len > bytes_.size() - pos_)
    fail("length " + std::to_string(len) + " runs past the end (" + std::to_string(bytes_.size() - pos_) + " left)");
  const std::string_view out = bytes_.substr(pos_, static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return out;
}

void WireReader::skip(WireType t) {
  switch (t) {
    case WireType::varint: varint(); return;
    case WireType::fixed64: fixed64(); return;
    case WireType::length_delimited: bytes(); return;
    case WireType::fixed32: fixed32(); return;
  }
  fail("invalid wire type");
}

void WireReader::expect_type(const FieldKey& k, WireType want, const char* field) const {
  if (k.type != want)
    fail(std::string("field ") + field + " has wire type " + std::to_string(static_cast<uint32_t>(k.type)) +
         ", expected " + std::to_string(static_cast<uint32_t>(want)));
}

OnnxTensor parse_tensor(std::string_view bytes, const std::string& context) {
  WireReader r(bytes, context);
  TensorFields f = read_tensor_fields(r);
  if (f.data_type != kFloat)
    r.fail("unsupported data_type " + std::to_string(f.data_type) + " (only FLOAT = 1 is supported)");
  if (f.has_raw && f.has_float) r.fail("both raw_data and float_data are present");
  const int64_t count = element_count(f.t.dims, context);
  if (f.has_raw) {
    if (f.raw.size() % 4 != 0) r.fail("raw_data length " + std::to_string(f.raw.size()) + " is not a multiple of 4");
    for (size_t i = 0; i < f.raw.size(); i += 4) f.t.data.push_back(bits_to_float(load_le32(f.raw.data() + i)));
  }
  if (static_cast<int64_t>(f.t.data.size()) != count)
    r.fail("dims " + dims_string(f.t.dims) + " need " + std::to_string(count) + " values, found " +
           std::to_string(f.t.data.size()));
  return std::move(f.t);
}

std::vector<int64_t> parse_tensor_dims(std::string_view bytes) { return parse_tensor(bytes).dims; }

std::string read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return data;
}

OnnxTensor read_tensor_file(const std::string& path) { return parse_tensor(read_binary_file(path), path); }

RowShape row_shape(const std::vector<int64_t>& dims, int64_t axis) {
  const auto rank = static_cast<int64_t>(dims.size());
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw std::runtime_error("axis " + std::to_string(axis) + " out of range for shape " + dims_string(dims));
  RowShape s{a, 1, 1};
  for (int64_t i = 0; i < rank; ++i) {
    int64_t& part = i < a ? s.rows : s.n;
    const int64_t d = dims[static_cast<size_t>(i)];
    if (d < 0 || __builtin_mul_overflow(part, d, &part))
      throw std::runtime_error("shape " + dims_string(dims) + " has a negative dimension or more elements than int64 holds");
  }
  return s;
}

}  // namespace normcheck::onnx
