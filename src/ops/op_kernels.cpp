#include "ops/op_kernels.hpp"

#include "ops/family_math.hpp"

namespace normcheck {

const std::vector<KernelEntry>& builtin_kernels() {
  static const std::vector<KernelEntry> table = [] {
    std::vector<KernelEntry> out;
    for (int f = 0; f < kOpFamilies; ++f) family_math(family_at(f)).add_kernels(out);
    return out;
  }();
  return table;
}

const KernelEntry* find_kernel(Op op, std::string_view variant, DType storage) {
  for (const KernelEntry& k : builtin_kernels())
    if (k.op == op && k.variant == variant && k.storage == storage) return &k;
  return nullptr;
}

bool is_kernel_variant(std::string_view variant) {
  for (const KernelEntry& k : builtin_kernels())
    if (k.variant == variant) return true;
  return false;
}

}  // namespace normcheck
