#include "external/child_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

extern char** environ;

namespace normcheck::external {
namespace {

/// The harness's environment with `extra` added or replacing, as "K=V" strings.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    if (!vars.count(key)) order.push_back(key);
    vars[key] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) {
    if (!vars.count(k)) order.push_back(k);
    vars[k] = v;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const std::string& k : order) out.push_back(k + "=" + vars[k]);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// Children still running, for kill_all_children (0 = free slot).
constexpr int kMaxLive = 1024;
std::atomic<pid_t> g_live[kMaxLive];

void register_live(pid_t pid) {
  for (auto& slot : g_live) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
}

bool is_live(pid_t pid) {
  for (const auto& slot : g_live)
    if (slot.load() == pid) return true;
  return false;
}

/// The parent pid in /proc/<pid>/stat (-1 if unreadable): the field after the parenthesised name.
pid_t parent_of(pid_t pid) {
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t k = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (k <= 0) return -1;
  buf[k] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  char state = 0;
  int ppid = -1;
  if (!close_paren || std::sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

/// This process's children that it did not start (orphans of its children's descendants,
/// re-parented here because it is a subreaper).
std::vector<pid_t> adopted_children() {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  const pid_t self = getpid();
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (parent_of(pid) == self && !is_live(pid)) found.push_back(pid);
  }
  closedir(d);
  return found;
}

void unregister_live(pid_t pid) {
  for (auto& slot : g_live) {
    pid_t p = pid;
    if (slot.compare_exchange_strong(p, 0)) return;
  }
}

/// Milliseconds until the deadline for poll(), at least 0 (a non-finite deadline counts as passed).
int poll_ms(double deadline_s) {
  const double left = deadline_s - monotonic_s();
  if (!(left > 0)) return 0;
  return left > 3600 ? 3600000 : static_cast<int>(left * 1000.0) + 1;
}

/// Waits until fd is ready for `events` or the deadline: "" when ready, "timeout", or why not.
std::string wait_ready(int fd, short events, double deadline_s) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, poll_ms(deadline_s));
    if (r > 0) return "";
    if (r == 0) {
      if (!(monotonic_s() < deadline_s)) return "timeout";
      continue;
    }
    if (errno != EINTR) return std::string("poll failed: ") + std::strerror(errno);
  }
}

}  // namespace

void kill_all_children() {
  for (auto& slot : g_live) {
    const pid_t pid = slot.load();
    if (pid > 0) kill(-pid, SIGKILL);
  }
}

void adopt_orphaned_descendants() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

int kill_adopted_descendants() {
  int killed = 0;
  for (int round = 0; round < 16; ++round) {  // each round's victims may leave orphans of their own
    const std::vector<pid_t> adopted = adopted_children();
    if (adopted.empty()) break;
    for (const pid_t pid : adopted) {
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      ++killed;
    }
  }
  return killed;
}

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::pair<int, int> cloexec_pipe() {
  int fd[2];
  if (pipe2(fd, O_CLOEXEC) != 0) return {-1, -1};
  return {fd[0], fd[1]};
}

ChildProcess::~ChildProcess() { kill_group(); }

std::string ChildProcess::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return "no program to start";
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills whatever it started too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  // dup2 in order would clobber a source that is another mapping's target (a source fd 3 meant for
  // 5 while fd 4 goes to 3): every source is first copied above every target.
  int highest_target = 2;
  for (const auto& fd : spec.fds) highest_target = std::max(highest_target, fd.second);
  std::vector<int> copies;
  bool mapped[3] = {false, false, false};
  int rc_actions = 0;
  for (const auto& [from, to] : spec.fds) {
    const int copy = fcntl(from, F_DUPFD_CLOEXEC, highest_target + 1);
    if (copy < 0) rc_actions = errno;
    copies.push_back(copy);
    if (copy >= 0) rc_actions = rc_actions ? rc_actions : posix_spawn_file_actions_adddup2(&actions, copy, to);
    if (to >= 0 && to < 3) mapped[to] = true;
  }
  if (!mapped[0] && !spec.stdin_path.empty() && !rc_actions)
    rc_actions = posix_spawn_file_actions_addopen(&actions, 0, spec.stdin_path.c_str(), O_RDONLY, 0);
  if (!mapped[1] && !spec.stdout_path.empty() && !rc_actions)
    rc_actions = posix_spawn_file_actions_addopen(&actions, 1, spec.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!mapped[2] && !spec.stderr_path.empty() && !rc_actions)
    rc_actions = posix_spawn_file_actions_addopen(&actions, 2, spec.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Nothing else of the harness's reaches the child: descriptors opened without O_CLOEXEC (report
  // and journal streams of other threads, whatever normcheck inherited) are closed in it.
  if (!rc_actions) rc_actions = posix_spawn_file_actions_addclosefrom_np(&actions, highest_target + 1);
  if (rc_actions) {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    for (const int copy : copies)
      if (copy >= 0) close(copy);
    return fmt::format("cannot prepare the child's descriptors: {}", std::strerror(rc_actions));
  }
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = child_environment(spec.env);
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  for (const int copy : copies)
    if (copy >= 0) close(copy);
  if (rc != 0) return fmt::format("cannot start {}: {}", args[0], std::strerror(rc));
  pid_ = pid;
  reaped_ = false;
  killed_by_harness_ = false;
  status_ = 0;
  register_live(pid);
  return "";
}

