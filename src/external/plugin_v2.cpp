#include "external/plugin_v2.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/layernorm_case.hpp"
#include "external/call_layout.hpp"
#include "external/plugin_pool.hpp"
#include "external/serve_block.hpp"
#include "external/serve_contraction.hpp"
#include "external/serve_jvp.hpp"
#include "external/serve_grouped.hpp"
#include "normcheck/plugin.h"

namespace normcheck::external {
namespace {

/// Positions of the tensors in nc_call.in / nc_call.out (include/normcheck/plugin.h).
const std::map<std::string, int>& in_positions(uint32_t op) {
  static const std::map<std::string, int> grouped = {{"x", 0}, {"dy", 1}, {"gamma", 2}, {"beta", 3}, {"running_mean", 4}, {"running_var", 5}};
  static const std::map<std::string, int> block = {{"x", 0}, {"g", 1}, {"w", 2}, {"b", 3}, {"dy", 4}};
  static const std::map<std::string, int> contracted = {{"x", 0}, {"D", 1}, {"R", 2}, {"c", 3}, {"dy", 4}};
  static const std::map<std::string, int> jvp = {{"x", 0}, {"gamma", 1}, {"beta", 2}, {"dx", 3}, {"dgamma", 4}, {"dbeta", 5}};
  static const std::map<std::string, int> rms_jvp = {{"x", 0}, {"gamma", 1}, {"dx", 2}, {"dgamma", 3}};
  return op == NC_GROUPED_NORM ? grouped : op == NC_LINEAR_RMSNORM ? block : op == NC_CONTRACTED_BLOCK ? contracted
         : op == NC_RMSNORM_JVP ? rms_jvp : jvp;
}
const std::map<std::string, int>& out_positions(uint32_t op) {
  static const std::map<std::string, int> grouped = {{"y", 0}, {"dx", 1}, {"dgamma", 2}, {"dbeta", 3},
                                                     {"running_mean", 4}, {"running_var", 5}, {"y_inference", 6}};
  static const std::map<std::string, int> block = {{"y", 0}, {"dx", 1}, {"dw", 2}, {"dg", 3}};
  static const std::map<std::string, int> contracted = {{"f", 0}, {"dx", 1}};
  static const std::map<std::string, int> jvp = {{"du", 0}};
  return op == NC_GROUPED_NORM ? grouped : op == NC_LINEAR_RMSNORM ? block : op == NC_CONTRACTED_BLOCK ? contracted : jvp;
}

/// The wire tensor of a slot: rank, shape and element strides of its padded rows.
wire::Tensor wire_tensor(const NamedSlot& t) {
  wire::Tensor w;
  w.offset = static_cast<int64_t>(t.slot.offset);
  w.rank = static_cast<int32_t>(t.shape.size());
  int64_t stride = 1;
  for (int k = w.rank - 1; k >= 0; --k) {
    w.shape[k] = t.shape[static_cast<size_t>(k)];
    w.strides[k] = stride;
    stride = k == w.rank - 1 ? t.slot.stride : stride * w.shape[k];
  }
  return w;
}

/// One ABI v2 call of `call` (its tensors) with the scalars of `req`, through a worker of the pool.
FileCallResult call_v2(PluginPool& pool, const FileCall& call, wire::Request req) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> ins;
  std::vector<const std::vector<double>*> values;
  uint64_t seed = 0xcbf29ce484222325ull;
  for (const NamedTensor& t : call.inputs) {
    ins.emplace_back(t.name, t.shape);
    values.push_back(t.values);
    mix_values(seed, *t.values);
  }
  const TensorCallLayout l = tensor_call_layout(call.dtype, ins, call.outputs, seed);
  const std::vector<uint8_t> before = tensor_call_block(l, values);
  req.kind = wire::kRunCall;
  req.block_bytes = l.total;
  for (const NamedSlot& t : l.tensors) (t.output ? req.out[out_positions(req.op).at(t.name)] : req.in[in_positions(req.op).at(t.name)]) = wire_tensor(t);
  const PooledCall pc = call_in_worker(pool, before, req);
  FileCallResult r;
  r.failure = pc.failure;
  r.skipped = pc.skipped;
  if (pc.after.empty()) return r;
  if (std::string touched = check_untouched(before.data(), pc.after.data(), l); !touched.empty()) r.failure = "plugin: " + touched;
  else
    for (const NamedSlot& t : l.tensors)
      if (t.output) r.outputs[t.name] = read_slot(pc.after.data(), t.slot, call.dtype);
  return r;
}

int32_t abi_dtype(DType d) {
  return d == DType::f16 ? NC_F16 : d == DType::bf16 ? NC_BF16 : d == DType::f32 ? NC_F32 : NC_F64;
}

int32_t abi_kind(audit::NormKind k) {
  switch (k) {
    case audit::NormKind::batch_norm: return NC_BATCH_NORM;
    case audit::NormKind::group_norm: return NC_GROUP_NORM;
    case audit::NormKind::instance_norm: return NC_INSTANCE_NORM;
    case audit::NormKind::layer_norm: return NC_LAYER_NORM;
    case audit::NormKind::channel_layer_norm: return NC_CHANNEL_LAYER_NORM;
    case audit::NormKind::rms_norm: return NC_RMS_NORM;
  }
  return NC_BATCH_NORM;
}

std::shared_ptr<PluginPool> pool_of(const PluginInfo& info) { return info.pool ? info.pool : std::make_shared<PluginPool>(info.path, 10.0); }

}  // namespace

