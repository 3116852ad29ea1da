#include "external/call_layout.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "core/storage_bytes.hpp"

namespace normcheck::external {
namespace {

void put_bits(std::vector<uint8_t>& block, size_t offset, uint64_t bits, size_t item) {
  for (size_t b = 0; b < item; ++b) block[offset + b] = static_cast<uint8_t>((bits >> (8 * b)) & 0xffu);
}

/// Writes a slot: `values` (rows x n, or none) in the row-major cells, `fill` everywhere else
/// (cells when values is null, padding, guard).
void write_slot(std::vector<uint8_t>& block, const TensorSlot& s, DType d, const std::vector<double>* values,
                uint64_t fill_cells, uint64_t fill_padding) {
  if (!s.present) return;
  const size_t item = item_size(d);
  std::string encoded;
  if (values) encode_values(*values, d, encoded);
  for (int64_t k = 0; k < s.rows * s.stride + kGuardElements; ++k) {
    const size_t at = s.offset + static_cast<size_t>(k) * item;
    const int64_t row = k / s.stride, col = k % s.stride;
    const bool cell = row < s.rows && col < s.n;
    if (cell && values)
      std::memcpy(&block[at], encoded.data() + static_cast<size_t>(row * s.n + col) * item, item);
    else
      put_bits(block, at, cell ? fill_cells : fill_padding, item);
  }
}

/// Places a slot of rows x n at `cursor` with the given stride (or none when absent).
TensorSlot place(size_t& cursor, int64_t rows, int64_t n, int64_t stride, bool present, size_t item) {
  TensorSlot s{cursor, rows, n, stride, present};
  if (present) cursor += s.bytes(item);
  return s;
}

}  // namespace

uint64_t input_sentinel_bits(DType d) {
  switch (d) {
    case DType::f16: return 0x7e5aull;
    case DType::bf16: return 0x7fc5ull;
    case DType::f32: return 0x7fc5a5a5ull;
    case DType::f64: return 0x7ff8a5a5a5a5a5a5ull;
  }
  return 0;
}

uint64_t output_sentinel_bits(DType d) {
  switch (d) {
    case DType::f16: return 0x7e3cull;
    case DType::bf16: return 0x7fc3ull;
    case DType::f32: return 0x7fc3c3c3ull;
    case DType::f64: return 0x7ff8c3c3c3c3c3c3ull;
  }
  return 0;
}

CallStrides call_strides(const LayerNormCase& c, Op op) {
  Rng rng(derive_seed(case_digest(c), static_cast<uint64_t>(op)));
  CallStrides s{c.n, c.n, c.n, c.n};
  if (rng.range(0, 3) == 0) return s;
  static constexpr int64_t kPads[] = {1, 2, 3, 5, 8, 17};
  for (int64_t* stride : {&s.x, &s.dy, &s.y, &s.dx}) *stride += kPads[rng.range(0, 5)];
  return s;
}

CallLayout call_layout(const LayerNormCase& c, Op op, const CallStrides& s) {
  const size_t item = item_size(c.dtype);
  const bool backward = is_backward(op), rms = is_rmsnorm(op);
  CallLayout l;
  l.dtype = c.dtype;
  size_t at = 0;
  l.x = place(at, c.rows, c.n, s.x, true, item);
  l.gamma = place(at, 1, c.n, c.n, true, item);
  l.beta = place(at, 1, c.n, c.n, !rms, item);
  l.dy = place(at, c.rows, c.n, s.dy, backward, item);
  l.y = place(at, c.rows, c.n, s.y, !backward, item);
  l.dx = place(at, c.rows, c.n, s.dx, backward, item);
  l.dgamma = place(at, 1, c.n, c.n, backward, item);
  l.dbeta = place(at, 1, c.n, c.n, backward && !rms, item);
  l.tail = at;
  l.total = at + kTailBytes;
  return l;
}

std::vector<uint8_t> call_block(const LayerNormCase& c, Op op, const CallLayout& l) {
  (void)op;
  std::vector<uint8_t> block(l.total);
  const uint64_t in = input_sentinel_bits(c.dtype), out = output_sentinel_bits(c.dtype);
  write_slot(block, l.x, c.dtype, &c.x, in, in);
  write_slot(block, l.gamma, c.dtype, &c.gamma, in, in);
  write_slot(block, l.beta, c.dtype, &c.beta, in, in);
  write_slot(block, l.dy, c.dtype, &c.dy, in, in);
  for (const TensorSlot* s : {&l.y, &l.dx, &l.dgamma, &l.dbeta}) write_slot(block, *s, c.dtype, nullptr, out, out);
  std::fill(block.begin() + static_cast<std::ptrdiff_t>(l.tail), block.end(), kTailByte);
  return block;
}

std::string check_untouched(const std::vector<uint8_t>& before, const std::vector<uint8_t>& after, const CallLayout& l) {
  const size_t item = item_size(l.dtype);
  struct Named {
    const char* name;
    const TensorSlot* slot;
    bool output;
  };
  for (const Named& t : {Named{"x", &l.x, false}, {"gamma", &l.gamma, false}, {"beta", &l.beta, false}, {"dy", &l.dy, false},
                         {"y", &l.y, true}, {"dx", &l.dx, true}, {"dgamma", &l.dgamma, true}, {"dbeta", &l.dbeta, true}}) {
    const TensorSlot& s = *t.slot;
    if (!s.present) continue;
    for (int64_t k = 0; k < s.rows * s.stride + kGuardElements; ++k) {
      const int64_t row = k / s.stride, col = k % s.stride;
      const bool cell = row < s.rows && col < s.n;
      if (t.output && cell) continue;  // the kernel's to write
      const size_t at = s.offset + static_cast<size_t>(k) * item;
      if (std::memcmp(&before[at], &after[at], item) == 0) continue;
      if (cell) return fmt::format("the kernel wrote into its input {} (row {}, column {})", t.name, row, col);
      if (row >= s.rows) return fmt::format("the kernel wrote past the end of {} (guard element {})", t.name, k - s.rows * s.stride);
      return fmt::format("the kernel wrote into the row padding of {} (row {}, element {} of stride {})", t.name, row, col, s.stride);
    }
  }
  for (size_t at = l.tail; at < l.total; ++at)
    if (before[at] != after[at])
      return fmt::format("the kernel wrote past the end of the call's last tensor (byte {} after its guard)", at - l.tail);
  return "";
}

std::vector<double> read_slot(const std::vector<uint8_t>& block, const TensorSlot& s, DType d) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(s.rows * s.n));
  const size_t item = item_size(d);
  for (int64_t r = 0; r < s.rows; ++r) {
    const std::vector<double> row = decode_values(&block[s.offset + static_cast<size_t>(r * s.stride) * item], static_cast<size_t>(s.n), d);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

}  // namespace normcheck::external
