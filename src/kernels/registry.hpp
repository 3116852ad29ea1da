#pragma once
/// Type-erased table of the built-in kernels, so the runner and CLI can loop over them.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/layernorm_case.hpp"

namespace normcheck {

enum class Op { layernorm_forward, layernorm_backward };

std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view name);

/// Kernel results as exact doubles of storage-dtype values (empty vectors when not produced).
struct KernelOutputs {
  std::vector<double> y;
  std::vector<double> dx;
  std::vector<double> dgamma;
  std::vector<double> dbeta;
};

struct KernelEntry {
  std::string kernel;   ///< provider: "builtin"
  std::string variant;  ///< "two_pass", "welford", "one_pass", "two_pass_storage_accum"
  Op op;
  DType storage;
  DType accum;
  bool known_weak;  ///< expected to be caught on hard inputs
  std::function<KernelOutputs(const LayerNormCase&)> run;
};

/// Every built-in kernel: 4 dtypes x {two_pass, welford, one_pass} x {forward, backward}, plus the
/// storage-precision-accumulation two_pass for f16 and bf16.
const std::vector<KernelEntry>& builtin_kernels();

}  // namespace normcheck