std::function<GroupedOutputs(const GroupedNormCase&)> plugin_grouped_kernel(const PluginInfo& info) {
  const std::shared_ptr<PluginPool> pool = pool_of(info);
  const std::vector<DType> dtypes = info.grouped_dtypes;
  return [pool, dtypes](const GroupedNormCase& c) {
    GroupedOutputs out;
    if (std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end()) {
      out.skipped = true;
      return out;
    }
    const FileCall call = grouped_file_call(c);
    wire::Request req;
    req.op = NC_GROUPED_NORM;
    req.dtype = abi_dtype(c.dtype);
    req.eps = c.eps;
    req.momentum = c.momentum;
    req.norm_kind = abi_kind(c.spec.kind);
    req.channel_axis = audit::channel_axis(c.tensor.layout);
    req.groups = c.spec.groups;
    req.normalized_dims = c.spec.normalized_dims;
    return grouped_outputs_of(call, call_v2(*pool, call, req));
  };
}

ContractedKernel plugin_contraction_kernel(const PluginInfo& info) {
  const std::shared_ptr<PluginPool> pool = pool_of(info);
  const std::vector<DType> dtypes = info.contraction_dtypes;
  return [pool, dtypes](const ContractedBlock& k, const ContractionCase& c) {
    if (std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end()) {
      AffineLnOutputs out;
      out.skipped = true;
      return out;
    }
    wire::Request req;
    req.op = NC_CONTRACTED_BLOCK;
    req.dtype = abi_dtype(c.dtype);
    req.eps = k.eps;
    req.contraction_n = k.n;
    return contraction_outputs_of(call_v2(*pool, contraction_file_call(k, c), req));
  };
}

const std::vector<DType>& plugin_jvp_dtypes(const PluginInfo& info, const std::string& op) {
  return op == "rmsnorm_jvp" ? info.rms_jvp_dtypes : info.jvp_dtypes;
}

JvpKernel plugin_jvp_kernel(const PluginInfo& info, const std::string& op) {
  const std::shared_ptr<PluginPool> pool = pool_of(info);
  const std::vector<DType> dtypes = plugin_jvp_dtypes(info, op);
  const uint32_t abi_op = op == "rmsnorm_jvp" ? NC_RMSNORM_JVP : NC_LAYERNORM_JVP;
  return [pool, dtypes, abi_op, op](const LayerNormCase& c, const LayerNormTangents& t) {
    if (std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end()) return JvpOutputs{{}, "", true};
    wire::Request req;
    req.op = static_cast<int32_t>(abi_op);
    req.dtype = abi_dtype(c.dtype);
    req.eps = c.eps;
    return jvp_outputs_of(call_v2(*pool, jvp_file_call(c, t, op), req));
  };
}

std::vector<BlockKernelEntry> plugin_block_kernels(const PluginInfo& info) {
  const std::shared_ptr<PluginPool> pool = pool_of(info);
  std::vector<BlockKernelEntry> out;
  for (DType dt : info.block_dtypes)
    out.push_back({info.name, dt, dtype_info(dt).default_accum, false,
                   [pool, form = info.block_form](const RmsBlockCase& c) {
                     wire::Request req;
                     req.op = NC_LINEAR_RMSNORM;
                     req.dtype = abi_dtype(c.dtype);
                     req.eps = c.eps;
                     return block_outputs_of(call_v2(*pool, block_file_call(c, form), req));
                   },
                   "plugin:" + info.name, info.block_form});
  return out;
}

}  // namespace normcheck::external
