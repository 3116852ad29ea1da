#include "report/version.hpp"

#include <boost/version.hpp>
#include <fmt/format.h>
#include <gmp.h>
#include <mpfi.h>
#include <mpfr.h>

#include "git_revision.h"  // generated at build time (cmake/git_revision.cmake)

namespace normcheck {

std::string tool_version() { return NORMCHECK_VERSION; }

std::string version_text() {
  return fmt::format(
      "normcheck {} (git {})\n"
      "oracle: precision cascade, double ball (53 bits) -> double-double ball (106 bits) -> MPFI 168/500/1330 bits\n"
      "backends: MPFR {}, MPFI {}, GMP {}, Boost {}.{}.{}\n",
      NORMCHECK_VERSION, NORMCHECK_GIT_REVISION, mpfr_get_version(), mpfi_get_version(), gmp_version, BOOST_VERSION / 100000,
      BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100);
}

}  // namespace normcheck
