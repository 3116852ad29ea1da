// oneDNN adapter as a normcheck plugin (include/normcheck/plugin.h): layer normalization forward
// (training statistics) and backward in f32 and bf16, on the CPU engine. The code path is chosen
// by oneDNN from ONEDNN_MAX_CPU_ISA (SSE41, AVX2, AVX512_CORE, ...), read when the library loads;
// the plugin's name carries it ("onednn_avx2"), so that reports keep the paths apart. Run it
// single-threaded for reproducibility: OMP_NUM_THREADS=1 (oneDNN is built with OpenMP).
// f16, f64 and RMSNorm are not provided by oneDNN 2.6: unsupported (skipped). Scale, shift, mean
// and variance are f32 in oneDNN; dgamma/dbeta come back in f32 and are rounded to the storage
// dtype here (one rounding, to nearest even).
// ABI version 2: batch normalization (NC_GROUPED_NORM, kind NC_BATCH_NORM) forward training,
// backward and inference with global statistics, on the tensor copied to a plain (N, C, spatial)
// buffer. oneDNN does not keep running statistics: the adapter updates them from oneDNN's batch mean
// and (biased) variance, in double, rounded once. Group and instance norm are not in oneDNN 2.6.
// Layer normalization over several axes (NC_LAYER_NORM over the last k axes, NC_CHANNEL_LAYER_NORM
// over the channel axis): the tensor reordered to a plain (positions, normalized entries) matrix and
// oneDNN's layer normalization on its rows, as a oneDNN user does it. RMSNorm: not in oneDNN 2.6.
#include <oneapi/dnnl/dnnl.hpp>

#include <cctype>
#include <cmath>
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

int supports(uint32_t op, nc_dtype dt) {
  return (op == NC_LAYERNORM_FORWARD || op == NC_LAYERNORM_BACKWARD || op == NC_GROUPED_NORM) && (dt == NC_F32 || dt == NC_BF16);
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

/// Memory offset (elements) of element (n, c, s) of a tensor whose channel axis is `axis`, with s the
/// flat index over its other axes in memory order.
int64_t offset_of(const nc_tensor& t, int axis, int64_t n, int64_t c, int64_t s) {
  int64_t at = n * t.strides[0] + c * t.strides[axis];
  for (int k = t.rank - 1; k >= 1; --k) {
    if (k == axis) continue;
    at += (s % t.shape[k]) * t.strides[k];
    s /= t.shape[k];
  }
  return at;
}

float load(const nc_tensor& t, nc_dtype dt, int64_t at) {
  return dt == NC_F32 ? static_cast<const float*>(t.data)[at] : bf16_to_float(static_cast<const uint16_t*>(t.data)[at]);
}

void put(const nc_tensor& t, nc_dtype dt, int64_t at, float v) {
  if (dt == NC_F32) static_cast<float*>(t.data)[at] = v;
  else static_cast<uint16_t*>(t.data)[at] = float_to_bf16(v);
}

/// A double rounded once to the storage dtype: to f32 directly; to bf16 through f32 rounded to odd
/// (truncate, then set the last bit when inexact), which makes the final rounding to nearest even
/// the only one.
void put_double(const nc_tensor& t, nc_dtype dt, int64_t at, double v) {
  float f = static_cast<float>(v);
  if (dt == NC_BF16 && std::isfinite(f) && static_cast<double>(f) != v) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    w |= 1u;
    std::memcpy(&f, &w, 4);
  }
  put(t, dt, at, f);
}

/// The tensor as a plain (N, C, S) buffer of its storage elements (float or uint16_t bf16 bits).
template <class T>
std::vector<T> gather_as(const nc_tensor& t, int axis, int64_t n, int64_t c, int64_t s) {
  std::vector<T> out(static_cast<size_t>(n * c * s));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) out[(i * c + j) * s + k] = static_cast<const T*>(t.data)[offset_of(t, axis, i, j, k)];
  return out;
}

