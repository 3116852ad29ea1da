#include "external/stderr_sink.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "external/child_process.hpp"
#include "io/json_input.hpp"

namespace normcheck::external {
namespace {

constexpr std::size_t kTailBytes = 4096;

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

/// Writes everything it can (a full or broken destination drops the rest: stderr is best effort).
void write_best_effort(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t k = write(fd, data, size);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    data += k;
    size -= static_cast<std::size_t>(k);
  }
}

}  // namespace

std::string last_line_of(std::string_view text) {
  std::string_view last;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) last = line;
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return last.empty() ? "" : ": " + printable(last.substr(0, 200));
}

StderrSink::~StderrSink() {
  stop();
  close_fd(write_fd_);
}

std::string StderrSink::open(StderrSinkOptions options) {
  stop();  // a sink is reopened for each process a worker starts
  close_fd(write_fd_);
  options_ = std::move(options);
  eof_ = forward_cut_ = false;
  tail_.clear();
  seen_ = in_file_ = dropped_from_file_ = forwarded_ = 0;
  const auto [r, w] = cloexec_pipe();
  const auto [sr, sw] = cloexec_pipe();
  if (r < 0 || sr < 0) return std::string("cannot create a pipe for the child's stderr: ") + std::strerror(errno);
  read_fd_ = r, write_fd_ = w, stop_read_ = sr, stop_write_ = sw;
  if (!options_.file.empty()) {
    file_fd_ = ::open(options_.file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file_fd_ < 0) return fmt::format("cannot create {}: {}", options_.file, std::strerror(errno));
  }
  thread_ = std::thread([this] { drain(); });
  return "";
}

void StderrSink::close_child_end() { close_fd(write_fd_); }

void StderrSink::drain() {
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{read_fd_, POLLIN, 0}, {stop_read_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const bool stopping = p[1].revents != 0;
    if (p[0].revents != 0) {
      const ssize_t k = read(read_fd_, buf, sizeof buf);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;  // end of file: every writer is gone
      consume(buf, static_cast<std::size_t>(k));
      if (!stopping) continue;
    }
    if (stopping) {  // what is already in the pipe, then out: never wait for an escaped writer
      fcntl(read_fd_, F_SETFL, O_NONBLOCK);
      for (int reads = 0; reads < 64; ++reads) {  // bounded: an escaped writer may never stop
        const ssize_t k = read(read_fd_, buf, sizeof buf);
        if (k <= 0) break;
        consume(buf, static_cast<std::size_t>(k));
      }
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  eof_ = true;
  eof_cv_.notify_all();
}

void StderrSink::consume(const char* data, std::size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  seen_ += size;
  tail_.append(data, size);
  if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
  if (file_fd_ >= 0) {
    if (in_file_ + size > options_.file_cap) {  // cut back to empty: the file never holds more than its cap
      dropped_from_file_ += in_file_;
      if (ftruncate(file_fd_, 0) == 0 && lseek(file_fd_, 0, SEEK_SET) == 0) {
        const std::string note = fmt::format("[normcheck: {} earlier bytes of stderr dropped (the file is capped at {} MiB)]\n",
                                             dropped_from_file_, options_.file_cap >> 20);
        write_best_effort(file_fd_, note.data(), note.size());
        in_file_ = note.size();
      }
    }
    const std::size_t take = std::min<std::uintmax_t>(size, options_.file_cap > in_file_ ? options_.file_cap - in_file_ : 0);
    write_best_effort(file_fd_, data + (size - take), take);  // a burst larger than the cap keeps its end
    in_file_ += take;
  }
  if (options_.forward_fd >= 0 && !forward_cut_) {
    const std::size_t take = std::min<std::uintmax_t>(size, options_.forward_cap - forwarded_);
    write_best_effort(options_.forward_fd, data, take);
    forwarded_ += take;
    if (take < size) {
      forward_cut_ = true;
      const std::string note = fmt::format("\nnormcheck: {} wrote more than {} MiB to stderr; the rest is dropped\n",
                                           options_.label, options_.forward_cap >> 20);
      write_best_effort(options_.forward_fd, note.data(), note.size());
    }
  }
}

std::string StderrSink::last_line(double wait_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (thread_.joinable()) eof_cv_.wait_for(lock, std::chrono::duration<double>(wait_s), [this] { return eof_; });
  const std::string_view tail = tail_;
  return last_line_of(tail.substr(tail.size() > kTailBytes ? tail.size() - kTailBytes : 0));
}

void StderrSink::stop() {
  if (thread_.joinable()) {
    const char one = 1;
    write_best_effort(stop_write_, &one, 1);
    thread_.join();
  }
  close_fd(read_fd_);
  close_fd(stop_read_);
  close_fd(stop_write_);
  close_fd(file_fd_);
}

std::uintmax_t StderrSink::bytes_seen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_;
}

}  // namespace normcheck::external
