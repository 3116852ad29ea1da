// oneDNN adapter as a normcheck plugin (include/normcheck/plugin.h): layer normalization forward
// (training statistics) and backward in f32 and bf16, on the CPU engine. The code path is chosen
// by oneDNN from ONEDNN_MAX_CPU_ISA (SSE41, AVX2, AVX512_CORE, ...), read when the library loads;
// the plugin's name carries it ("onednn_avx2"), so that reports keep the paths apart. Run it
// single-threaded for reproducibility: OMP_NUM_THREADS=1 (oneDNN is built with OpenMP).
// f16, f64 and RMSNorm are not provided by oneDNN 2.6: unsupported (skipped). Scale, shift, mean
// and variance are f32 in oneDNN; dgamma/dbeta come back in f32 and are rounded to the storage
// dtype here (one rounding, to nearest even).
#include <oneapi/dnnl/dnnl.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "contiguous_rows.hpp"
#include "normcheck/plugin.h"

namespace {

float bf16_to_float(uint16_t b) {
  const uint32_t w = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t w;
  std::memcpy(&w, &f, 4);
  if ((w & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((w >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((w >> 16) & 1u);
  return static_cast<uint16_t>((w + rounding) >> 16);
}

/// n values of the storage dtype as f32 (scale and shift are always f32 in oneDNN).
std::vector<float> as_f32(const void* p, int64_t n, nc_dtype dt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = dt == NC_F32 ? static_cast<const float*>(p)[i] : bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  return v;
}

void store_f32(const std::vector<float>& v, void* p, nc_dtype dt) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == NC_F32) static_cast<float*>(p)[i] = v[i];
    else static_cast<uint16_t*>(p)[i] = float_to_bf16(v[i]);
  }
}

int supports(nc_op op, nc_dtype dt) {
  return (op == NC_LAYERNORM_FORWARD || op == NC_LAYERNORM_BACKWARD) && (dt == NC_F32 || dt == NC_BF16);
}

nc_status run_layernorm(const nc_norm_args* a) {
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const auto dt = a->dtype == NC_F32 ? memory::data_type::f32 : memory::data_type::bf16;
  const memory::dims dims = {a->rows, a->n};
  const memory::desc data_md(dims, dt, memory::format_tag::ab);
  const memory::desc param_md({a->n}, memory::data_type::f32, memory::format_tag::a);
  const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  const float eps = static_cast<float>(a->eps);
  const layer_normalization_forward::desc fd(prop_kind::forward_training, data_md, eps, flags);
  const layer_normalization_forward::primitive_desc fpd(fd, eng);
  std::vector<float> scale = as_f32(a->gamma, a->n, a->dtype), shift = as_f32(a->beta, a->n, a->dtype);
  std::vector<float> mean(static_cast<size_t>(a->rows)), var(static_cast<size_t>(a->rows));
  memory src(data_md, eng, const_cast<void*>(a->x)), scale_m(param_md, eng, scale.data()), shift_m(param_md, eng, shift.data());
  memory mean_m(fpd.mean_desc(), eng, mean.data()), var_m(fpd.variance_desc(), eng, var.data());
  std::vector<char> scratch_y;
  void* y = a->y;
  if (a->op == NC_LAYERNORM_BACKWARD) {  // the forward only provides mean and variance here
    scratch_y.resize(static_cast<size_t>(a->rows * a->n) * (a->dtype == NC_F32 ? 4 : 2));
    y = scratch_y.data();
  }
  memory dst(fpd.dst_desc(), eng, y);
  layer_normalization_forward(fpd).execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, scale_m},
                                               {DNNL_ARG_SHIFT, shift_m}, {DNNL_ARG_MEAN, mean_m}, {DNNL_ARG_VARIANCE, var_m}});
  s.wait();
  if (a->op == NC_LAYERNORM_FORWARD) return NC_OK;
  const layer_normalization_backward::desc bd(prop_kind::backward, data_md, data_md, eps, flags);
  const layer_normalization_backward::primitive_desc bpd(bd, eng, fpd);
  std::vector<float> dscale(static_cast<size_t>(a->n)), dshift(static_cast<size_t>(a->n));
  memory ddst(data_md, eng, const_cast<void*>(a->dy)), dsrc(bpd.diff_src_desc(), eng, a->dx);
  memory dscale_m(param_md, eng, dscale.data()), dshift_m(param_md, eng, dshift.data());
  layer_normalization_backward(bpd).execute(
      s, {{DNNL_ARG_SRC, src},           {DNNL_ARG_DIFF_DST, ddst},          {DNNL_ARG_MEAN, mean_m},
          {DNNL_ARG_VARIANCE, var_m},    {DNNL_ARG_SCALE, scale_m},          {DNNL_ARG_SHIFT, shift_m},
          {DNNL_ARG_DIFF_SRC, dsrc},     {DNNL_ARG_DIFF_SCALE, dscale_m},    {DNNL_ARG_DIFF_SHIFT, dshift_m}});
  s.wait();
  store_f32(dscale, a->dgamma, a->dtype);
  store_f32(dshift, a->dbeta, a->dtype);
  return NC_OK;
}

nc_status run(const nc_norm_args* a, char* message, size_t size) {
  if (!supports(a->op, a->dtype)) return NC_UNSUPPORTED;
  try {
    return normcheck::adapters::with_contiguous_rows(a, run_layernorm);
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) return NC_UNSUPPORTED;  // e.g. bf16 without AVX512_CORE
    std::snprintf(message, size, "oneDNN: %s", e.what());
    return NC_ERROR;
  }
}

/// "onednn_" + the lower-cased ONEDNN_MAX_CPU_ISA, or "onednn_default".
const char* plugin_name() {
  static std::string name = [] {
    const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
    std::string n = "onednn_";
    for (const char* p = isa && *isa ? isa : "default"; *p; ++p)
      n.push_back(std::isalnum(static_cast<unsigned char>(*p)) ? static_cast<char>(std::tolower(*p)) : '_');
    return n;
  }();
  return name.c_str();
}

}  // namespace

extern "C" const nc_plugin* normcheck_plugin_v1(void) {
  static const nc_plugin description = {NORMCHECK_PLUGIN_ABI_VERSION, plugin_name(), supports, run};
  return &description;
}
