#pragma once
/// Idle persistent workers (plugin workers, serve-mode processes) handed to one calling thread at a
/// time: a runner with T threads never holds more than T. A worker that failed (crashed, hung,
/// broke the protocol) is not taken back; the next acquire() makes a new one.
#include <functional>
#include <memory>
#include <mutex>
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

}  // namespace normcheck::external
