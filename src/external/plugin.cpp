#include "external/plugin.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/storage_bytes.hpp"
#include "external/call_layout.hpp"
#include "external/isolated.hpp"
#include "external/plugin_loader.hpp"
#include "external/plugin_pool.hpp"
#include "normcheck/plugin.h"

namespace normcheck::external {
namespace {

constexpr const char* kUnsupported = "NC_UNSUPPORTED";

nc_op abi_op(Op op) { return static_cast<nc_op>(op_spec(op).abi_op); }
static_assert(NC_RMSNORM_BACKWARD == 3, "op_spec.cpp's abi_op column follows plugin.h's nc_op");

nc_dtype abi_dtype(DType d) {
  switch (d) {
    case DType::f16: return NC_F16;
    case DType::bf16: return NC_BF16;
    case DType::f32: return NC_F32;
    case DType::f64: return NC_F64;
  }
  return NC_F32;
}

/// The index of an ABI op in the inspect reply's table (wire::kInspectedOps).
size_t inspected_index(uint32_t abi) {
  for (size_t i = 0; i < static_cast<size_t>(wire::kInspectedOpCount); ++i)
    if (wire::kInspectedOps[i] == abi) return i;
  throw std::logic_error("op " + std::to_string(abi) + " is not in the plugin inspect table");
}
constexpr DType kDtypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64};

/// The request of a call whose tensors lie in a block of `l.total` bytes as `l` places them.
wire::Request call_request(Op op, const LayerNormCase& c, const CallLayout& l) {
  const auto at = [](const TensorSlot& t) -> int64_t { return t.present ? static_cast<int64_t>(t.offset) : -1; };
  wire::Request r;
  r.kind = wire::kRun;
  r.block_bytes = l.total;
  r.op = abi_op(op);
  r.dtype = abi_dtype(c.dtype);
  r.rows = c.rows;
  r.n = c.n;
  r.x_stride = l.x.stride;
  r.dy_stride = l.dy.present ? l.dy.stride : c.n;
  r.y_stride = l.y.present ? l.y.stride : c.n;
  r.dx_stride = l.dx.present ? l.dx.stride : c.n;
  r.eps = c.eps;
  const TensorSlot* slots[wire::kSlots] = {&l.x, &l.gamma, &l.beta, &l.dy, &l.y, &l.dx, &l.dgamma, &l.dbeta};
  for (int k = 0; k < wire::kSlots; ++k) r.offset[k] = at(*slots[k]);
  return r;
}

/// The outputs of a finished call, or the failure naming what the kernel wrote where it must not.
KernelOutputs read_outputs(Op op, const LayerNormCase& c, const CallLayout& l, const uint8_t* before,
                           const uint8_t* after) {
  KernelOutputs out;
  if (const std::string touched = check_untouched(before, after, l); !touched.empty()) {
    out.failure = "plugin: " + touched;
    return out;
  }
  if (!is_backward(op)) {
    out.y = read_slot(after, l.y, c.dtype);
  } else {
    out.dx = read_slot(after, l.dx, c.dtype);
    out.dgamma = read_slot(after, l.dgamma, c.dtype);
    if (has_output(op, "dbeta")) out.dbeta = read_slot(after, l.dbeta, c.dtype);
  }
  return out;
}

/// One call through a persistent worker of the pool.
KernelOutputs run_call(PluginPool& pool, Op op, const LayerNormCase& c) {
  const CallLayout l = call_layout(c, op, call_strides(c, op));
  const std::vector<uint8_t> input = call_block(c, op, l);
  PooledCall r = call_in_worker(pool, input, call_request(op, c, l));
  if (r.after.empty()) {
    KernelOutputs out;
    out.failure = std::move(r.failure);
    out.skipped = r.skipped;
    return out;
  }
  return read_outputs(op, c, l, input.data(), r.after.data());
}

/// One call the way issue 7 made it: fork, dlopen, call, exit (the benchmark's baseline only).
KernelOutputs run_call_forked(const std::string& path, Op op, const LayerNormCase& c, double timeout_s) {
  const CallLayout l = call_layout(c, op, call_strides(c, op));
  const std::vector<uint8_t> input = call_block(c, op, l);
  const wire::Request req = call_request(op, c, l);
  const IsolatedResult r = run_isolated(
      [&](uint8_t* b, size_t, char* msg, size_t cap) {
        const LoadedPlugin p = open_plugin(path.c_str(), msg, cap);
        if (!p) return 1;
        wire::Reply rep;
        run_plugin_call(p, req, b, rep);
        std::snprintf(msg, cap, "%s", rep.status == wire::kUnsupported ? kUnsupported : rep.message);
        return rep.status == wire::kOk ? 0 : 1;
      },
      input, l.total, timeout_s);
  KernelOutputs out;
  if (!r.ok) {
    if (r.failure == kUnsupported) out.skipped = true;
    else out.failure = "plugin " + r.failure;
    return out;
  }
  return read_outputs(op, c, l, input.data(), r.bytes.data());
}

}  // namespace

