#pragma once
/// Persistent plugin workers: each a fresh `normcheck __plugin-worker LIB` process (posix_spawn, never
/// fork() from the multi-threaded harness) that loads the plugin once and serves calls through a
/// shared memory file. A pool hands one idle worker to each calling thread (so there are at most as
/// many as --threads); a worker that crashed, hung (killed at the time limit) or broke the protocol
/// is discarded and the next call starts a new one.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "external/child_process.hpp"
#include "external/plugin_wire.hpp"
#include "external/stderr_sink.hpp"
#include "external/worker_pool.hpp"

namespace normcheck::external {

/// What a worker call came back with.
struct WorkerOutcome {
  bool ok = false;          ///< the call ran and replied (see reply.status)
  std::string failure;      ///< else: "crashed with signal 11 (...)", "timed out after 10 s (killed)", ...
  wire::Reply reply;
};

class PluginWorker {
 public:
  PluginWorker(std::string library, double timeout_s, double startup_s)
      : library_(std::move(library)), timeout_s_(timeout_s), startup_s_(startup_s) {}
  ~PluginWorker();
  PluginWorker(const PluginWorker&) = delete;
  PluginWorker& operator=(const PluginWorker&) = delete;

  /// The shared block, at least `bytes` long, for the next call's tensors ("" or why not).
  std::string reserve(size_t bytes);
  uint8_t* block() { return static_cast<uint8_t*>(map_); }
  /// Sends the request and waits for the reply (starting the process first if needed). After a
  /// failure the worker is dead (healthy() is false).
  WorkerOutcome call(wire::Request req, double timeout_s);
  WorkerOutcome call(const wire::Request& req) { return call(req, timeout_s_); }
  bool healthy() const { return healthy_; }

 private:
  std::string start();
  WorkerOutcome fail(std::string why);
  std::string library_;
  double timeout_s_, startup_s_;
  ChildProcess child_;
  StderrSink stderr_;  ///< the process's stderr, forwarded to normcheck's up to a cap
  std::string wait_reply(uint64_t seq, double deadline);
  bool process_gone();     ///< the worker process has exited (its reply pipe hung up)
  void discard_process();  ///< closes, kills and forgets the process; the next call starts another
  void discard_block();    ///< unmaps and closes the shared call block; the next reserve creates another
  /// The block file's size now (-1 if unknown): the plugin holds it on fd 5 and may have grown it.
  long long block_file_size() const;
  int request_fd_ = -1, reply_fd_ = -1, block_fd_ = -1, control_fd_ = -1;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  wire::Control* control_ = nullptr;  ///< the shared control page
  uint64_t seq_ = 0;
  std::string load_failure_;  ///< the library could not be loaded (the worker's own sentence)
  bool started_ = false, healthy_ = true, dead_ = false;
};

/// The persistent workers of one plugin library.
class PluginPool : public WorkerPool<PluginWorker> {
 public:
  /// timeout_s per call; startup_s for a worker to load the library.
  PluginPool(std::string library, double timeout_s, double startup_s = 120)
      : WorkerPool([library, timeout_s, startup_s] { return std::make_unique<PluginWorker>(library, timeout_s, startup_s); }),
        library_(std::move(library)),
        timeout_s_(timeout_s) {}
  const std::string& library() const { return library_; }
  double timeout_s() const { return timeout_s_; }

 private:
  std::string library_;
  double timeout_s_;
};

/// One call through a worker of the pool: `block` copied into the shared memory, `req` sent. On
/// NC_OK, `after` is a snapshot of the block as the worker left it (checked and read alike);
/// otherwise the failure ("plugin crashed with signal 11 ...", the plugin's NC_ERROR message) or
/// skipped (NC_UNSUPPORTED).
struct PooledCall {
  std::string failure;
  bool skipped = false;
  std::vector<uint8_t> after;
};
PooledCall call_in_worker(PluginPool& pool, const std::vector<uint8_t>& block, const wire::Request& req);

}  // namespace normcheck::external
