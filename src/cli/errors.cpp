#include <cstdio>

#include "cli/commands.hpp"
#include "report/json_input.hpp"

namespace normcheck::cli {

void print_error(const std::string& what) { std::fprintf(stderr, "normcheck: error: %s\n", printable(what).c_str()); }

}  // namespace normcheck::cli
