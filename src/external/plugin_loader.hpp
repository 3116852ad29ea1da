#pragma once
/// The worker-side half of a plugin call (it runs in a worker or forked child, never in the harness):
/// loading the library and turning a wire request into the ABI's arguments.
#include <cstddef>
#include <cstdint>

#include "external/plugin_wire.hpp"
#include "normcheck/plugin.h"

namespace normcheck::external {

/// dlopens the library and checks its description; nullptr with the reason in msg when it cannot.
const nc_plugin* open_plugin(const char* path, char* msg, size_t cap);

/// The ABI arguments of a request whose tensors lie at its offsets in `block`.
nc_norm_args request_args(const wire::Request& req, uint8_t* block);

/// Runs the call and fills status and message of the reply.
void run_plugin_call(const nc_plugin* p, const wire::Request& req, uint8_t* block, wire::Reply& rep);

}  // namespace normcheck::external
