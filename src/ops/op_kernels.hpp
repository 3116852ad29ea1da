#pragma once
/// Every op's built-in kernels: each family's row of the op table (ops/family_math.hpp) adds its own.
#include <string_view>
#include <vector>

#include "kernels/registry.hpp"

namespace normcheck {

/// Every built-in kernel, family by family (LayerNorm, RMSNorm, Gemma RMSNorm), each forward and
/// backward, for the 4 dtypes.
const std::vector<KernelEntry>& builtin_kernels();

/// The built-in kernel of (op, variant, storage), or nullptr when there is none.
const KernelEntry* find_kernel(Op op, std::string_view variant, DType storage);

/// True if some built-in kernel has this variant name.
bool is_kernel_variant(std::string_view variant);

}  // namespace normcheck
