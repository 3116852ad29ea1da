#pragma once
/// What this build is: the version (CMake's project version), the git revision, the oracle's
/// backends and levels (`normcheck --version`, `normcheck version`, the report's run.version).
#include <string>

namespace normcheck {

/// "0.18.0".
std::string tool_version();

/// The lines `normcheck --version` prints: version and revision, then the oracle's levels and the
/// versions of the libraries behind them (MPFR, MPFI, GMP, Boost).
std::string version_text();

}  // namespace normcheck
