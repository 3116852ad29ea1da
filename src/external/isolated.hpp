#pragma once
/// Runs a function in a forked child process with a time limit, so that a crashing or hanging
/// external kernel becomes a recorded failure instead of taking the harness down. The child
/// writes its results into a shared memory block and a message buffer.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace normcheck::external {

struct IsolatedResult {
  bool ok = false;
  std::string failure;         ///< why not: "crashed with signal 11 (Segmentation fault)", "timed out after 10 s", or the child's message
  std::vector<uint8_t> bytes;  ///< the shared block as the child left it
  int exit_code = -1;          ///< the child's exit status when it exited normally
  bool from_child = false;     ///< the failure is the child's (crash, timeout, exit, its message), not the harness's
};

/// Calls fn(block, capacity, message, message_capacity) in a child; fn returns 0 on success, else
/// writes a message. The block starts as a copy of `input` (resized to `capacity`).
IsolatedResult run_isolated(const std::function<int(uint8_t*, size_t, char*, size_t)>& fn,
                            const std::vector<uint8_t>& input, size_t capacity, double timeout_s);

}  // namespace normcheck::external
