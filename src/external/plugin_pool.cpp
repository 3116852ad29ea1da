#include "external/plugin_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>

#include <fmt/format.h>

namespace normcheck::external {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

/// What one worker process may write to normcheck's stderr; the rest is dropped (with one line saying so).
constexpr std::uintmax_t kMaxForwardedStderrBytes = std::uintmax_t{1} << 20;

}  // namespace

PluginWorker::~PluginWorker() {
  close_fd(request_fd_);  // a healthy worker sees end of file and exits; the group kill makes sure
  close_fd(reply_fd_);
  child_.kill_group();
  if (map_) munmap(map_, map_size_);
  if (control_) munmap(control_, wire::kControlBytes);
  close_fd(block_fd_);
  close_fd(control_fd_);
}

long long PluginWorker::block_file_size() const {
  struct stat st{};
  return block_fd_ >= 0 && fstat(block_fd_, &st) == 0 ? static_cast<long long>(st.st_size) : -1;
}

void PluginWorker::discard_block() {
  if (map_) munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  close_fd(block_fd_);
}

std::string PluginWorker::reserve(size_t bytes) {
  // A plugin that resized the block between calls (a thread of its own) changed the worker's
  // shared state: that process and its block go, this call gets fresh ones (issue 48 M5).
  if (block_fd_ >= 0 && map_ && block_file_size() != static_cast<long long>(map_size_)) {
    discard_process();
    discard_block();
  }
  if (block_fd_ < 0) {
    block_fd_ = memfd_create("normcheck_plugin_call", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (block_fd_ < 0) return std::string("cannot create the shared call block: ") + std::strerror(errno);
    // a plugin holds the file on fd 5: it must not shrink it under the harness's mapping (SIGBUS)
    if (fcntl(block_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
      return std::string("cannot seal the shared call block: ") + std::strerror(errno);
  }
  if (bytes <= map_size_ && map_) return "";
  const size_t size = std::max(bytes, 2 * map_size_);
  if (map_) munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  if (ftruncate(block_fd_, static_cast<off_t>(size)) != 0)
    return std::string("cannot size the shared call block: ") + std::strerror(errno);
  void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, block_fd_, 0);
  if (m == MAP_FAILED) return std::string("cannot map the shared call block: ") + std::strerror(errno);
  map_ = m;
  map_size_ = size;
  return "";
}

std::string PluginWorker::start() {
  if (std::string r = reserve(1); !r.empty()) return r;
  control_fd_ = memfd_create("normcheck_plugin_control", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (control_fd_ < 0 || ftruncate(control_fd_, static_cast<off_t>(wire::kControlBytes)) != 0 ||
      fcntl(control_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return std::string("cannot create the worker's control page: ") + std::strerror(errno);
  void* page = mmap(nullptr, wire::kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, control_fd_, 0);
  if (page == MAP_FAILED) return std::string("cannot map the worker's control page: ") + std::strerror(errno);
  control_ = new (page) wire::Control();
  const auto [req_read, req_write] = cloexec_pipe();
  const auto [rep_read, rep_write] = cloexec_pipe();
  if (req_read < 0 || rep_read < 0) return "cannot create the worker's pipes";
  SpawnSpec spec;
  spec.argv = {"/proc/self/exe", "__plugin-worker", library_};
  spec.fds = {{req_read, wire::kRequestFd}, {rep_write, wire::kReplyFd}, {block_fd_, wire::kBlockFd}, {control_fd_, wire::kControlFd}};
  spec.stdout_path = "/dev/null";  // a chatty plugin never mixes into normcheck's summary
  StderrSinkOptions log;            // stderr is kept, up to a cap (a flooding plugin cannot drown normcheck's)
  log.forward_fd = 2;
  log.forward_cap = kMaxForwardedStderrBytes;
  log.label = "plugin worker (" + library_ + ")";
  if (std::string e = stderr_.open(log); !e.empty()) return e;
  spec.fds.push_back({stderr_.child_end(), 2});
  const std::string err = child_.spawn(spec);
  close(req_read);
  close(rep_write);
  stderr_.close_child_end();
  request_fd_ = req_write;
  reply_fd_ = rep_read;
  started_ = true;
  if (!err.empty()) return err;
  wire::Reply loaded;  // the worker loads the library first and says how it went
  const std::string e = read_exact(reply_fd_, &loaded, sizeof loaded, monotonic_s() + startup_s_);
  if (e == "timeout") {
    child_.kill_group();
    return fmt::format("timed out after {} s loading the library (killed)", startup_s_);
  }
  if (!e.empty()) {
    child_.wait_until(monotonic_s() + 5);
    child_.kill_group();
    return e == "eof" ? child_.ended_how() + stderr_.last_line(0.2) : "worker " + e;
  }
  loaded.message[sizeof loaded.message - 1] = '\0';
  if (loaded.magic != wire::kMagic) return "the worker's first reply is corrupt";
  if (loaded.status != wire::kOk) {
    child_.kill_group();
    load_failure_ = loaded.message;
    return loaded.message;
  }
  return "";
}

/// Waits for the reply numbered `seq`: spins a little, then sleeps on the reply pipe. "" when it
/// came, "timeout", "eof" (the worker died) or why not.
std::string PluginWorker::wait_reply(uint64_t seq, double deadline) {
  const double spin_until = monotonic_s() + 1e-6 * wire::kHarnessSpinUs;
  while (control_->reply_seq.load() != seq)
    if (monotonic_s() > spin_until) break;
  while (control_->reply_seq.load() != seq) {
    // the deadline holds whatever the worker writes into the pipe (a flood of wake-up bytes)
    const double left = deadline - monotonic_s();
    if (!(left > 0)) return "timeout";
    control_->harness_sleeping.store(1);
    if (control_->reply_seq.load() == seq) break;
    pollfd p{reply_fd_, POLLIN, 0};
    const int r = poll(&p, 1, left > 3600 ? 3600000 : static_cast<int>(left * 1000.0) + 1);
    if (r < 0 && errno != EINTR) {
      control_->harness_sleeping.store(0);
      return std::string("poll failed: ") + std::strerror(errno);
    }
    if (r > 0) {
      char wake[4096];  // every pending wake-up byte at once
      const ssize_t k = read(reply_fd_, wake, sizeof wake);
      if (k == 0) {  // the worker is gone (perhaps right after replying)
        control_->harness_sleeping.store(0);
        dead_ = true;
        return control_->reply_seq.load() == seq ? "" : "eof";
      }
    }
    control_->harness_sleeping.store(0);
  }
  control_->harness_sleeping.store(0);
  return "";
}

bool PluginWorker::process_gone() {
  pollfd p{reply_fd_, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
  char wake[4096];  // stale wake-up bytes from an earlier call
  return read(reply_fd_, wake, sizeof wake) == 0;
}

void PluginWorker::discard_process() {
  close_fd(request_fd_);
  close_fd(reply_fd_);
  child_.kill_group();
  if (control_) munmap(control_, wire::kControlBytes);
  control_ = nullptr;
  close_fd(control_fd_);
  started_ = false;
  dead_ = false;
  seq_ = 0;
}

WorkerOutcome PluginWorker::fail(std::string why) {
  healthy_ = false;
  close_fd(request_fd_);
  close_fd(reply_fd_);
  WorkerOutcome o;
  o.failure = std::move(why);
  return o;
}

WorkerOutcome PluginWorker::call(wire::Request req, double timeout_s) {
  if (!healthy_) return fail("the worker is gone");
  // A worker that died between calls (a plugin thread aborting after its call returned) is not
  // this case's failure: start a new one for it.
  if (started_ && process_gone()) discard_process();
  if (!started_)
    if (std::string e = start(); !e.empty()) {
      WorkerOutcome o = fail(e);
      if (!load_failure_.empty()) {  // not a crash: the library's own answer (missing file, wrong ABI)
        o.ok = true;
        o.reply.status = wire::kLoadFailed;
        std::snprintf(o.reply.message, sizeof o.reply.message, "%s", load_failure_.c_str());
      }
      return o;
    }
  req.magic = wire::kMagic;
  const double deadline = monotonic_s() + timeout_s;
  control_->request = req;
  control_->request_seq.store(++seq_);
  std::string e;
  if (control_->worker_sleeping.load()) {
    const char wake = 1;
    e = write_all(request_fd_, &wake, 1, deadline);
  }
  if (e.empty()) e = wait_reply(seq_, deadline);
  WorkerOutcome o;
  if (e.empty()) o.reply = control_->reply;
  if (e == "timeout") {
    child_.kill_group();
    return fail(fmt::format("timed out after {} s (killed)", timeout_s));
  }
  if (!e.empty()) {  // end of file: the worker died; say how
    child_.wait_until(monotonic_s() + 5);
    child_.kill_group();
    return fail(e == "eof" ? child_.ended_how() + stderr_.last_line(0.2) : "worker " + e);
  }
  if (o.reply.magic != wire::kMagic) {
    child_.kill_group();
    return fail("the worker's reply is corrupt (something overwrote its shared control page)");
  }
  if (const long long now = block_file_size(); now != static_cast<long long>(map_size_)) {
    child_.kill_group();  // its outputs are not read; the worker (process and block) is replaced
    return fail(fmt::format("changed the size of its shared call block from {} to {} bytes (the worker is replaced)", map_size_, now));
  }
  if (dead_) {  // it replied, then died: the reply stands, the worker goes
    child_.kill_group();
    healthy_ = false;
  }
  o.reply.message[sizeof o.reply.message - 1] = '\0';
  o.reply.name[sizeof o.reply.name - 1] = '\0';
  if (o.reply.status == wire::kLoadFailed) {
    child_.kill_group();
    healthy_ = false;
  }
  o.ok = true;
  return o;
}

PooledCall call_in_worker(PluginPool& pool, const std::vector<uint8_t>& block, const wire::Request& req) {
  PooledCall r;
  std::unique_ptr<PluginWorker> w = pool.acquire();
  if (std::string e = w->reserve(block.size()); !e.empty()) {
    r.failure = "plugin worker: " + e;
  } else {
    std::memcpy(w->block(), block.data(), block.size());
    const WorkerOutcome o = w->call(req);
    if (!o.ok) r.failure = "plugin " + o.failure;
    else if (o.reply.status == wire::kUnsupported) r.skipped = true;
    else if (o.reply.status != wire::kOk) r.failure = std::string("plugin ") + o.reply.message;
    else r.after.assign(w->block(), w->block() + block.size());
  }
  pool.release(std::move(w));
  return r;
}

}  // namespace normcheck::external
