#include "external/call_layout.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "core/storage_bytes.hpp"

namespace normcheck::external {
namespace {

/// `count` copies of one element's bits from `at`.
void fill_elements(uint8_t* at, uint64_t bits, int64_t count, size_t item) {
  if (count <= 0) return;
  put_bits(at, bits, item);
  for (int64_t k = 1; k < count; ++k) std::memcpy(at + static_cast<size_t>(k) * item, at, item);
}

/// Writes a slot: `values` (rows x n, or none) in the row-major cells, `fill` everywhere else
/// (cells when values is null, padding, guard).
void write_slot(std::vector<uint8_t>& block, const TensorSlot& s, DType d, const std::vector<double>* values,
                uint64_t fill_cells, uint64_t fill_padding) {
  if (!s.present) return;
  const size_t item = item_size(d);
  std::string encoded;
  if (values) encode_values(*values, d, encoded);
  uint8_t* base = block.data() + s.offset;
  for (int64_t row = 0; row < s.rows; ++row) {
    uint8_t* at = base + static_cast<size_t>(row * s.stride) * item;
    if (values) std::memcpy(at, encoded.data() + static_cast<size_t>(row * s.n) * item, static_cast<size_t>(s.n) * item);
    else fill_elements(at, fill_cells, s.n, item);
    fill_elements(at + static_cast<size_t>(s.n) * item, fill_padding, s.stride - s.n, item);
  }
  fill_elements(base + static_cast<size_t>(s.rows * s.stride) * item, fill_padding, kGuardElements, item);
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
  // deterministic in what names the case (its generator, seed, shape and eps), not in every value:
  // hashing the inputs cost more than the plugin call itself
  uint64_t h = 0xcbf29ce484222325ull;
  mix(h, c.seed);
  mix(h, static_cast<uint64_t>(c.rows));
  mix(h, static_cast<uint64_t>(c.n));
  mix_values(h, {c.eps});
  for (const char ch : c.generator) mix(h, static_cast<unsigned char>(ch));
  Rng rng(derive_seed(h, static_cast<uint64_t>(op)));
  CallStrides s{c.n, c.n, c.n, c.n};
  if (rng.range(0, 3) == 0) return s;
  static constexpr int64_t kPads[] = {1, 2, 3, 5, 8, 17};
  for (int64_t* stride : {&s.x, &s.dy, &s.y, &s.dx}) *stride += kPads[rng.range(0, 5)];
  return s;
}

CallLayout call_layout(const LayerNormCase& c, Op op, const CallStrides& s) {
  const size_t item = item_size(c.dtype);
  const bool backward = is_backward(op), beta = has_input(op, "beta");
  CallLayout l;
  l.dtype = c.dtype;
  size_t at = 0;
  l.x = place(at, c.rows, c.n, s.x, true, item);
  l.gamma = place(at, 1, c.n, c.n, true, item);
  l.beta = place(at, 1, c.n, c.n, beta, item);
  l.dy = place(at, c.rows, c.n, s.dy, backward, item);
  l.y = place(at, c.rows, c.n, s.y, !backward, item);
  l.dx = place(at, c.rows, c.n, s.dx, backward, item);
  l.dgamma = place(at, 1, c.n, c.n, backward, item);
  l.dbeta = place(at, 1, c.n, c.n, has_output(op, "dbeta"), item);
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

namespace {

/// "" or what the kernel wrote in the slot outside its output elements.
/// True when no byte the kernel must leave alone changed in the slot (the fast path of check_slot).
bool slot_unchanged(const uint8_t* before, const uint8_t* after, const TensorSlot& s, bool output,
                    size_t item) {
  if (!output) return std::memcmp(&before[s.offset], &after[s.offset], s.bytes(item)) == 0;
  for (int64_t row = 0; row < s.rows; ++row) {  // the padding after each row's n outputs
    const size_t at = s.offset + static_cast<size_t>(row * s.stride + s.n) * item;
    if (std::memcmp(&before[at], &after[at], static_cast<size_t>(s.stride - s.n) * item) != 0) return false;
  }
  const size_t guard = s.offset + static_cast<size_t>(s.rows * s.stride) * item;
  return std::memcmp(&before[guard], &after[guard], static_cast<size_t>(kGuardElements) * item) == 0;
}

std::string check_slot(const uint8_t* before, const uint8_t* after, const TensorSlot& s,
                       const std::string& name, bool output, size_t item) {
  if (!s.present || slot_unchanged(before, after, s, output, item)) return "";
  for (int64_t k = 0; k < s.rows * s.stride + kGuardElements; ++k) {
    const int64_t row = k / s.stride, col = k % s.stride;
    const bool cell = row < s.rows && col < s.n;
    if (output && cell) continue;  // the kernel's to write
    const size_t at = s.offset + static_cast<size_t>(k) * item;
    if (std::memcmp(&before[at], &after[at], item) == 0) continue;
    if (cell) return fmt::format("the kernel wrote into its input {} (row {}, column {})", name, row, col);
    if (row >= s.rows) return fmt::format("the kernel wrote past the end of {} (guard element {})", name, k - s.rows * s.stride);
    return fmt::format("the kernel wrote into the row padding of {} (row {}, element {} of stride {})", name, row, col, s.stride);
  }
  return "";
}

std::string check_tail(const uint8_t* before, const uint8_t* after, size_t tail, size_t total) {
  if (std::memcmp(&before[tail], &after[tail], total - tail) == 0) return "";
  for (size_t at = tail; at < total; ++at)
    if (before[at] != after[at])
      return fmt::format("the kernel wrote past the end of the call's last tensor (byte {} after its guard)", at - tail);
  return "";
}

}  // namespace

std::string check_untouched(const uint8_t* before, const uint8_t* after, const CallLayout& l) {
  const size_t item = item_size(l.dtype);
  struct Named {
    const char* name;
    const TensorSlot* slot;
    bool output;
  };
  for (const Named& t : {Named{"x", &l.x, false}, {"gamma", &l.gamma, false}, {"beta", &l.beta, false}, {"dy", &l.dy, false},
                         {"y", &l.y, true}, {"dx", &l.dx, true}, {"dgamma", &l.dgamma, true}, {"dbeta", &l.dbeta, true}})
    if (std::string e = check_slot(before, after, *t.slot, t.name, t.output, item); !e.empty()) return e;
  return check_tail(before, after, l.tail, l.total);
}

TensorCallLayout tensor_call_layout(DType d, const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                                    const std::vector<std::pair<std::string, std::vector<int64_t>>>& outputs, uint64_t seed) {
  Rng rng(seed);
  const bool padded = rng.range(0, 3) != 0;
  static constexpr int64_t kPads[] = {1, 2, 3, 5, 8, 17};
  const size_t item = item_size(d);
  TensorCallLayout l;
  l.dtype = d;
  size_t at = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& [name, shape] : pass == 0 ? inputs : outputs) {
      int64_t rows = 1;
      for (size_t k = 0; k + 1 < shape.size(); ++k) rows *= shape[k];
      const int64_t n = shape.empty() ? 1 : shape.back();
      const int64_t stride = n + (padded && rows > 1 ? kPads[rng.range(0, 5)] : 0);
      l.tensors.push_back({name, shape, place(at, rows, n, stride, true, item), pass == 1});
    }
  l.tail = at;
  l.total = at + kTailBytes;
  return l;
}

std::vector<uint8_t> tensor_call_block(const TensorCallLayout& l, const std::vector<const std::vector<double>*>& values) {
  std::vector<uint8_t> block(l.total);
  const uint64_t in = input_sentinel_bits(l.dtype), out = output_sentinel_bits(l.dtype);
  size_t k = 0;
  for (const NamedSlot& t : l.tensors)
    write_slot(block, t.slot, l.dtype, t.output ? nullptr : values.at(k++), t.output ? out : in, t.output ? out : in);
  std::fill(block.begin() + static_cast<std::ptrdiff_t>(l.tail), block.end(), kTailByte);
  return block;
}

std::string check_untouched(const uint8_t* before, const uint8_t* after, const TensorCallLayout& l) {
  for (const NamedSlot& t : l.tensors)
    if (std::string e = check_slot(before, after, t.slot, t.name, t.output, item_size(l.dtype)); !e.empty()) return e;
  return check_tail(before, after, l.tail, l.total);
}

std::vector<double> read_slot(const uint8_t* block, const TensorSlot& s, DType d) {
  std::vector<double> out(static_cast<size_t>(s.rows * s.n));
  const size_t item = item_size(d);
  for (int64_t r = 0; r < s.rows; ++r)
    decode_values_to(&block[s.offset + static_cast<size_t>(r * s.stride) * item], static_cast<size_t>(s.n), d,
                     out.data() + static_cast<size_t>(r * s.n));
  return out;
}

}  // namespace normcheck::external
