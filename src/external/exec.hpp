#pragma once
/// The exec protocol (docs/plugins.md): for kernels in other languages or on other devices.
/// For every call normcheck writes the inputs as .npy files and a manifest.json into a fresh
/// directory, runs the user's command there (with "{dir}" replaced by the directory and
/// NORMCHECK_CASE_DIR set), and reads the outputs back as .npy. Exit status 77 means
/// "unsupported" (skipped); any other failure, a missing or malformed output, a crash or a
/// timeout is a recorded failure of the case.
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck::external {

struct ExecSpec {
  std::string command;
  std::string name = "exec";
  double timeout_s = 10;
};

/// One kernel entry per (op, dtype): kernel "exec:<name>", variant <name>.
std::vector<KernelEntry> exec_kernels(const ExecSpec& spec, const std::vector<Op>& ops, const std::vector<DType>& dtypes);

/// One call of op "normalize" (the axis audit's probe): x of `shape` (memory order) in, y of the
/// same shape out; the manifest also names the layout, its axes and the declared kind. Throws
/// std::runtime_error with one line when the command fails or its output is malformed.
std::vector<double> exec_normalize(const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout,
                                   const std::vector<std::string>& axes, const std::string& declared_kind, DType dtype,
                                   const std::vector<double>& x);

}  // namespace normcheck::external
