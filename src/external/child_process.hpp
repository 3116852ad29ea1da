#pragma once
/// A child process started with posix_spawn (never fork() from the multi-threaded harness), in its
/// own process group, with chosen file descriptors, working directory and extra environment; read
/// and write with deadlines; kill the whole group; say how it ended in words.
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace normcheck::external {

struct SpawnSpec {
  std::vector<std::string> argv;                         ///< argv[0] is the program's path
  std::vector<std::pair<int, int>> fds;                  ///< (parent fd, child fd): the child sees exactly these (and 0-2)
  std::vector<std::pair<std::string, std::string>> env;  ///< added to (or replacing in) the harness's environment
  std::string cwd;                                       ///< "" = the harness's working directory
  std::string stdin_path = "/dev/null", stdout_path, stderr_path;  ///< "" keeps the harness's own (when no fd maps 0-2)
};

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// Starts the child; "" on success, else one line saying why not.
  std::string spawn(const SpawnSpec& spec);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// Waits until the child exits or the deadline passes (then kills its group): true if it exited.
  bool wait_until(double deadline_s);
  /// Kills the process group and reaps the child (idempotent).
  void kill_group();
  /// How the child ended: "crashed with signal 11 (Segmentation fault)", "exited with status 3",
  /// "did not exit and was killed by normcheck" (kill_group found it still running).
  std::string ended_how() const;
  bool exited_normally() const;
  int exit_status() const;  ///< valid when exited_normally()

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false, killed_by_harness_ = false;
};

/// Monotonic seconds.
double monotonic_s();

/// Kills the process group of every child still running (async-signal-safe: for the harness's
/// SIGINT/SIGTERM handlers, so that no worker outlives an interrupted normcheck).
void kill_all_children();

/// Makes this process the subreaper of its descendants (prctl PR_SET_CHILD_SUBREAPER): a kernel's
/// grandchild that left the worker's process group (setsid, a double fork) is re-parented here
/// when its parent ends, instead of to init, so that kill_adopted_descendants() can find it.
void adopt_orphaned_descendants();
/// Kills and reaps every child of this process that it did not start through ChildProcess (those
/// adopted as a subreaper), round after round until none is left: the number killed. For the
/// end of a command, when no worker is starting.
int kill_adopted_descendants();

/// Writes all bytes to fd before the deadline: "" on success, else why not.
std::string write_all(int fd, const void* data, size_t size, double deadline_s);
/// Reads exactly `size` bytes before the deadline: "" on success, "eof" at end of file, "timeout", or why not.
std::string read_exact(int fd, void* data, size_t size, double deadline_s);
/// Reads one '\n'-terminated line (without it) before the deadline, at most max_bytes; `pending` keeps
/// bytes read past the line. "" on success, "eof", "timeout", "line too long", or why not.
std::string read_line(int fd, std::string& line, std::string& pending, double deadline_s, size_t max_bytes);

/// A pipe with both ends close-on-exec: {read end, write end}, or {-1, -1}.
std::pair<int, int> cloexec_pipe();

}  // namespace normcheck::external
