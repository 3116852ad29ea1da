#include "external/exec.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "external/isolated.hpp"
#include "external/npy.hpp"

namespace normcheck::external {
namespace {

constexpr int kUnsupportedExit = 77;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

/// Writes inputs and manifest; returns the output names with their shapes.
std::vector<std::pair<std::string, std::vector<int64_t>>> write_case(const std::filesystem::path& dir, Op op,
                                                                      const LayerNormCase& c) {
  const std::vector<int64_t> mat{c.rows, c.n}, vec{c.n};
  write_npy(dir / "x.npy", c.dtype, mat, c.x);
  write_npy(dir / "gamma.npy", c.dtype, vec, c.gamma);
  nlohmann::json inputs = {{"x", "x.npy"}, {"gamma", "gamma.npy"}};
  if (!is_rmsnorm(op)) {
    write_npy(dir / "beta.npy", c.dtype, vec, c.beta);
    inputs["beta"] = "beta.npy";
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
  if (is_backward(op)) {
    write_npy(dir / "dy.npy", c.dtype, mat, c.dy);
    inputs["dy"] = "dy.npy";
    outputs = {{"dx", mat}, {"dgamma", vec}};
    if (!is_rmsnorm(op)) outputs.push_back({"dbeta", vec});
  } else {
    outputs = {{"y", mat}};
  }
  nlohmann::json out_names = nlohmann::json::object();
  for (const auto& [name, shape] : outputs) out_names[name] = name + ".npy";
  const nlohmann::json manifest = {
      {"format", "normcheck-exec-v1"},
      {"op", std::string(op_name(op))},
      {"dtype", std::string(dtype_info(c.dtype).name)},
      {"npy_dtype", c.dtype == DType::bf16 ? "<u2 (bfloat16 bit patterns)" : c.dtype == DType::f16 ? "<f2" : c.dtype == DType::f32 ? "<f4" : "<f8"},
      {"rows", c.rows},
      {"n", c.n},
      {"eps", c.eps},
      {"eps_hex", fmt::format("{:a}", c.eps)},
      {"inputs", inputs},
      {"outputs", out_names},
      {"unsupported_exit_status", kUnsupportedExit}};
  std::ofstream f(dir / "manifest.json");
  f << manifest.dump(1) << '\n';
  f.close();
  if (!f) throw NpyError("cannot write manifest.json");
  return outputs;
}

/// ": <last line of the command's stderr>" (at most 200 characters), or "".
std::string last_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line, last;
  while (std::getline(f, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last.empty() ? "" : ": " + last.substr(0, 200);
}

/// Runs the command in the case directory (stdin /dev/null, stdout and stderr to files).
IsolatedResult run_in(const ExecSpec& spec, const std::filesystem::path& dir) {
  const std::string command = replace_all(spec.command, "{dir}", dir.string());
  return run_isolated(
      [&](uint8_t*, size_t, char* msg, size_t cap) {
        if (chdir(dir.c_str()) != 0 || setenv("NORMCHECK_CASE_DIR", dir.c_str(), 1) != 0) {
          std::snprintf(msg, cap, "exec: cannot enter %s", dir.c_str());
          return 1;
        }
        const int err = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);  // kept for the failure message
        const int out = open("stdout.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);  // never mixed into normcheck's
        const int in = open("/dev/null", O_RDONLY);
        if (err >= 0) dup2(err, STDERR_FILENO);
        if (out >= 0) dup2(out, STDOUT_FILENO);
        if (in >= 0) dup2(in, STDIN_FILENO);
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        std::snprintf(msg, cap, "exec: cannot run /bin/sh");
        return 1;
      },
      {}, 1, spec.timeout_s);
}

/// Removes the case directory however the call ends.
struct CaseDir {
  std::filesystem::path path;
  ~CaseDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

KernelOutputs exec_call(const ExecSpec& spec, Op op, const LayerNormCase& c) {
  KernelOutputs out;
  char tmpl[] = "/tmp/normcheck_exec_XXXXXX";
  if (!mkdtemp(tmpl)) {
    out.failure = "exec: cannot create a case directory";
    return out;
  }
  const CaseDir guard{tmpl};
  const std::filesystem::path& dir = guard.path;
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
  try {
    outputs = write_case(dir, op, c);
  } catch (const std::exception& e) {
    out.failure = std::string("exec: cannot write the case: ") + e.what();
    return out;
  }
  const IsolatedResult r = run_in(spec, dir);
  if (r.exit_code == kUnsupportedExit) {
    out.skipped = true;
  } else if (!r.ok) {
    out.failure = "exec command " + r.failure + last_line(dir / "stderr.txt");
  } else {
    try {
      for (const auto& [name, shape] : outputs) {
        std::vector<double> v = read_npy(dir / (name + ".npy"), c.dtype, shape);
        if (name == "y") out.y = std::move(v);
        if (name == "dx") out.dx = std::move(v);
        if (name == "dgamma") out.dgamma = std::move(v);
        if (name == "dbeta") out.dbeta = std::move(v);
      }
    } catch (const std::exception& e) {
      out.failure = std::string("exec output: ") + e.what();
      out.y.clear();
      out.dx.clear();
      out.dgamma.clear();
      out.dbeta.clear();
    }
  }
  return out;
}

}  // namespace

std::vector<double> exec_normalize(const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout,
                                   const std::vector<std::string>& axes, const std::string& declared_kind, DType dtype,
                                   const std::vector<double>& x) {
  char tmpl[] = "/tmp/normcheck_exec_XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("exec: cannot create a case directory");
  const CaseDir guard{tmpl};
  const std::filesystem::path& dir = guard.path;
  write_npy(dir / "x.npy", dtype, shape, x);
  const nlohmann::json manifest = {{"format", "normcheck-exec-v1"},
                                   {"op", "normalize"},
                                   {"dtype", std::string(dtype_info(dtype).name)},
                                   {"layout", layout},
                                   {"shape", shape},
                                   {"axes", axes},
                                   {"declared_kind", declared_kind},
                                   {"inputs", {{"x", "x.npy"}}},
                                   {"outputs", {{"y", "y.npy"}}}};
  std::ofstream f(dir / "manifest.json");
  f << manifest.dump(1) << '\n';
  f.close();
  if (!f) throw std::runtime_error("exec: cannot write manifest.json");
  const IsolatedResult r = run_in(spec, dir);
  if (!r.ok) throw std::runtime_error("exec command " + r.failure + last_line(dir / "stderr.txt"));
  try {
    return read_npy(dir / "y.npy", dtype, shape);
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
