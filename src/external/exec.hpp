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

}  // namespace normcheck::external
