#pragma once
/// Idle persistent workers (plugin workers, serve-mode processes) handed to one calling thread at a
/// time: a runner with T threads never holds more than T. A worker that failed (crashed, hung,
/// broke the protocol) is not taken back; the next acquire() makes a new one.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace normcheck::external {

template <class Worker>
class WorkerPool {
 public:
  explicit WorkerPool(std::function<std::unique_ptr<Worker>()> make) : make_(std::move(make)) {}
  std::unique_ptr<Worker> acquire() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        std::unique_ptr<Worker> w = std::move(idle_.back());
        idle_.pop_back();
        return w;
      }
    }
    return make_();
  }
  void release(std::unique_ptr<Worker> w) {
    if (!w || !w->healthy()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(w));
  }

 private:
  std::function<std::unique_ptr<Worker>()> make_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Worker>> idle_;
};

/// Consecutive failures to start a worker: after kGiveUp of them the command or library is taken to
/// be broken and every further call fails at once with the last reason (instead of waiting out the
/// startup time limit once per call).
class StartFailures {
 public:
  static constexpr int kGiveUp = 3;
  void note(bool start_failed, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    count_ = start_failed ? count_ + 1 : 0;
    if (start_failed) last_ = why;
  }
  /// "" while workers may still start; else the failure every call now gets.
  std::string given_up() {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_ < kGiveUp ? "" : last_ + " (" + std::to_string(kGiveUp) + " workers in a row failed to start: not tried again)";
  }

 private:
  std::mutex mutex_;
  int count_ = 0;
  std::string last_;
};

}  // namespace normcheck::external