PluginInfo inspect_plugin(const std::string& path, double timeout_s, double startup_s) {
  auto pool = std::make_shared<PluginPool>(path, timeout_s, startup_s);
  std::unique_ptr<PluginWorker> w = pool->acquire();
  wire::Request req;
  req.kind = wire::kInspect;
  const WorkerOutcome r = w->call(req);
  if (!r.ok) throw std::runtime_error("plugin '" + path + "': " + r.failure + " while loading");
  if (r.reply.status != wire::kOk) throw std::runtime_error(r.reply.message);  // its sentence names the path
  PluginInfo info;
  info.path = path;
  info.name = r.reply.name;
  for (const char ch : info.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      throw std::runtime_error("plugin '" + path + "' has an invalid name '" + info.name + "' (letters, digits, '_')");
  if (info.name.empty()) throw std::runtime_error("plugin '" + path + "' has an empty name");
  for (const OpSpec& s : op_specs())
    for (size_t d = 0; d < 4 && s.abi_op >= 0; ++d)  // an op outside the plugin ABI: no plugin implements it
      if (r.reply.supports[inspected_index(static_cast<uint32_t>(s.abi_op)) * 4 + d]) info.supported.emplace_back(s.op, kDtypes[d]);
  for (size_t d = 0; d < 4; ++d) {
    if (r.reply.supports[4 * 4 + d]) info.grouped_dtypes.push_back(kDtypes[d]);
    if (r.reply.supports[5 * 4 + d]) info.block_dtypes.push_back(kDtypes[d]);
    if (r.reply.supports[6 * 4 + d]) info.contraction_dtypes.push_back(kDtypes[d]);
    if (r.reply.supports[7 * 4 + d]) info.jvp_dtypes.push_back(kDtypes[d]);
    if (r.reply.supports[8 * 4 + d]) info.rms_jvp_dtypes.push_back(kDtypes[d]);
  }
  info.abi_version = r.reply.abi_version;
  if (!info.block_dtypes.empty() && r.reply.block_form != NC_BLOCK_COMPOSED && r.reply.block_form != NC_BLOCK_DEFERRED)
    throw std::runtime_error("plugin '" + path + "' supports NC_LINEAR_RMSNORM but declares no block_form (NC_BLOCK_COMPOSED or NC_BLOCK_DEFERRED)");
  info.block_form = r.reply.block_form == NC_BLOCK_DEFERRED ? "deferred" : "composed";
  info.contract = r.reply.contract;
  if (!info.contract.empty() && info.contract != "two_pass" && info.contract != "welford")
    throw std::runtime_error("plugin '" + path + "' declares the contract '" + info.contract +
                             "' (normcheck_plugin_contract: \"two_pass\" or \"welford\")");
  pool->release(std::move(w));  // the first worker serves the run's first calls
  info.pool = pool;
  return info;
}

std::vector<KernelEntry> plugin_kernels(const PluginInfo& info, PluginIsolation isolation) {
  std::vector<KernelEntry> out;
  for (const auto& [op, dt] : info.supported) {
    std::function<KernelOutputs(const LayerNormCase&)> run;
    if (isolation == PluginIsolation::worker) {
      std::shared_ptr<PluginPool> pool = info.pool ? info.pool : std::make_shared<PluginPool>(info.path, 10.0);
      run = [pool, op](const LayerNormCase& c) { return run_call(*pool, op, c); };
    } else {
      const std::string path = info.path;
      const double timeout_s = info.pool ? info.pool->timeout_s() : 10.0;
      run = [path, op, timeout_s](const LayerNormCase& c) { return run_call_forked(path, op, c, timeout_s); };
    }
    out.push_back({"plugin:" + info.name, info.name, op, dt, dtype_info(dt).default_accum, false, std::move(run), info.contract});
  }
  return out;
}

}  // namespace normcheck::external