bool ChildProcess::wait_until(double deadline_s) {
  if (pid_ <= 0) return true;
  for (;;) {
    const pid_t w = waitpid(pid_, &status_, WNOHANG);
    if (w == pid_) {
      reaped_ = true;
      kill(-pid_, SIGKILL);  // the group: whatever the child left running
      unregister_live(pid_);
      pid_ = -pid_;          // no longer running
      return true;
    }
    if (w < 0 && errno != EINTR) {
      kill_group();
      return true;
    }
    if (!(monotonic_s() < deadline_s)) return false;
    usleep(200);
  }
}

void ChildProcess::kill_group() {
  if (pid_ > 0 && !reaped_) {
    // a child that already ended keeps its own status; else the SIGKILL is ours, not its crash
    if (waitpid(pid_, &status_, WNOHANG) == pid_) {
      kill(-pid_, SIGKILL);
      unregister_live(pid_);
      reaped_ = true;
      pid_ = -pid_;
      return;
    }
    killed_by_harness_ = true;
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    unregister_live(pid_);
    reaped_ = true;
    pid_ = -pid_;
  }
}

bool ChildProcess::exited_normally() const { return reaped_ && WIFEXITED(status_); }
int ChildProcess::exit_status() const { return WEXITSTATUS(status_); }

std::string ChildProcess::ended_how() const {
  if (!reaped_) return "is still running";
  if (killed_by_harness_) return "did not exit and was killed by normcheck";
  if (WIFSIGNALED(status_))
    return fmt::format("crashed with signal {} ({})", WTERMSIG(status_), strsignal(WTERMSIG(status_)));
  return fmt::format("exited with status {}", WEXITSTATUS(status_));
}

std::string write_all(int fd, const void* data, size_t size, double deadline_s) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    if (std::string w = wait_ready(fd, POLLOUT, deadline_s); !w.empty()) return w;
    const ssize_t k = write(fd, p, size);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno == EPIPE ? "eof" : std::string("write failed: ") + std::strerror(errno);
    }
    p += k;
    size -= static_cast<size_t>(k);
  }
  return "";
}

std::string read_exact(int fd, void* data, size_t size, double deadline_s) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    if (std::string w = wait_ready(fd, POLLIN, deadline_s); !w.empty()) return w;
    const ssize_t k = read(fd, p, size);
    if (k == 0) return "eof";
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::string("read failed: ") + std::strerror(errno);
    }
    p += k;
    size -= static_cast<size_t>(k);
  }
  return "";
}

std::string read_line(int fd, std::string& line, std::string& pending, double deadline_s, size_t max_bytes) {
  for (;;) {
    if (const size_t nl = pending.find('\n'); nl != std::string::npos) {
      line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return "";
    }
    if (pending.size() > max_bytes) return "line too long";
    if (std::string w = wait_ready(fd, POLLIN, deadline_s); !w.empty()) return w;
    char buf[4096];
    const ssize_t k = read(fd, buf, sizeof buf);
    if (k == 0) return "eof";
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::string("read failed: ") + std::strerror(errno);
    }
    pending.append(buf, static_cast<size_t>(k));
  }
}

}  // namespace normcheck::external
