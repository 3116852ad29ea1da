#pragma once
/// Entry point of the plugin worker process (`normcheck __plugin-worker LIB`, started by the harness).

namespace normcheck::external {

/// Serves plugin calls on the pipes and shared block of external/plugin_wire.hpp until the request
/// pipe closes; returns the process's exit status.
int plugin_worker_main(int argc, char** argv);

}  // namespace normcheck::external
