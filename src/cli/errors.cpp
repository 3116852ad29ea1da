#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "report/json_input.hpp"

namespace normcheck::cli {

void announce_default_output(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path where = std::filesystem::absolute(path, ec);
  std::fprintf(stderr, "normcheck: no --out given: writing %s\n", printable(ec ? path : where.string()).c_str());
}

void print_error(const std::string& what) { std::fprintf(stderr, "normcheck: error: %s\n", printable(what).c_str()); }

}  // namespace normcheck::cli
