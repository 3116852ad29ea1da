#include "external/exec.hpp"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/shell_quote.hpp"
#include "external/child_process.hpp"
#include "external/exec_case.hpp"
#include "external/npy.hpp"

namespace normcheck::external {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

/// How one run of the command ended.
struct ExecOutcome {
  bool ok = false, unsupported = false;
  std::string failure;
};

/// Most bytes the command may write to its stdout or stderr file: past it the command is killed (a
/// runaway print loop must not fill the disk).
constexpr std::uintmax_t kMaxLogBytes = std::uintmax_t{64} << 20;

/// Waits for the child until `deadline`, polling the size of its stdout and stderr files: "" when it
/// ended, "timeout", or the reason it was stopped for flooding a file.
std::string wait_with_capped_logs(ChildProcess& child, double deadline, const std::filesystem::path& dir) {
  for (;;) {
    const double slice = std::min(deadline, monotonic_s() + 0.25);
    if (child.wait_until(slice)) return "";
    for (const char* log : {"stdout.txt", "stderr.txt"}) {
      std::error_code ec;
      if (std::filesystem::file_size(dir / log, ec) > kMaxLogBytes && !ec)
        return fmt::format("exec command wrote more than {} MiB to {} (killed)", kMaxLogBytes >> 20, log);
    }
    if (monotonic_s() >= deadline) return "timeout";
  }
}

/// Runs the command through /bin/sh in the case directory ({dir} and NORMCHECK_CASE_DIR name it;
/// stdin /dev/null, stdout and stderr to files there).
ExecOutcome run_command_on(const ExecSpec& spec, const std::filesystem::path& dir) {
  SpawnSpec s;
  s.argv = {"/bin/sh", "-c", replace_all(spec.command, "{dir}", shell_quote(dir.string()))};
  s.env = {{"NORMCHECK_CASE_DIR", dir.string()}};
  s.cwd = dir.string();
  s.stdout_path = (dir / "stdout.txt").string();  // never mixed into normcheck's
  s.stderr_path = (dir / "stderr.txt").string();  // kept for the failure message
  ChildProcess child;
  ExecOutcome r;
  if (std::string e = child.spawn(s); !e.empty()) {
    r.failure = "exec: " + e;
    return r;
  }
  if (std::string why = wait_with_capped_logs(child, monotonic_s() + spec.timeout_s, dir); !why.empty()) {
    child.kill_group();
    r.failure = why == "timeout" ? fmt::format("exec command timed out after {} s (killed)", spec.timeout_s) : why;
    return r;
  }
  if (child.exited_normally() && child.exit_status() == kUnsupportedExit) {
    r.unsupported = true;
    return r;
  }
  if (!child.exited_normally() || child.exit_status() != 0) {
    r.failure = "exec command " + child.ended_how() + last_line(dir / "stderr.txt");
    return r;
  }
  r.ok = true;
  return r;
}

KernelOutputs exec_call(const ExecSpec& spec, Op op, const LayerNormCase& c) {
  KernelOutputs out;
  const ScratchDir dir(make_private_dir("exec"));
  if (dir.path.empty()) {
    out.failure = "exec: cannot create a case directory";
    return out;
  }
  CaseFiles files;
  try {
    files = write_case_files(dir.path, op, c, "normcheck-exec-v1");
  } catch (const std::exception& e) {
    out.failure = std::string("exec: cannot write the case: ") + e.what();
    return out;
  }
  const ExecOutcome r = run_command_on(spec, dir.path);
  if (r.unsupported) {
    out.skipped = true;
    return out;
  }
  if (!r.ok) {
    out.failure = r.failure;
    return out;
  }
  return read_case_outputs(dir.path, files, c.dtype, "exec");
}

}  // namespace

std::vector<double> exec_normalize(const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout,
                                   const std::vector<std::string>& axes, const std::string& declared_kind, DType dtype,
                                   const std::vector<double>& x) {
  const ScratchDir dir(make_private_dir("exec"));
  if (dir.path.empty()) throw std::runtime_error("exec: cannot create a case directory");
  write_npy(dir.path / "x.npy", dtype, shape, x);
  const nlohmann::json manifest = {{"format", "normcheck-exec-v1"},
                                   {"op", "normalize"},
                                   {"dtype", std::string(dtype_info(dtype).name)},
                                   {"layout", layout},
                                   {"shape", shape},
                                   {"axes", axes},
                                   {"declared_kind", declared_kind},
                                   {"inputs", {{"x", "x.npy"}}},
                                   {"outputs", {{"y", "y.npy"}}}};
  std::ofstream f(dir.path / "manifest.json");
  f << manifest.dump(1) << '\n';
  f.close();
  if (!f) throw std::runtime_error("exec: cannot write manifest.json");
  const ExecOutcome r = run_command_on(spec, dir.path);
  if (r.unsupported) throw std::runtime_error("exec command says the normalize op is unsupported (exit 77)");
  if (!r.ok) throw std::runtime_error(r.failure);
  try {
    return read_npy(dir.path / "y.npy", dtype, shape);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("exec output: ") + e.what());
  }
}

std::vector<KernelEntry> exec_kernels(const ExecSpec& spec, const std::vector<Op>& ops, const std::vector<DType>& dtypes) {
  std::vector<KernelEntry> out;
  for (Op op : ops)
    for (DType dt : dtypes)
      out.push_back({"exec:" + spec.name, spec.name, op, dt, dtype_info(dt).default_accum, false,
                     [spec, op](const LayerNormCase& c) { return exec_call(spec, op, c); }});
  return out;
}

}  // namespace normcheck::external