/// A plain (N, C, S) tensor of the storage dtype, as raw bytes.
struct Plain {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  void* data() { return f32.empty() ? static_cast<void*>(bf16.data()) : static_cast<void*>(f32.data()); }
};

Plain gather(const nc_tensor& t, nc_dtype dt, int axis, int64_t n, int64_t c, int64_t s) {
  Plain p;
  if (dt == NC_F32) p.f32 = gather_as<float>(t, axis, n, c, s);
  else p.bf16 = gather_as<uint16_t>(t, axis, n, c, s);
  return p;
}

Plain empty_plain(nc_dtype dt, int64_t count) {
  Plain p;
  if (dt == NC_F32) p.f32.resize(static_cast<size_t>(count));
  else p.bf16.resize(static_cast<size_t>(count));
  return p;
}

void scatter(Plain& p, const nc_tensor& t, nc_dtype dt, int axis, int64_t n, int64_t c, int64_t s) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) {
        const size_t from = static_cast<size_t>((i * c + j) * s + k);
        const int64_t at = offset_of(t, axis, i, j, k);
        if (dt == NC_F32) static_cast<float*>(t.data)[at] = p.f32[from];
        else static_cast<uint16_t*>(t.data)[at] = p.bf16[from];
      }
}

std::vector<float> channel_values(const nc_tensor& t, nc_dtype dt, int64_t c) {
  std::vector<float> v(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) v[static_cast<size_t>(j)] = load(t, dt, j * t.strides[0]);
  return v;
}

nc_status run_batch_norm(const nc_call* call) {
  using namespace dnnl;
  const nc_tensor& xt = call->in[0];
  const int axis = call->channel_axis;
  const int64_t n = xt.shape[0], c = xt.shape[axis];
  int64_t s = 1;
  for (int k = 1; k < xt.rank; ++k)
    if (k != axis) s *= xt.shape[k];
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const auto dt = call->dtype == NC_F32 ? memory::data_type::f32 : memory::data_type::bf16;
  const memory::desc data_md({n, c, s}, dt, memory::format_tag::abc);
  const memory::desc param_md({c}, memory::data_type::f32, memory::format_tag::a);
  const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  const float eps = static_cast<float>(call->eps);
  Plain x = gather(xt, call->dtype, axis, n, c, s), dy = gather(call->in[1], call->dtype, axis, n, c, s);
  Plain y = empty_plain(call->dtype, n * c * s), dx = empty_plain(call->dtype, n * c * s), yi = empty_plain(call->dtype, n * c * s);
  std::vector<float> scale = channel_values(call->in[2], call->dtype, c), shift = channel_values(call->in[3], call->dtype, c);
  std::vector<float> rm = channel_values(call->in[4], call->dtype, c), rv = channel_values(call->in[5], call->dtype, c);
  std::vector<float> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c)), dscale(static_cast<size_t>(c)), dshift(static_cast<size_t>(c));
  const batch_normalization_forward::primitive_desc fpd(
      batch_normalization_forward::desc(prop_kind::forward_training, data_md, eps, flags), eng);
  memory src(data_md, eng, x.data()), dst(data_md, eng, y.data()), scale_m(param_md, eng, scale.data()), shift_m(param_md, eng, shift.data());
  memory mean_m(fpd.mean_desc(), eng, mean.data()), var_m(fpd.variance_desc(), eng, var.data());
  batch_normalization_forward(fpd).execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, scale_m},
                                                {DNNL_ARG_SHIFT, shift_m}, {DNNL_ARG_MEAN, mean_m}, {DNNL_ARG_VARIANCE, var_m}});
  const batch_normalization_backward::primitive_desc bpd(
      batch_normalization_backward::desc(prop_kind::backward, data_md, data_md, eps, flags), eng, fpd);
  memory ddst(data_md, eng, dy.data()), dsrc(data_md, eng, dx.data()), dscale_m(param_md, eng, dscale.data()), dshift_m(param_md, eng, dshift.data());
  batch_normalization_backward(bpd).execute(
      st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_MEAN, mean_m}, {DNNL_ARG_VARIANCE, var_m}, {DNNL_ARG_SCALE, scale_m},
           {DNNL_ARG_SHIFT, shift_m}, {DNNL_ARG_DIFF_SRC, dsrc}, {DNNL_ARG_DIFF_SCALE, dscale_m}, {DNNL_ARG_DIFF_SHIFT, dshift_m}});
  const auto gflags = flags | normalization_flags::use_global_stats;  // inference from the statistics before the update
  const batch_normalization_forward::primitive_desc ipd(
      batch_normalization_forward::desc(prop_kind::forward_inference, data_md, eps, gflags), eng);
  std::vector<float> rm0 = rm, rv0 = rv;
  memory idst(data_md, eng, yi.data()), rm_m(ipd.mean_desc(), eng, rm0.data()), rv_m(ipd.variance_desc(), eng, rv0.data());
  batch_normalization_forward(ipd).execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, idst}, {DNNL_ARG_SCALE, scale_m},
                                                {DNNL_ARG_SHIFT, shift_m}, {DNNL_ARG_MEAN, rm_m}, {DNNL_ARG_VARIANCE, rv_m}});
  st.wait();
  scatter(y, call->out[0], call->dtype, axis, n, c, s);
  scatter(dx, call->out[1], call->dtype, axis, n, c, s);
  scatter(yi, call->out[6], call->dtype, axis, n, c, s);
  // the unbiased variance's factor k/(k-1); 1 for a single element per channel (as the contract has it)
  const double k = static_cast<double>(n * s), m = call->momentum, unbias = k > 1 ? k / (k - 1) : 1.0;
  for (int64_t j = 0; j < c; ++j) {
    const size_t u = static_cast<size_t>(j);
    put(call->out[2], call->dtype, j * call->out[2].strides[0], dscale[u]);
    put(call->out[3], call->dtype, j * call->out[3].strides[0], dshift[u]);
    put_double(call->out[4], call->dtype, j * call->out[4].strides[0], (1 - m) * rm[u] + m * mean[u]);
    put_double(call->out[5], call->dtype, j * call->out[5].strides[0], (1 - m) * rv[u] + m * var[u] * unbias);
  }
  return NC_OK;
}

