#include "external/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/storage_bytes.hpp"
#include "io/json_input.hpp"

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

/// NumPy's own limit on a header it will read (numpy.lib.format, _MAX_HEADER_SIZE).
constexpr size_t kMaxHeaderBytes = 10000;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

/// A cursor over the header's Python-literal dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// Iterative, no regular expressions (std::regex recursed itself into a stack overflow on a
/// 50 KB header), every malformation one NpyError.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : t_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    expect('{');
    while (skip_space(), peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        h.descr = string_literal();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = int_tuple();
        h.has_shape = true;
      } else {
        fail("an unknown key '" + key.substr(0, 40) + "'");
      }
      skip_space();
      if (peek() == ',') ++at_;
    }
    ++at_;
    if (!h.has_descr || !h.has_order || !h.has_shape) fail("no 'descr', 'fortran_order' or 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(fmt::format("'{}' has a malformed .npy header ({} at byte {})", path_, what, at_));
  }
  char peek() const { return at_ < t_.size() ? t_[at_] : '\0'; }
  void skip_space() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\t' || t_[at_] == '\n')) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("'{}' expected", c));
    ++at_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("a string expected");
    const size_t end = t_.find(quote, at_ + 1);
    if (end == std::string_view::npos) fail("an unterminated string");
    std::string s(t_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}})
      if (t_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return value;
      }
    fail("True or False expected");
  }
  std::vector<int64_t> int_tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (skip_space(), peek() != ')') {
      int64_t v = -1;
      const auto [end, ec] = std::from_chars(t_.data() + at_, t_.data() + t_.size(), v);
      if (ec != std::errc() || v < 0) fail("a dimension expected");
      at_ = static_cast<size_t>(end - t_.data());
      dims.push_back(v);
      skip_space();
      if (peek() == ',') ++at_;
      else if (peek() != ')') fail("',' or ')' expected");
    }
    ++at_;
    return dims;
  }

  std::string_view t_;
  const std::string& path_;
  size_t at_ = 0;
};

NpyHeader parse_header(std::string_view text, const std::string& path) { return HeaderParser(text, path).parse(); }

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
  // A kernel wrote this file: opened without blocking (a FIFO would wait for a writer forever), read
  // only when it is a regular file no larger than a .npy of this shape can be (issue 48, H3 and H4).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw NpyError(fmt::format("output '{}' is missing", printable(path)));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw NpyError(fmt::format("output '{}' is not a regular file (a FIFO, a device or a directory)", printable(path)));
  size_t count = 1;
  for (int64_t s : shape) count *= static_cast<size_t>(s);
  const size_t most = 12 + kMaxHeaderBytes + count * item_size(dtype);
  if (static_cast<uint64_t>(st.st_size) > most) {
    char head[12] = {};  // a declared header beyond the limit is named as such (parse_npy checks it first)
    const ssize_t n = ::read(fd, head, sizeof head);
    if (n == static_cast<ssize_t>(sizeof head)) {
      try {
        parse_npy(std::string_view(head, sizeof head), dtype, shape, path);
      } catch (const NpyError& e) {
        if (std::string_view(e.what()).find("-byte header") != std::string_view::npos) throw;
      }
    }
    throw NpyError(fmt::format("output '{}' is {} bytes; a .npy of shape ({}) holds at most {}", printable(path), st.st_size,
                               fmt::join(shape, ", "), most));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  bytes.resize(got);
  return parse_npy(bytes, dtype, shape, path);
}

std::vector<double> parse_npy(std::string_view bytes, DType dtype, const std::vector<int64_t>& shape, const std::string& path) {
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
  if (header_len > kMaxHeaderBytes)
    throw NpyError(fmt::format("'{}' has a {}-byte header; at most {} accepted (as NumPy)", path, header_len, kMaxHeaderBytes));
  if (start + header_len > bytes.size()) throw NpyError(fmt::format("'{}' is truncated (header)", path));
  const NpyHeader h = parse_header(std::string_view(bytes).substr(start, header_len), path);
  if (h.descr != descr_of(dtype))
    throw NpyError(fmt::format("'{}' has dtype {}, expected '{}' for {}", path, printable(h.descr.substr(0, 40)), descr_of(dtype), dtype_info(dtype).name));
  if (h.fortran_order) throw NpyError(fmt::format("'{}' is in Fortran order; write C-order arrays", path));
  const std::vector<int64_t>& got = h.shape;
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
