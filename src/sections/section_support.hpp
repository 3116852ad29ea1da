#pragma once
/// Small pieces the sections share.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "sections/section.hpp"

namespace normcheck::sections {

/// Sections that judge built-in kernels only: with external kernels they are not planned, and
/// naming them in --ops is an error.
inline bool builtin_only(const PlanInputs& in, std::string_view op) {
  if (in.external == nullptr) return true;
  if (in.names_any({op}))
    throw PlanError(fmt::format("--ops {} judges built-in kernels only (not in the plugin ABI or serve protocol yet)", op));
  return false;
}

/// Selected when --ops names it, or when neither --ops nor --kernels narrows the run.
inline bool selected_whole_or_named(const PlanInputs& in, std::string_view op) {
  return (in.options.ops.empty() && in.options.variants.empty()) || in.names_any({op});
}

}  // namespace normcheck::sections
