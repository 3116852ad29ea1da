#pragma once
/// The safetensors format (what PyTorch users export): an 8-byte little-endian header length N,
/// N bytes of JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then
/// the raw little-endian tensor data. Reading validates everything and throws one clear line.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<double> values;  ///< exact values, row-major
  int64_t numel() const;
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads and validates a file: header length within the file, valid JSON, known dtypes (F16,
/// BF16, F32, F64), shapes matching the byte ranges, ranges inside the data and not overlapping,
/// no trailing bytes, finite values.
SafetensorsFile read_safetensors(const std::string& path);

/// Parses an in-memory file (same checks); `what` names it in errors.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what);

/// Serializes (tensors in name order, data contiguous); values must be exact in their dtype.
std::string serialize_safetensors(const SafetensorsFile& f);

/// Writes through a temporary file and rename (a reader never sees half a file).
void write_safetensors(const std::string& path, const SafetensorsFile& f);

}  // namespace normcheck
