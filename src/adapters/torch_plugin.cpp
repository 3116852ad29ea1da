// libtorch adapter as a normcheck plugin (include/normcheck/plugin.h): ATen's native_layer_norm and
// native_layer_norm_backward on the CPU in f64, f32 and bf16, and RMSNorm composed from ATen ops
// in the storage dtype (as a user writes it: x * rsqrt(mean(x^2) + eps) * weight, backward by
// hand from the same ops). ATen runs with one intra-op thread for reproducibility (its bf16
// reductions depend on the thread count). f16 is unimplemented for these CPU kernels in 1.13:
// unsupported (skipped).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstring>

#include "contiguous_rows.hpp"
#include "normcheck/plugin.h"

namespace {

bool has_dtype(nc_dtype dt) { return dt == NC_F64 || dt == NC_F32 || dt == NC_BF16; }

at::ScalarType scalar_type(nc_dtype dt) {
  return dt == NC_F64 ? at::kDouble : dt == NC_F32 ? at::kFloat : at::kBFloat16;
}

int supports(nc_op, nc_dtype dt) { return has_dtype(dt) ? 1 : 0; }

/// A tensor viewing caller memory (contiguous rows; bf16 bit patterns are at::BFloat16's layout).
at::Tensor view(const void* p, at::IntArrayRef shape, nc_dtype dt) {
  return at::from_blob(const_cast<void*>(p), shape, at::TensorOptions().dtype(scalar_type(dt)));
}

void copy_out(const at::Tensor& t, void* dst) {
  const at::Tensor c = t.contiguous();
  std::memcpy(dst, c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
}

void layer_norm(const nc_norm_args* a) {
  const at::Tensor x = view(a->x, {a->rows, a->n}, a->dtype), g = view(a->gamma, {a->n}, a->dtype),
                   b = view(a->beta, {a->n}, a->dtype);
  auto [y, mean, rstd] = at::native_layer_norm(x, {a->n}, g, b, a->eps);
  if (a->op == NC_LAYERNORM_FORWARD) {
    copy_out(y, a->y);
    return;
  }
  const at::Tensor dy = view(a->dy, {a->rows, a->n}, a->dtype);
  auto [dx, dg, db] = at::native_layer_norm_backward(dy, x, {a->n}, mean, rstd, g, b, {true, true, true});
  copy_out(dx, a->dx);
  copy_out(dg, a->dgamma);
  copy_out(db, a->dbeta);
}

void rms_norm(const nc_norm_args* a) {
  const at::Tensor x = view(a->x, {a->rows, a->n}, a->dtype), g = view(a->gamma, {a->n}, a->dtype);
  const at::Tensor r = at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + a->eps);
  const at::Tensor z = x * r;
  if (a->op == NC_RMSNORM_FORWARD) {
    copy_out(z * g, a->y);
    return;
  }
  const at::Tensor dy = view(a->dy, {a->rows, a->n}, a->dtype);
  const at::Tensor v = dy * g;
  const at::Tensor dx = r * (v - z * (v * z).mean(-1, /*keepdim=*/true));
  copy_out(dx, a->dx);
  copy_out((dy * z).sum(0), a->dgamma);
}

nc_status run(const nc_norm_args* a, char* message, size_t size) {
  if (!has_dtype(a->dtype)) return NC_UNSUPPORTED;
  try {
    at::set_num_threads(1);
    return normcheck::adapters::with_contiguous_rows(a, [](const nc_norm_args* c) {
      if (c->op == NC_LAYERNORM_FORWARD || c->op == NC_LAYERNORM_BACKWARD) layer_norm(c);
      else rms_norm(c);
      return NC_OK;
    });
  } catch (const std::exception& e) {
    const std::string what = e.what();
    std::snprintf(message, size, "libtorch: %s", what.substr(0, what.find('\n')).c_str());
    return what.find("not implemented") != std::string::npos ? NC_UNSUPPORTED : NC_ERROR;
  }
}

}  // namespace

extern "C" const nc_plugin* normcheck_plugin_v1(void) {
  static const nc_plugin description = {NORMCHECK_PLUGIN_ABI_VERSION, "libtorch_1_13", supports, run};
  return &description;
}
