#include "contraction/safetensors.hpp"

#include "core/storage_bytes.hpp"
#include "io/output_files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace normcheck {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // 100 MB, as the reference implementation

const char* st_name(DType d) {
  switch (d) {
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
  }
  return "?";
}

DType st_dtype(const std::string& s, const std::string& tensor) {
  for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64})
    if (s == st_name(d)) return d;
  throw SafetensorsError(fmt::format("tensor '{}' has dtype '{}' (supported: F16, BF16, F32, F64)", tensor, s));
}

Tensor parse_tensor(const std::string& name, const nlohmann::json& info, const std::string& data, const std::string& what,
                    std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
    throw SafetensorsError(fmt::format("{}: tensor '{}' lacks dtype, shape or data_offsets", what, name));
  const auto& shape = info.at("shape");
  const auto& off = info.at("data_offsets");
  if (!info.at("dtype").is_string() || !shape.is_array() || !off.is_array() || off.size() != 2)
    throw SafetensorsError(fmt::format("{}: tensor '{}' has a malformed entry", what, name));
  Tensor t;
  t.dtype = st_dtype(info.at("dtype").get<std::string>(), name);
  uint64_t numel = 1;
  for (const auto& s : shape) {
    if (!s.is_number_unsigned()) throw SafetensorsError(fmt::format("{}: tensor '{}' has a non-integer or negative dimension", what, name));
    const uint64_t v = s.get<uint64_t>();
    if (v > std::numeric_limits<uint32_t>::max() || (v != 0 && numel > std::numeric_limits<uint32_t>::max() / v))
      throw SafetensorsError(fmt::format("{}: tensor '{}' is too large", what, name));
    numel *= v;
    t.shape.push_back(static_cast<int64_t>(v));
  }
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw SafetensorsError(fmt::format("{}: tensor '{}' has malformed data_offsets", what, name));
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > data.size())
    throw SafetensorsError(fmt::format("{}: tensor '{}' data_offsets [{}, {}] outside the {} data bytes", what, name, begin, end, data.size()));
  if (end - begin != numel * item_size(t.dtype))
    throw SafetensorsError(fmt::format("{}: tensor '{}' has {} bytes for shape of {} values of {}", what, name, end - begin, numel,
                                       info.at("dtype").get<std::string>()));
  ranges.emplace_back(begin, end);
  t.values = decode_values(reinterpret_cast<const uint8_t*>(data.data()) + begin, numel, t.dtype);
  for (uint64_t i = 0; i < numel; ++i)
    if (!std::isfinite(t.values[i])) throw SafetensorsError(fmt::format("{}: tensor '{}' value {} is not finite", what, name, i));
  return t;
}

}  // namespace

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 8) throw SafetensorsError(fmt::format("{}: not a safetensors file (shorter than 8 bytes)", what));
  uint64_t n = 0;
  for (int b = 0; b < 8; ++b) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[b])) << (8 * b);
  if (n > kMaxHeader || n > bytes.size() - 8)
    throw SafetensorsError(fmt::format("{}: header length {} exceeds the file ({} bytes)", what, n, bytes.size()));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::parse_error&) {
    throw SafetensorsError(fmt::format("{}: header is not valid JSON", what));
  }
  if (!header.is_object()) throw SafetensorsError(fmt::format("{}: header is not a JSON object", what));
  const std::string data = bytes.substr(8 + n);
  SafetensorsFile f;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw SafetensorsError(fmt::format("{}: __metadata__ is not an object", what));
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) throw SafetensorsError(fmt::format("{}: metadata '{}' is not a string", what, k));
        f.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    f.tensors[name] = parse_tensor(name, info, data, what, ranges);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t cursor = 0;
  for (const auto& [b, e] : ranges) {
    if (b != cursor) throw SafetensorsError(fmt::format("{}: tensor data overlaps or leaves a gap at byte {}", what, b));
    cursor = e;
  }
  if (cursor != data.size()) throw SafetensorsError(fmt::format("{}: {} trailing data bytes not owned by any tensor", what, data.size() - cursor));
  return f;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SafetensorsError(fmt::format("cannot open '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_safetensors(ss.str(), "'" + path + "'");
}

std::string serialize_safetensors(const SafetensorsFile& f) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : f.tensors) {
    if (static_cast<int64_t>(t.values.size()) != t.numel())
      throw SafetensorsError(fmt::format("tensor '{}' has {} values for its shape", name, t.values.size()));
    const size_t begin = data.size();
    for (double v : t.values)
      if (!std::isfinite(v) || !representable(v, t.dtype))
        throw SafetensorsError(fmt::format("tensor '{}' value {} is not exact in {}", name, v, dtype_info(t.dtype).name));
    encode_values(t.values, t.dtype, data);
    header[name] = {{"dtype", st_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // align the data, as the reference writer does
  std::string out;
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((static_cast<uint64_t>(h.size()) >> (8 * b)) & 0xffu));
  return out + h + data;
}

void write_safetensors(const std::string& path, const SafetensorsFile& f) {
  try {
    write_file_atomically(path, serialize_safetensors(f));
  } catch (const std::runtime_error& e) {
    throw SafetensorsError(e.what());
  }
}

}  // namespace normcheck
