// The one list of sections. A new section is its own files (sections/<name>_section.cpp with a
// Section subclass and a `<name>_section()` accessor) plus one line here.
#include "sections/section.hpp"
#include "sections/sections.hpp"

namespace normcheck::sections {

const std::vector<const Section*>& registry() {
  static const std::vector<const Section*> all = {
      &per_op_section(), &block_section(), &contraction_section(), &grouped_section(), &jvp_section(), &rmsnorm_jvp_section(), &budget_section(), &audit_section(), &invariance_section(),
  };
  return all;
}

}  // namespace normcheck::sections