/// Memory offsets of a tensor's elements visited with the axes in `order` (outermost first).
std::vector<int64_t> offsets_in_order(const nc_tensor& t, const std::vector<int>& order) {
  int64_t count = 1;
  for (int k = 0; k < t.rank; ++k) count *= t.shape[k];
  std::vector<int64_t> out(static_cast<size_t>(count)), coord(static_cast<size_t>(t.rank), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t at = 0;
    for (int k = 0; k < t.rank; ++k) at += coord[static_cast<size_t>(k)] * t.strides[k];
    out[static_cast<size_t>(e)] = at;
    for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
      const int axis = order[static_cast<size_t>(k)];
      if (++coord[static_cast<size_t>(axis)] < t.shape[axis]) break;
      coord[static_cast<size_t>(axis)] = 0;
    }
  }
  return out;
}

/// The elements at `offsets` as a plain buffer of the storage dtype, and back.
Plain gather_offsets(const nc_tensor& t, nc_dtype dt, const std::vector<int64_t>& offsets) {
  Plain p = empty_plain(dt, static_cast<int64_t>(offsets.size()));
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (dt == NC_F32) p.f32[i] = static_cast<const float*>(t.data)[offsets[i]];
    else p.bf16[i] = static_cast<const uint16_t*>(t.data)[offsets[i]];
  }
  return p;
}

void scatter_offsets(const Plain& p, const nc_tensor& t, nc_dtype dt, const std::vector<int64_t>& offsets) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (dt == NC_F32) static_cast<float*>(t.data)[offsets[i]] = p.f32[i];
    else static_cast<uint16_t*>(t.data)[offsets[i]] = p.bf16[i];
  }
}

