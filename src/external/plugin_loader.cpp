#include "external/plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace normcheck::external {

bool LoadedPlugin::supports(uint32_t op, int dtype) const {
  if (v2) return v2->supports(op, static_cast<nc_dtype>(dtype)) != 0 && (op >= 16 ? v2->run_call != nullptr : v2->run != nullptr);
  return op < 16 && v1->supports(static_cast<nc_op>(op), static_cast<nc_dtype>(dtype)) != 0;
}

LoadedPlugin open_plugin(const char* path, char* msg, size_t cap) {
  LoadedPlugin p;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::snprintf(msg, cap, "cannot load plugin '%s': %s", path, dlerror());
    return p;
  }
  if (auto* declared = reinterpret_cast<const char* (*)()>(dlsym(lib, "normcheck_plugin_contract"))) {
    p.contract = declared();
    if (!p.contract) p.contract = "(null)";
  }
  if (auto* entry2 = reinterpret_cast<const nc_plugin_v2* (*)()>(dlsym(lib, "normcheck_plugin_v2"))) {
    const nc_plugin_v2* d = entry2();
    if (!d || d->abi_version != NORMCHECK_PLUGIN_ABI_VERSION_2 || !d->supports || !d->name || (!d->run && !d->run_call)) {
      std::snprintf(msg, cap, "'%s' has plugin ABI version %u in normcheck_plugin_v2, this normcheck speaks 2 there (or an incomplete description)",
                    path, d ? d->abi_version : 0u);
      return p;
    }
    p.v2 = d;
    return p;
  }
  auto* entry = reinterpret_cast<const nc_plugin* (*)()>(dlsym(lib, "normcheck_plugin_v1"));
  if (!entry) {
    std::snprintf(msg, cap, "'%s' is not a normcheck plugin: no symbol normcheck_plugin_v1 or normcheck_plugin_v2", path);
    return p;
  }
  const nc_plugin* d = entry();
  if (!d || d->abi_version != NORMCHECK_PLUGIN_ABI_VERSION || !d->supports || !d->run || !d->name) {
    std::snprintf(msg, cap, "'%s' has plugin ABI version %u, this normcheck speaks %u (or an incomplete description)",
                  path, d ? d->abi_version : 0u, NORMCHECK_PLUGIN_ABI_VERSION);
    return p;
  }
  p.v1 = d;
  return p;
}

nc_norm_args request_args(const wire::Request& req, uint8_t* block) {
  const auto at = [&](int slot) -> uint8_t* { return req.offset[slot] < 0 ? nullptr : block + req.offset[slot]; };
  nc_norm_args a{};
  a.op = static_cast<nc_op>(req.op);
  a.dtype = static_cast<nc_dtype>(req.dtype);
  a.rows = req.rows;
  a.n = req.n;
  a.x_row_stride = req.x_stride;
  a.y_row_stride = req.y_stride;
  a.dy_row_stride = req.dy_stride;
  a.dx_row_stride = req.dx_stride;
  a.eps = req.eps;
  a.x = at(0);
  a.gamma = at(1);
  a.beta = at(2);
  a.dy = at(3);
  a.y = at(4);
  a.dx = at(5);
  a.dgamma = at(6);
  a.dbeta = at(7);
  return a;
}

void inspect_plugin_into(const LoadedPlugin& p, wire::Reply& rep) {
  std::snprintf(rep.name, sizeof rep.name, "%s", p.name());
  for (int k = 0; k < wire::kInspectedOpCount; ++k)
    for (int d = 0; d < 4; ++d) rep.supports[k * 4 + d] = p.supports(wire::kInspectedOps[k], d) ? 1 : 0;
  rep.abi_version = p.v2 ? 2 : 1;
  rep.block_form = p.v2 ? p.v2->block_form : -1;
  std::snprintf(rep.contract, sizeof rep.contract, "%s", p.contract ? p.contract : "");
}

namespace {

nc_tensor tensor_at(const wire::Tensor& t, uint8_t* block) {
  nc_tensor out{};
  out.data = t.offset < 0 ? nullptr : block + t.offset;
  out.rank = t.rank;
  for (int k = 0; k < 4; ++k) {
    out.shape[k] = t.shape[k];
    out.strides[k] = t.strides[k];
  }
  return out;
}

nc_status run_v2_call(const LoadedPlugin& p, const wire::Request& req, uint8_t* block, wire::Reply& rep) {
  if (!p.v2 || !p.v2->run_call) return NC_UNSUPPORTED;
  nc_call c{};
  c.op = static_cast<uint32_t>(req.op);
  c.dtype = static_cast<nc_dtype>(req.dtype);
  c.eps = req.eps;
  c.momentum = req.momentum;
  c.kind = req.norm_kind;
  c.channel_axis = req.channel_axis;
  c.groups = req.groups;
  c.normalized_dims = req.normalized_dims;
  c.contraction_n = req.contraction_n;
  for (int k = 0; k < 6; ++k) c.in[k] = tensor_at(req.in[k], block);
  for (int k = 0; k < 7; ++k) c.out[k] = tensor_at(req.out[k], block);
  return p.v2->run_call(&c, rep.message, sizeof rep.message);
}

}  // namespace

void run_plugin_call(const LoadedPlugin& p, const wire::Request& req, uint8_t* block, wire::Reply& rep) {
  nc_status s = NC_UNSUPPORTED;
  if (req.kind == wire::kRunCall) {
    s = run_v2_call(p, req, block, rep);
  } else {
    const nc_norm_args a = request_args(req, block);
    const auto run = p.v2 ? p.v2->run : p.v1->run;
    if (run) s = run(&a, rep.message, sizeof rep.message);
  }
  rep.message[sizeof rep.message - 1] = '\0';
  rep.status = s == NC_OK ? wire::kOk : s == NC_UNSUPPORTED ? wire::kUnsupported : wire::kError;
  if (rep.status == wire::kError && !rep.message[0])
    std::snprintf(rep.message, sizeof rep.message, "the plugin returned NC_ERROR without a message");
}

}  // namespace normcheck::external
