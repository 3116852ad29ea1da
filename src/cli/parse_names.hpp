#pragma once
/// Parses lists of names given on the command line (dtypes, ops) with one clear error.
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "core/suggest.hpp"

namespace normcheck::cli {

/// Maps each name through `parse` (returning an optional); throws std::invalid_argument naming the
/// first unknown one.
template <class T, class Parse>
std::vector<T> parse_names(const std::vector<std::string>& names, Parse parse, const char* what,
                           const std::vector<std::string>& known = {}) {
  std::vector<T> out;
  for (const auto& s : names) {
    const auto v = parse(s);
    if (!v) throw std::invalid_argument(fmt::format("unknown {} '{}'{} (see normcheck list)", what, s, did_you_mean(s, known)));
    out.push_back(*v);
  }
  return out;
}

/// The dtype names (f16, bf16, f32, f64), for suggestions.
inline std::vector<std::string> dtype_names() {
  std::vector<std::string> out;
  for (DType d : dtype_ids()) out.emplace_back(dtype_info(d).name);
  return out;
}

}  // namespace normcheck::cli