/// Layer normalization over several axes, as a oneDNN user does it: the tensor reordered to a plain
/// (positions, normalized entries) matrix (layer norm over the last k axes: memory order; channel
/// layer norm: the channel axis moved last), oneDNN's layer normalization on its rows (the version 1
/// path), the results written back.
nc_status run_layer_norm_axes(const nc_call* call) {
  const nc_tensor& xt = call->in[0];
  std::vector<int> order;
  int normalized = call->normalized_dims;
  if (call->kind == NC_CHANNEL_LAYER_NORM) {
    for (int k = 0; k < xt.rank; ++k)
      if (k != call->channel_axis) order.push_back(k);
    order.push_back(call->channel_axis);
    normalized = 1;
  } else {
    for (int k = 0; k < xt.rank; ++k) order.push_back(k);
  }
  int64_t width = 1;
  for (int k = xt.rank - normalized; k < xt.rank; ++k) width *= xt.shape[order[static_cast<size_t>(k)]];
  const std::vector<int64_t> at = offsets_in_order(xt, order);
  const int64_t rows = static_cast<int64_t>(at.size()) / width;
  std::vector<int> param_order;
  for (int k = 0; k < call->in[2].rank; ++k) param_order.push_back(k);
  // every tensor has its own padding: offsets per tensor
  Plain x = gather_offsets(xt, call->dtype, at), dy = gather_offsets(call->in[1], call->dtype, offsets_in_order(call->in[1], order));
  Plain g = gather_offsets(call->in[2], call->dtype, offsets_in_order(call->in[2], param_order));
  Plain b = gather_offsets(call->in[3], call->dtype, offsets_in_order(call->in[3], param_order));
  Plain y = empty_plain(call->dtype, rows * width), dx = empty_plain(call->dtype, rows * width);
  Plain dg = empty_plain(call->dtype, width), db = empty_plain(call->dtype, width);
  nc_norm_args a{};
  a.dtype = call->dtype;
  a.rows = rows;
  a.n = width;
  a.x_row_stride = a.y_row_stride = a.dy_row_stride = a.dx_row_stride = width;
  a.eps = call->eps;
  a.x = x.data();
  a.gamma = g.data();
  a.beta = b.data();
  a.dy = dy.data();
  a.y = y.data();
  a.dx = dx.data();
  a.dgamma = dg.data();
  a.dbeta = db.data();
  a.op = NC_LAYERNORM_FORWARD;
  if (nc_status s = run_layernorm(&a); s != NC_OK) return s;
  a.op = NC_LAYERNORM_BACKWARD;
  if (nc_status s = run_layernorm(&a); s != NC_OK) return s;
  scatter_offsets(y, call->out[0], call->dtype, offsets_in_order(call->out[0], order));
  scatter_offsets(dx, call->out[1], call->dtype, offsets_in_order(call->out[1], order));
  scatter_offsets(dg, call->out[2], call->dtype, offsets_in_order(call->out[2], param_order));
  scatter_offsets(db, call->out[3], call->dtype, offsets_in_order(call->out[3], param_order));
  return NC_OK;
}

nc_status run_call(const nc_call* call, char* message, size_t size) {
  const bool layer_norm = call->kind == NC_LAYER_NORM || call->kind == NC_CHANNEL_LAYER_NORM;
  if (call->op != NC_GROUPED_NORM || !(call->kind == NC_BATCH_NORM || layer_norm) || !supports(call->op, call->dtype)) return NC_UNSUPPORTED;
  try {
    return layer_norm ? run_layer_norm_axes(call) : run_batch_norm(call);
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented) return NC_UNSUPPORTED;
    std::snprintf(message, size, "oneDNN: %s", e.what());
    return NC_ERROR;
  }
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

extern "C" const nc_plugin_v2* normcheck_plugin_v2(void) {
  static const nc_plugin_v2 description = {NORMCHECK_PLUGIN_ABI_VERSION_2, plugin_name(), supports, run, run_call, NC_BLOCK_COMPOSED};
  return &description;
}
