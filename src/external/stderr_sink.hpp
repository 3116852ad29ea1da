#pragma once
/// A child's stderr drained through a pipe on its own thread, so that no child can fill memory,
/// disk or normcheck's own stderr (issue 48 M4): the bytes go to a file that is cut back to empty
/// (with a note of what was dropped) whenever it passes its cap, and/or are forwarded to one of
/// normcheck's descriptors up to a cap; the last 4 KiB are kept for failure messages. Stopping
/// never waits for end of file: a grandchild that escaped the process group may hold the pipe.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace normcheck::external {

struct StderrSinkOptions {
  std::string file;                        ///< "" = no file
  std::uintmax_t file_cap = 8u << 20;      ///< the file is emptied when it would pass this
  int forward_fd = -1;                     ///< -1 = no forwarding (e.g. 2: normcheck's stderr)
  std::uintmax_t forward_cap = 1u << 20;   ///< bytes forwarded at most, then one line says the rest is dropped
  std::string label = "child";             ///< names the child in that line
};

class StderrSink {
 public:
  StderrSink() = default;
  ~StderrSink();
  StderrSink(const StderrSink&) = delete;
  StderrSink& operator=(const StderrSink&) = delete;

  /// Creates the pipe and starts draining it (stopping an earlier one first): "" or why not.
  std::string open(StderrSinkOptions options);
  /// The pipe's write end, to become the child's fd 2 (close_child_end() after spawning).
  int child_end() const { return write_fd_; }
  void close_child_end();
  /// ": <last non-blank line>" (printable) or "": waits up to `wait_s` for the pipe's end of file
  /// first, so that what a dying child wrote last is in it.
  std::string last_line(double wait_s = 0.5);
  /// Stops draining (idempotent; what is still in the pipe is read without waiting for more).
  void stop();
  std::uintmax_t bytes_seen() const;

 private:
  void drain();
  void consume(const char* data, std::size_t size);

  StderrSinkOptions options_;
  int read_fd_ = -1, write_fd_ = -1, stop_read_ = -1, stop_write_ = -1, file_fd_ = -1;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable eof_cv_;
  bool eof_ = false;
  std::string tail_;
  std::uintmax_t seen_ = 0, in_file_ = 0, dropped_from_file_ = 0, forwarded_ = 0;
  bool forward_cut_ = false;
};

}  // namespace normcheck::external

namespace normcheck::external {

/// ": <last non-blank line of text>" (at most 200 characters, printable), or "".
std::string last_line_of(std::string_view text);

}  // namespace normcheck::external
