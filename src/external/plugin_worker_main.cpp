// The plugin worker process: `normcheck __plugin-worker LIB`, started by the harness with posix_spawn
// (src/external/plugin_pool.cpp). It loads the plugin once and serves calls until its request pipe
// closes. A crash or hang here is the harness's recorded kernel failure; the harness replaces it.
#include "external/plugin_worker_main.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "external/plugin_loader.hpp"

namespace normcheck::external {
namespace {

double now_us() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e6 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_nsec);
}

/// Waits for a request newer than `last`: spins a little, then sleeps on the request pipe. False
/// when the harness has gone (end of file).
bool wait_for_request(wire::Control& c, uint64_t last) {
  const double until = now_us() + wire::kWorkerSpinUs;
  while (c.request_seq.load() == last)
    if (now_us() > until) break;
  while (c.request_seq.load() == last) {
    c.worker_sleeping.store(1);
    if (c.request_seq.load() != last) {
      c.worker_sleeping.store(0);
      break;
    }
    char wake[64];
    const ssize_t k = read(wire::kRequestFd, wake, sizeof wake);
    c.worker_sleeping.store(0);
    if (k == 0 || (k < 0 && errno != EINTR)) return false;  // the harness closed the pipe (or died): done
  }
  return true;
}

/// Publishes the reply and wakes the harness if it sleeps.
bool publish(wire::Control& c, const wire::Reply& rep, uint64_t seq) {
  c.reply = rep;
  c.reply_seq.store(seq);
  if (c.harness_sleeping.load()) {
    const char wake = 1;
    while (write(wire::kReplyFd, &wake, 1) < 0)
      if (errno != EINTR) return false;
  }
  return true;
}

bool send_reply(const wire::Reply& r) {
  const auto* p = reinterpret_cast<const char*>(&r);
  size_t left = sizeof r;
  while (left > 0) {
    const ssize_t k = write(wire::kReplyFd, p, left);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    left -= static_cast<size_t>(k);
  }
  return true;
}

/// The shared block, mapped again only when a call needs more than is mapped.
struct Block {
  void* data = nullptr;
  size_t size = 0;
  bool ensure(size_t need) {
    if (need <= size && data) return true;
    if (data) munmap(data, size);
    data = mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_SHARED, wire::kBlockFd, 0);
    if (data == MAP_FAILED) {
      data = nullptr;
      size = 0;
      return false;
    }
    size = need;
    return true;
  }
};

void run(const LoadedPlugin& p, const wire::Request& req, Block& block, wire::Reply& rep) {
  if (!block.ensure(req.block_bytes)) {
    rep.status = wire::kError;
    std::snprintf(rep.message, sizeof rep.message, "the worker cannot map the call's %llu bytes",
                  static_cast<unsigned long long>(req.block_bytes));
    return;
  }
  run_plugin_call(p, req, static_cast<uint8_t*>(block.data), rep);
}

/// Exits the worker when the harness goes away (its request pipe's writer closes), even while a
/// plugin call hangs in the main thread.
void start_orphan_watchdog() {
  std::thread([] {
    for (;;) {
      pollfd p{wire::kRequestFd, 0, 0};
      if (poll(&p, 1, -1) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) _exit(0);
    }
  }).detach();
}

}  // namespace

int plugin_worker_main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "normcheck: error: __plugin-worker is started by normcheck itself\n");
    return 2;
  }
  start_orphan_watchdog();
  wire::Reply rep;
  Block block;
  void* page = mmap(nullptr, wire::kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, wire::kControlFd, 0);
  if (page == MAP_FAILED) {
    std::snprintf(rep.message, sizeof rep.message, "the worker cannot map its control page");
    rep.status = wire::kLoadFailed;
    send_reply(rep);
    return 1;
  }
  auto& control = *static_cast<wire::Control*>(page);
  // Load first and say so: the harness gives loading (a large library, a device context) its own
  // time limit, apart from the calls'.
  const LoadedPlugin p = open_plugin(argv[2], rep.message, sizeof rep.message);
  rep.status = p ? wire::kOk : wire::kLoadFailed;
  if (!send_reply(rep) || !p) return 1;
  for (uint64_t last = 0; wait_for_request(control, last);) {
    last = control.request_seq.load();
    const wire::Request req = control.request;
    rep = wire::Reply{};
    if (req.magic != wire::kMagic) {
      rep.status = wire::kError;
      std::snprintf(rep.message, sizeof rep.message, "the worker received a corrupt request");
    } else if (req.kind == wire::kInspect) {
      inspect_plugin_into(p, rep);
    } else {
      run(p, req, block, rep);
    }
    if (!publish(control, rep, last)) return 1;
  }
  return 0;
}

}  // namespace normcheck::external
