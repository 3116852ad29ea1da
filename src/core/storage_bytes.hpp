#pragma once
/// Little-endian byte encodings of storage values (f16/bf16 bit patterns, float, double), as
/// files and foreign kernels hold them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

/// Bytes per element of a dtype.
size_t item_size(DType d);

/// Writes the low `item` bytes of `bits` at `at`, least significant first.
void put_bits(void* at, uint64_t bits, size_t item);

/// Appends the encodings of `values` (each exactly representable in `d`) to `out`.
void encode_values(const std::vector<double>& values, DType d, std::string& out);

/// Decodes `count` values of dtype `d` from `bytes`.
std::vector<double> decode_values(const uint8_t* bytes, size_t count, DType d);

/// Decodes `count` values of dtype `d` from `bytes` into out[0, count).
void decode_values_to(const uint8_t* bytes, size_t count, DType d, double* out);

}  // namespace normcheck
