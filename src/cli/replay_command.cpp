#include <cmath>
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "sections/section.hpp"

namespace normcheck::cli {

/// The options naming a record (--record, --block-record, ...), as the sections declare them.
std::string replay_record_options() {
  std::string names;
  for (const sections::Section* s : sections::registry())
    if (!s->replay_option().empty()) names += (names.empty() ? "--" : ", --") + std::string(s->replay_option());
  return names;
}

int replay_command(const ReplayOptions& o) {
  if (o.kernel_timeout && !(*o.kernel_timeout > 0 && std::isfinite(*o.kernel_timeout))) {
    std::fprintf(stderr, "normcheck: error: --kernel-timeout must be a finite number > 0\n");
    return kExitBadInput;
  }
  if (o.records.size() != 1) {
    std::fprintf(stderr, "normcheck: error: replay needs exactly one of %s\n", replay_record_options().c_str());
    return kExitBadInput;
  }
  const auto& [key, index] = o.records.front();
  return sections::section_by_key(key)->replay(o, index);
}

}  // namespace normcheck::cli
