#include "external/isolated.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace normcheck::external {
namespace {

constexpr size_t kMessageCapacity = 1024;

/// An anonymous shared mapping, unmapped on scope exit.
struct SharedBlock {
  explicit SharedBlock(size_t n) : size(n) {
    data = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) data = nullptr;
  }
  ~SharedBlock() {
    if (data) munmap(data, size);
  }
  SharedBlock(const SharedBlock&) = delete;
  SharedBlock& operator=(const SharedBlock&) = delete;
  void* data;
  size_t size;
};

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

IsolatedResult run_isolated(const std::function<int(uint8_t*, size_t, char*, size_t)>& fn,
                            const std::vector<uint8_t>& input, size_t capacity, double timeout_s) {
  IsolatedResult r;
  capacity = std::max(capacity, input.size());
  SharedBlock block(capacity + kMessageCapacity);
  if (!block.data) {
    r.failure = "cannot map shared memory for the isolated call";
    return r;
  }
  auto* bytes = static_cast<uint8_t*>(block.data);
  char* message = reinterpret_cast<char*>(bytes + capacity);
  if (!input.empty()) std::memcpy(bytes, input.data(), input.size());
  message[0] = '\0';
  const pid_t pid = fork();
  if (pid < 0) {
    r.failure = "fork failed";
    return r;
  }
  if (pid == 0) {  // child: run, report through the shared block, never return into the harness
    setpgid(0, 0);  // its own process group, so that a timeout kills whatever it started too
    int status = 4;
    try {  // never unwind into the harness's copy of the stack
      status = fn(bytes, capacity, message, kMessageCapacity);
    } catch (...) {
      std::snprintf(message, kMessageCapacity, "the isolated call threw an exception");
    }
    message[kMessageCapacity - 1] = '\0';
    _exit(status == 0 ? 0 : 3);
  }
  setpgid(pid, pid);  // also from the parent: no race with the child's own call
  const double deadline = now_s() + timeout_s;
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      kill(-pid, SIGKILL);
      r.failure = fmt::format("waiting for the isolated call failed: {}", std::strerror(errno));
      return r;
    }
    if (now_s() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.from_child = true;
      r.failure = fmt::format("timed out after {} s (killed)", timeout_s);
      return r;
    }
    usleep(200);
  }
  r.from_child = true;
  message[kMessageCapacity - 1] = '\0';  // a child that exited without finishing its message
  if (WIFSIGNALED(status)) {
    r.failure = fmt::format("crashed with signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return r;
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.failure = message[0] ? std::string(message) : fmt::format("exited with status {}", WEXITSTATUS(status));
    return r;
  }
  r.ok = true;
  r.bytes.assign(bytes, bytes + capacity);
  return r;
}

}  // namespace normcheck::external
