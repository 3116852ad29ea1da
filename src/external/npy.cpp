#include "external/npy.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/storage_bytes.hpp"

namespace normcheck::external {
namespace {

const char* descr_of(DType d) {
  switch (d) {
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
  }
  return "?";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const std::vector<double>& values) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr_of(dtype), shape_text(shape));
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xff));
  out += header;
  encode_values(values, dtype, out);
  std::ofstream f(path, std::ios::binary);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) throw NpyError("cannot write '" + path + "'");
}

std::vector<double> read_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NpyError(fmt::format("output '{}' is missing", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw NpyError(fmt::format("'{}' is not a .npy file", path));
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int b = 0; b < 4; ++b) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    start = 12;
  } else {
    throw NpyError(fmt::format("'{}' has an unsupported .npy version {}", path, major));
  }
  if (start + header_len > bytes.size()) throw NpyError(fmt::format("'{}' is truncated (header)", path));
  const std::string header = bytes.substr(start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")) || m[1] != descr_of(dtype))
    throw NpyError(fmt::format("'{}' has dtype {}, expected '{}' for {}", path, m.size() > 1 ? std::string(m[1]) : "?", descr_of(dtype),
                               dtype_info(dtype).name));
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True")))
    throw NpyError(fmt::format("'{}' is in Fortran order; write C-order arrays", path));
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw NpyError(fmt::format("'{}' has no shape in its header", path));
  std::vector<int64_t> got;
  std::stringstream dims(m[1]);
  for (std::string d; std::getline(dims, d, ',');) {
    const size_t a = d.find_first_not_of(" "), b = d.find_last_not_of(" ");
    if (a == std::string::npos) continue;
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(d.data() + a, d.data() + b + 1, v);
    if (ec != std::errc() || end != d.data() + b + 1 || v < 0)
      throw NpyError(fmt::format("'{}' has a malformed shape '({})'", path, std::string(m[1])));
    got.push_back(v);
  }
  if (got != shape)
    throw NpyError(fmt::format("'{}' has shape ({}), expected ({})", path, fmt::join(got, ", "), fmt::join(shape, ", ")));
  size_t count = 1;
  for (int64_t s : shape) count *= static_cast<size_t>(s);
  const size_t data = start + header_len;
  if (bytes.size() - data != count * item_size(dtype))
    throw NpyError(fmt::format("'{}' holds {} data bytes, expected {}", path, bytes.size() - data, count * item_size(dtype)));
  return decode_values(reinterpret_cast<const uint8_t*>(bytes.data() + data), count, dtype);
}

}  // namespace normcheck::external
