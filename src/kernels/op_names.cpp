// The names of the per-op ops (report fields, --ops), apart from the kernel table so that parsers
// link without the kernels.
#include "kernels/registry.hpp"

namespace normcheck {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::layernorm_forward: return "layernorm_forward";
    case Op::layernorm_backward: return "layernorm_backward";
    case Op::rmsnorm_forward: return "rmsnorm_forward";
    case Op::rmsnorm_backward: return "rmsnorm_backward";
  }
  return "unknown";
}

std::optional<Op> parse_op(std::string_view name) {
  for (Op op : {Op::layernorm_forward, Op::layernorm_backward, Op::rmsnorm_forward, Op::rmsnorm_backward})
    if (op_name(op) == name) return op;
  return std::nullopt;
}

}  // namespace normcheck
