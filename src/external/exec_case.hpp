#pragma once
/// A LayerNorm/RMSNorm call as files, shared by the exec protocol (a process per call) and serve
/// mode (a long-running process per worker): the inputs as .npy in a directory, the manifest that
/// names them, and the outputs read back.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"

namespace normcheck::external {

inline constexpr int kUnsupportedExit = 77;

struct CaseFiles {
  nlohmann::json manifest;                                              ///< written as manifest.json
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;  ///< name, shape
};

/// Writes the inputs and manifest.json into dir (removing outputs a previous call left there).
CaseFiles write_case_files(const std::filesystem::path& dir, Op op, const LayerNormCase& c, const std::string& format);

/// Reads the outputs back; a missing or malformed one is the returned KernelOutputs::failure.
KernelOutputs read_case_outputs(const std::filesystem::path& dir, const CaseFiles& files, DType dtype,
                                const std::string& who);

/// The manifests' "npy_dtype" text of a dtype ("<f4"; bf16 as "<u2 (bfloat16 bit patterns)").
std::string npy_dtype_label(DType d);

/// ": <last non-blank line of the file>" (at most 200 characters), or "".
std::string last_line(const std::filesystem::path& p);

/// Removes a directory however the call ends.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() = default;
  explicit ScratchDir(std::filesystem::path p) : path(std::move(p)) {}
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
};

/// A fresh private (0700) directory normcheck_<what>_XXXXXX in /dev/shm (else /tmp), or "" when none
/// can be made.
std::string make_private_dir(const char* what);

}  // namespace normcheck::external
