#pragma once
/// The exec protocol (docs/plugins.md): for kernels in other languages or on other devices.
/// For every call normcheck writes the inputs as .npy files and a manifest.json into a fresh
/// private directory, runs the user's command there (with "{dir}" replaced by the directory and
/// NORMCHECK_CASE_DIR set), and reads the outputs back as .npy.
/// Exit status 77 means "unsupported" (skipped); any other failure, a missing or malformed
/// output, a crash or a timeout is a recorded failure of the case.
///
/// Serve mode (--serve): one long-running command per worker thread (in normcheck's working
/// directory; NORMCHECK_SERVE_DIR names its private folder) reads a JSON request line per
/// call on stdin (the manifest plus "dir") and answers one JSON line on stdout
/// ({"status": "ok" | "unsupported" | "error", "message": ...}) after writing the outputs.
#include <functional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck::external {

struct ExecSpec {
  std::string command;
  std::string name = "exec";
  double timeout_s = 10;           ///< per call
  double startup_timeout_s = 120;  ///< serve mode: until the command's ready line (imports, device contexts)
};

/// One kernel entry per (op, dtype): kernel "exec:<name>", variant <name>.
std::vector<KernelEntry> exec_kernels(const ExecSpec& spec, const std::vector<Op>& ops, const std::vector<DType>& dtypes);

/// The axis audit's probe through serve mode: a function of x (memory order) that calls the
/// long-running command with op "normalize" (the exec manifest's fields); it throws
/// std::runtime_error with one line when the call fails.
std::function<std::vector<double>(const std::vector<double>&)> serve_normalize(
    const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout, const std::vector<std::string>& axes,
    const std::string& declared_kind, DType dtype);

/// One call of op "normalize" (the axis audit's probe): x of `shape` (memory order) in, y of the
/// same shape out; the manifest also names the layout, its axes and the declared kind. Throws
/// std::runtime_error with one line when the command fails or its output is malformed.
std::vector<double> exec_normalize(const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout,
                                   const std::vector<std::string>& axes, const std::string& declared_kind, DType dtype,
                                   const std::vector<double>& x);

}  // namespace normcheck::external
