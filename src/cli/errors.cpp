#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "io/json_input.hpp"

namespace normcheck::cli {

void announce_default_output(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path where = std::filesystem::absolute(path, ec);
  std::fprintf(stderr, "normcheck: no --out given: writing %s\n", printable(ec ? path : where.string()).c_str());
}

namespace {

/// `what` without nlohmann's "[json.exception.type_error.302] " tags: the one line says what is
/// wrong in words, never a library's internal code (issue 48).
std::string without_json_exception_tags(std::string what) {
  for (size_t at; (at = what.find("[json.exception.")) != std::string::npos;) {
    const size_t end = what.find(']', at);
    if (end == std::string::npos) break;
    what.erase(at, end + 1 - at + (end + 1 < what.size() && what[end + 1] == ' ' ? 1 : 0));
  }
  return what;
}

}  // namespace

void print_error(const std::string& what) {
  std::fprintf(stderr, "normcheck: error: %s\n", printable(without_json_exception_tags(what)).c_str());
}

}  // namespace normcheck::cli
