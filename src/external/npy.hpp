#pragma once
/// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): the exec protocol's tensors.
/// f16, f32, f64 are '<f2', '<f4', '<f8'; bf16 has no NumPy dtype and travels as '<u2' bit
/// patterns (the manifest says "bf16").
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck::external {

struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const std::vector<double>& values);

/// Reads a file written for `dtype` and checks its shape; throws NpyError with one line
/// (missing, not .npy, wrong dtype, Fortran order, wrong shape, truncated). NaN and Inf values
/// are results to judge, not format errors.
std::vector<double> read_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape);

/// read_npy on the file's bytes (`path` names it in errors).
std::vector<double> parse_npy(std::string_view bytes, DType dtype, const std::vector<int64_t>& shape, const std::string& path);

}  // namespace normcheck::external
