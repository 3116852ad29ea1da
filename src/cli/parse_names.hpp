#pragma once
/// Parses lists of names given on the command line (dtypes, ops) with one clear error.
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace normcheck::cli {

/// Maps each name through `parse` (returning an optional); throws std::invalid_argument naming the
/// first unknown one.
template <class T, class Parse>
std::vector<T> parse_names(const std::vector<std::string>& names, Parse parse, const char* what) {
  std::vector<T> out;
  for (const auto& s : names) {
    const auto v = parse(s);
    if (!v) throw std::invalid_argument(fmt::format("unknown {} '{}' (see normcheck list)", what, s));
    out.push_back(*v);
  }
  return out;
}

}  // namespace normcheck::cli
