#include "external/plugin.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/storage_bytes.hpp"
#include "external/call_layout.hpp"
#include "external/isolated.hpp"
#include "normcheck/plugin.h"

namespace normcheck::external {
namespace {

constexpr const char* kUnsupported = "NC_UNSUPPORTED";

nc_op abi_op(Op op) {
  switch (op) {
    case Op::layernorm_forward: return NC_LAYERNORM_FORWARD;
    case Op::layernorm_backward: return NC_LAYERNORM_BACKWARD;
    case Op::rmsnorm_forward: return NC_RMSNORM_FORWARD;
    case Op::rmsnorm_backward: return NC_RMSNORM_BACKWARD;
  }
  return NC_LAYERNORM_FORWARD;
}

nc_dtype abi_dtype(DType d) {
  switch (d) {
    case DType::f16: return NC_F16;
    case DType::bf16: return NC_BF16;
    case DType::f32: return NC_F32;
    case DType::f64: return NC_F64;
  }
  return NC_F32;
}

/// Opens the library and returns its description, or writes why not (child side).
const nc_plugin* open_plugin(const std::string& path, char* msg, size_t cap) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::snprintf(msg, cap, "cannot load plugin '%s': %s", path.c_str(), dlerror());
    return nullptr;
  }
  auto* entry = reinterpret_cast<const nc_plugin* (*)()>(dlsym(lib, "normcheck_plugin_v1"));
  if (!entry) {
    std::snprintf(msg, cap, "'%s' is not a normcheck plugin: no symbol normcheck_plugin_v1", path.c_str());
    return nullptr;
  }
  const nc_plugin* p = entry();
  if (!p || p->abi_version != NORMCHECK_PLUGIN_ABI_VERSION || !p->supports || !p->run || !p->name) {
    std::snprintf(msg, cap, "'%s' has plugin ABI version %u, this normcheck speaks %u (or an incomplete description)",
                  path.c_str(), p ? p->abi_version : 0u, NORMCHECK_PLUGIN_ABI_VERSION);
    return nullptr;
  }
  return p;
}

constexpr Op kOps[] = {Op::layernorm_forward, Op::layernorm_backward, Op::rmsnorm_forward, Op::rmsnorm_backward};
constexpr DType kDtypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64};

/// The ABI arguments of a call whose tensors lie in `block` as `l` places them.
nc_norm_args call_args(Op op, const LayerNormCase& c, const CallLayout& l, uint8_t* block) {
  const auto at = [&](const TensorSlot& t) -> uint8_t* { return t.present ? block + t.offset : nullptr; };
  nc_norm_args a{};
  a.op = abi_op(op);
  a.dtype = abi_dtype(c.dtype);
  a.rows = c.rows;
  a.n = c.n;
  a.x_row_stride = l.x.stride;
  a.dy_row_stride = l.dy.present ? l.dy.stride : c.n;
  a.y_row_stride = l.y.present ? l.y.stride : c.n;
  a.dx_row_stride = l.dx.present ? l.dx.stride : c.n;
  a.eps = c.eps;
  a.x = at(l.x);
  a.gamma = at(l.gamma);
  a.beta = at(l.beta);
  a.dy = at(l.dy);
  a.y = at(l.y);
  a.dx = at(l.dx);
  a.dgamma = at(l.dgamma);
  a.dbeta = at(l.dbeta);
  return a;
}

KernelOutputs run_call(const std::string& path, Op op, const LayerNormCase& c, double timeout_s) {
  const CallLayout l = call_layout(c, op, call_strides(c, op));
  const std::vector<uint8_t> input = call_block(c, op, l);
  const IsolatedResult r = run_isolated(
      [&](uint8_t* b, size_t, char* msg, size_t cap) {
        const nc_plugin* p = open_plugin(path, msg, cap);
        if (!p) return 1;
        const nc_norm_args a = call_args(op, c, l, b);
        const nc_status s = p->run(&a, msg, cap);
        if (s == NC_UNSUPPORTED) std::snprintf(msg, cap, "%s", kUnsupported);
        if (s == NC_ERROR && !msg[0]) std::snprintf(msg, cap, "the plugin returned NC_ERROR without a message");
        return s == NC_OK ? 0 : 1;
      },
      input, l.total, timeout_s);
  KernelOutputs out;
  if (!r.ok) {
    if (r.failure == kUnsupported) out.skipped = true;
    else out.failure = "plugin " + r.failure;
    return out;
  }
  if (const std::string touched = check_untouched(input, r.bytes, l); !touched.empty()) {
    out.failure = "plugin: " + touched;
    return out;
  }
  if (!is_backward(op)) {
    out.y = read_slot(r.bytes, l.y, c.dtype);
  } else {
    out.dx = read_slot(r.bytes, l.dx, c.dtype);
    out.dgamma = read_slot(r.bytes, l.dgamma, c.dtype);
    if (!is_rmsnorm(op)) out.dbeta = read_slot(r.bytes, l.dbeta, c.dtype);
  }
  return out;
}

}  // namespace

PluginInfo inspect_plugin(const std::string& path, double timeout_s) {
  constexpr size_t kCells = 16;
  const IsolatedResult r = run_isolated(
      [&](uint8_t* b, size_t, char* msg, size_t cap) {
        const nc_plugin* p = open_plugin(path, msg, cap);
        if (!p) return 1;
        std::snprintf(reinterpret_cast<char*>(b + kCells), 64, "%s", p->name);
        for (size_t o = 0; o < 4; ++o)
          for (size_t d = 0; d < 4; ++d) b[o * 4 + d] = p->supports(abi_op(kOps[o]), abi_dtype(kDtypes[d])) ? 1 : 0;
        return 0;
      },
      {}, kCells + 64, timeout_s);
  if (!r.ok) {
    const bool own_message = r.from_child && r.exit_code > 0;  // open_plugin's sentence names the path
    throw std::runtime_error(own_message ? r.failure : "plugin '" + path + "': " + r.failure + " while loading");
  }
  PluginInfo info;
  info.path = path;
  info.name = std::string(reinterpret_cast<const char*>(r.bytes.data() + kCells), strnlen(reinterpret_cast<const char*>(r.bytes.data() + kCells), 63));
  for (const char ch : info.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      throw std::runtime_error("plugin '" + path + "' has an invalid name '" + info.name + "' (letters, digits, '_')");
  if (info.name.empty()) throw std::runtime_error("plugin '" + path + "' has an empty name");
  for (size_t o = 0; o < 4; ++o)
    for (size_t d = 0; d < 4; ++d)
      if (r.bytes[o * 4 + d]) info.supported.emplace_back(kOps[o], kDtypes[d]);
  return info;
}

std::vector<KernelEntry> plugin_kernels(const PluginInfo& info, double timeout_s) {
  std::vector<KernelEntry> out;
  for (const auto& [op, dt] : info.supported) {
    const std::string path = info.path;
    out.push_back({"plugin:" + info.name, info.name, op, dt, dtype_info(dt).default_accum, false,
                   [path, op, timeout_s](const LayerNormCase& c) { return run_call(path, op, c, timeout_s); }});
  }
  return out;
}

}  // namespace normcheck::external
