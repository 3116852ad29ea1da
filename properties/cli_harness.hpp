#pragma once
/// Running the normcheck binary from a test: exit status, stdout and stderr, in a scratch folder.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline fs::path scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("normcheck_cli_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {  // one folder per test process, gone when it ends (they used to pile up by gigabytes)
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("normcheck_cli_" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

/// Runs normcheck with `args` (and environment assignments `env`, e.g. "OMP_NUM_THREADS=1");
/// captures stdout, stderr and the exit status.
inline Outcome run_cli(const std::string& args, const std::string& env = "") {
  const fs::path out = scratch() / "stdout", err = scratch() / "stderr";
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(NORMCHECK_BINARY) + " " + args + " >" +
                          out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, slurp(out), slurp(err)};
}

/// The indented (4-space) code block after the first line of the doc `relative_path` (from the source
/// tree) that contains `marker`, unindented; blank lines inside kept, trailing ones dropped. What a
/// test runs or compares "exactly as documented".
inline std::string doc_block_after(const std::string& relative_path, const std::string& marker) {
  const std::string doc = slurp(fs::path(NORMCHECK_SOURCE_DIR) / relative_path);
  size_t at = doc.find(marker);
  if (at == std::string::npos) return "";
  at = doc.find("\n    ", at);
  if (at == std::string::npos) return "";
  std::string block;
  for (size_t start = at + 1; start < doc.size();) {
    const size_t end = doc.find('\n', start);
    const std::string line = doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.rfind("    ", 0) != 0) break;
    block += (line.empty() ? "" : line.substr(4)) + "\n";
    start = end == std::string::npos ? doc.size() : end + 1;
  }
  while (block.size() >= 2 && block.compare(block.size() - 2, 2, "\n\n") == 0) block.pop_back();
  return block;
}

/// Runs a shell command line (e.g. a script) the same way: exit status, stdout, stderr.
inline Outcome run_shell(const std::string& command) {
  const fs::path out = scratch() / "stdout", err = scratch() / "stderr";
  const int status = std::system((command + " >" + out.string() + " 2>" + err.string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, slurp(out), slurp(err)};
}

}  // namespace
