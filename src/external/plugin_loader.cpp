#include "external/plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace normcheck::external {

const nc_plugin* open_plugin(const char* path, char* msg, size_t cap) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::snprintf(msg, cap, "cannot load plugin '%s': %s", path, dlerror());
    return nullptr;
  }
  auto* entry = reinterpret_cast<const nc_plugin* (*)()>(dlsym(lib, "normcheck_plugin_v1"));
  if (!entry) {
    std::snprintf(msg, cap, "'%s' is not a normcheck plugin: no symbol normcheck_plugin_v1", path);
    return nullptr;
  }
  const nc_plugin* p = entry();
  if (!p || p->abi_version != NORMCHECK_PLUGIN_ABI_VERSION || !p->supports || !p->run || !p->name) {
    std::snprintf(msg, cap, "'%s' has plugin ABI version %u, this normcheck speaks %u (or an incomplete description)",
                  path, p ? p->abi_version : 0u, NORMCHECK_PLUGIN_ABI_VERSION);
    return nullptr;
  }
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

void run_plugin_call(const nc_plugin* p, const wire::Request& req, uint8_t* block, wire::Reply& rep) {
  const nc_norm_args a = request_args(req, block);
  const nc_status s = p->run(&a, rep.message, sizeof rep.message);
  rep.message[sizeof rep.message - 1] = '\0';
  rep.status = s == NC_OK ? wire::kOk : s == NC_UNSUPPORTED ? wire::kUnsupported : wire::kError;
  if (rep.status == wire::kError && !rep.message[0])
    std::snprintf(rep.message, sizeof rep.message, "the plugin returned NC_ERROR without a message");
}

}  // namespace normcheck::external
