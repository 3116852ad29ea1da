#pragma once
/// The worker-side half of a plugin call (it runs in a worker or forked child, never in the harness):
/// loading the library and turning a wire request into the ABI's arguments.
#include <cstddef>
#include <cstdint>

#include "external/plugin_wire.hpp"
#include "normcheck/plugin.h"

namespace normcheck::external {

/// A loaded plugin of either ABI version.
struct LoadedPlugin {
  const nc_plugin* v1 = nullptr;
  const nc_plugin_v2* v2 = nullptr;
  const char* contract = nullptr;  ///< normcheck_plugin_contract(), when the library exports it
  explicit operator bool() const { return v1 || v2; }
  const char* name() const { return v2 ? v2->name : v1->name; }
  bool supports(uint32_t op, int dtype) const;
};

/// dlopens the library and checks its description (normcheck_plugin_v2 first, then _v1); empty with
/// the reason in msg when it cannot.
LoadedPlugin open_plugin(const char* path, char* msg, size_t cap);

/// The ABI arguments of a request whose tensors lie at its offsets in `block`.
nc_norm_args request_args(const wire::Request& req, uint8_t* block);

/// Fills the inspect reply: name, supported (op, dtype), ABI version, block form.
void inspect_plugin_into(const LoadedPlugin& p, wire::Reply& rep);

/// Runs the call (kRun: an nc_norm_args call; kRunCall: an ABI v2 nc_call) and fills status and message.
void run_plugin_call(const LoadedPlugin& p, const wire::Request& req, uint8_t* block, wire::Reply& rep);

}  // namespace normcheck::external
