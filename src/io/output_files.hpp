#pragma once
/// Writing what a command produces: nothing half-written, nothing left behind. Every file goes to a
/// temporary beside its path and is renamed into place only when every file of the command was
/// written; a failure removes the temporaries and leaves the old files as they were.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck {

/// Throws std::runtime_error("cannot write '<path>' ...") unless a file can be created at `path`
/// (its folder exists or is created, is writable, and `path` is not a folder): checked before a
/// command does its work, so an unwritable --out is found in a second, not after the suite.
void check_writable(const std::string& path);

/// Files written together: add() writes each to `<path>.tmp`, commit() renames them all. Destroyed
/// without commit() (an exception on the way), it removes its temporaries.
class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();
  /// Writes `bytes` to the temporary of `path`; throws std::runtime_error naming `path` on failure.
  void add(const std::string& path, std::string_view bytes);
  /// Renames every temporary into place; throws std::runtime_error (temporaries removed) on failure.
  void commit();

 private:
  std::vector<std::string> paths_;
};

/// One file through OutputFiles.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// A JSON document (indent 1, trailing newline) through OutputFiles.
void write_json_atomically(const std::string& path, const nlohmann::json& j);

}  // namespace normcheck
