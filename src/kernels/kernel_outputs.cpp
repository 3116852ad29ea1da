// output_of: a per-op kernel's outputs by their OpSpec names (its own file: the fuzz targets link the
// serve and exec code without the kernel registry).
#include <stdexcept>
#include <string>

#include "kernels/registry.hpp"

namespace normcheck {

std::vector<double>& output_of(KernelOutputs& out, std::string_view name) {
  if (name == "y") return out.y;
  if (name == "dx") return out.dx;
  if (name == "dgamma") return out.dgamma;
  if (name == "dbeta") return out.dbeta;
  throw std::invalid_argument("a per-op kernel has no output '" + std::string(name) + "'");
}

const std::vector<double>& output_of(const KernelOutputs& out, std::string_view name) {
  return output_of(const_cast<KernelOutputs&>(out), name);
}

}  // namespace normcheck
