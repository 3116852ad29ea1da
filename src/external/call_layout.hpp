#pragma once
/// The memory a kernel plugin call sees (include/normcheck/plugin.h): every tensor as rows of n values
/// `stride` elements apart (padded rows in most calls), followed by a guard of kGuardElements. Inputs
/// sit in their slots; every output element starts as a NaN sentinel (a kernel that skips an element,
/// or accumulates into its buffer, leaves NaN behind); row padding and guards hold NaN sentinels that
/// a kernel must neither read (they would poison its outputs) nor write (checked after the call).
#include <cstdint>
#include <string>
#include <vector>

#include "core/layernorm_case.hpp"
#include "kernels/registry.hpp"

namespace normcheck::external {

inline constexpr int64_t kGuardElements = 8;
/// After the last tensor: a region of kTailByte the kernel must not write (far overruns).
inline constexpr size_t kTailBytes = 4096;
inline constexpr uint8_t kTailByte = 0xa5;

/// Bit patterns of the sentinels (quiet NaNs with distinct payloads), by dtype.
uint64_t input_sentinel_bits(DType d);   ///< input row padding and guards: reading them gives NaN
uint64_t output_sentinel_bits(DType d);  ///< output elements before the call, output padding and guards

/// One tensor's place in the call block.
struct TensorSlot {
  size_t offset = 0;  ///< bytes from the block's start
  int64_t rows = 0, n = 0, stride = 0;
  bool present = false;
  size_t bytes(size_t item) const { return static_cast<size_t>(rows * stride + kGuardElements) * item; }
};

/// The row strides of one call: a quarter of the calls unpadded (stride n), the others with each
/// matrix padded by 1 to 17 elements, independently; deterministic in the case and op.
struct CallStrides {
  int64_t x = 0, dy = 0, y = 0, dx = 0;
};
CallStrides call_strides(const LayerNormCase& c, Op op);

struct CallLayout {
  DType dtype = DType::f32;
  TensorSlot x, gamma, beta, dy, y, dx, dgamma, dbeta;
  size_t tail = 0;   ///< offset of the tail region (kTailBytes of kTailByte)
  size_t total = 0;
};
CallLayout call_layout(const LayerNormCase& c, Op op, const CallStrides& s);

/// The block as the kernel receives it: inputs, NaN-filled outputs, sentinels in padding and guards.
std::vector<uint8_t> call_block(const LayerNormCase& c, Op op, const CallLayout& l);

/// "" when the kernel changed nothing but its output elements; else one line naming the first
/// input element, input padding or output padding/guard element it wrote.
std::string check_untouched(const uint8_t* before, const uint8_t* after, const CallLayout& l);

/// The rows x n values of an output slot.
std::vector<double> read_slot(const uint8_t* block, const TensorSlot& s, DType d);

/// An ABI v2 call's tensors (any rank, seen as rows x n with n the last dimension): each in its slot
/// with padded rows where the shape has rows (stride n + 1 ... n + 17 in three calls of four,
/// deterministic in `seed`), sentinels and guards as for version 1, and the tail region.
struct NamedSlot {
  std::string name;
  std::vector<int64_t> shape;
  TensorSlot slot;
  bool output = false;
};
struct TensorCallLayout {
  DType dtype = DType::f32;
  std::vector<NamedSlot> tensors;
  size_t tail = 0, total = 0;
};
/// Lays out the inputs (name, shape, values) then the outputs (name, shape).
TensorCallLayout tensor_call_layout(DType d, const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                                    const std::vector<std::pair<std::string, std::vector<int64_t>>>& outputs, uint64_t seed);
/// The block: input values (in the order of `values`), NaN-filled outputs, sentinels, tail.
std::vector<uint8_t> tensor_call_block(const TensorCallLayout& l, const std::vector<const std::vector<double>*>& values);
/// "" when the kernel changed nothing but its output elements; else one line naming what it wrote.
std::string check_untouched(const uint8_t* before, const uint8_t* after, const TensorCallLayout& l);

}  // namespace normcheck::external
