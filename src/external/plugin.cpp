#include "external/plugin.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "core/storage_bytes.hpp"
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

/// Byte layout of one call in the shared block: inputs, then outputs.
struct CallLayout {
  size_t x, gamma, beta, dy, y, dx, dgamma, dbeta, total;
};

CallLayout layout_of(const LayerNormCase& c, DType d) {
  const size_t e = item_size(d), rn = static_cast<size_t>(c.rows * c.n) * e, n = static_cast<size_t>(c.n) * e;
  CallLayout l{};
  l.x = 0;
  l.gamma = rn;
  l.beta = l.gamma + n;
  l.dy = l.beta + n;
  l.y = l.dy + rn;
  l.dx = l.y + rn;
  l.dgamma = l.dx + rn;
  l.dbeta = l.dgamma + n;
  l.total = l.dbeta + n;
  return l;
}

KernelOutputs run_call(const std::string& path, Op op, const LayerNormCase& c, double timeout_s) {
  const CallLayout l = layout_of(c, c.dtype);
  std::string in;
  encode_values(c.x, c.dtype, in);
  encode_values(c.gamma, c.dtype, in);
  encode_values(is_rmsnorm(op) ? std::vector<double>(c.gamma.size(), 0.0) : c.beta, c.dtype, in);
  encode_values(is_backward(op) ? c.dy : std::vector<double>(c.x.size(), 0.0), c.dtype, in);
  const std::vector<uint8_t> input(in.begin(), in.end());
  const IsolatedResult r = run_isolated(
      [&](uint8_t* b, size_t, char* msg, size_t cap) {
        const nc_plugin* p = open_plugin(path, msg, cap);
        if (!p) return 1;
        nc_norm_args a{};
        a.op = abi_op(op);
        a.dtype = abi_dtype(c.dtype);
        a.rows = c.rows;
        a.n = c.n;
        a.x_row_stride = a.y_row_stride = a.dy_row_stride = a.dx_row_stride = c.n;
        a.eps = c.eps;
        a.x = b + l.x;
        a.gamma = b + l.gamma;
        a.beta = is_rmsnorm(op) ? nullptr : b + l.beta;
        if (is_backward(op)) {
          a.dy = b + l.dy;
          a.dx = b + l.dx;
          a.dgamma = b + l.dgamma;
          a.dbeta = is_rmsnorm(op) ? nullptr : b + l.dbeta;
        } else {
          a.y = b + l.y;
        }
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
  const size_t rn = static_cast<size_t>(c.rows * c.n), n = static_cast<size_t>(c.n);
  if (!is_backward(op)) {
    out.y = decode_values(r.bytes.data() + l.y, rn, c.dtype);
  } else {
    out.dx = decode_values(r.bytes.data() + l.dx, rn, c.dtype);
    out.dgamma = decode_values(r.bytes.data() + l.dgamma, n, c.dtype);
    if (!is_rmsnorm(op)) out.dbeta = decode_values(r.bytes.data() + l.dbeta, n, c.dtype);
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
