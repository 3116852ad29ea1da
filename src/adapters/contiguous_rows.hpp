#pragma once
/// For adapters of libraries that take contiguous rows only (oneDNN, libtorch): a strided call of
/// the plugin ABI is run on contiguous copies of x and dy, and y or dx is scattered back row by row,
/// so that padded rows (include/normcheck/plugin.h) reach the library as a dense matrix.
#include <cstring>
#include <vector>

#include "normcheck/plugin.h"

namespace normcheck::adapters {

inline size_t abi_item_size(nc_dtype d) { return d == NC_F64 ? 8 : d == NC_F32 ? 4 : 2; }

/// Calls run(args) with every row-major matrix contiguous; copies the outputs to their strides.
template <class Run>
nc_status with_contiguous_rows(const nc_norm_args* a, Run run) {
  const bool dense = a->x_row_stride == a->n && (!a->dy || a->dy_row_stride == a->n) && (!a->y || a->y_row_stride == a->n) &&
                     (!a->dx || a->dx_row_stride == a->n);
  if (dense) return run(a);
  const size_t item = abi_item_size(a->dtype), row = static_cast<size_t>(a->n) * item;
  const auto gather = [&](const void* src, int64_t stride, std::vector<unsigned char>& dst) {
    dst.resize(static_cast<size_t>(a->rows) * row);
    for (int64_t i = 0; i < a->rows; ++i)
      std::memcpy(&dst[static_cast<size_t>(i) * row], static_cast<const unsigned char*>(src) + static_cast<size_t>(i * stride) * item, row);
  };
  const auto scatter = [&](const std::vector<unsigned char>& src, void* dst, int64_t stride) {
    for (int64_t i = 0; i < a->rows; ++i)
      std::memcpy(static_cast<unsigned char*>(dst) + static_cast<size_t>(i * stride) * item, &src[static_cast<size_t>(i) * row], row);
  };
  std::vector<unsigned char> x, dy, y(a->y ? static_cast<size_t>(a->rows) * row : 0), dx(a->dx ? static_cast<size_t>(a->rows) * row : 0);
  nc_norm_args c = *a;
  gather(a->x, a->x_row_stride, x);
  c.x = x.data();
  if (a->dy) {
    gather(a->dy, a->dy_row_stride, dy);
    c.dy = dy.data();
  }
  if (a->y) c.y = y.data();
  if (a->dx) c.dx = dx.data();
  c.x_row_stride = c.dy_row_stride = c.y_row_stride = c.dx_row_stride = a->n;
  const nc_status s = run(&c);
  if (s != NC_OK) return s;
  if (a->y) scatter(y, a->y, a->y_row_stride);
  if (a->dx) scatter(dx, a->dx, a->dx_row_stride);
  return s;
}

}  // namespace normcheck::adapters
