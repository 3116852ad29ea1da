// The table of per-op ops (op_spec.hpp): the one place that names them.
#include "core/op_spec.hpp"

#include <cstdint>
#include <stdexcept>

namespace normcheck {
namespace {

std::vector<std::string> names_of(const std::vector<OpSlot>& slots) {
  std::vector<std::string> out;
  for (const OpSlot& s : slots) out.push_back(s.name);
  return out;
}

OpSpec spec(Op op, std::string name, OpFamily family, OpDirection direction, int abi_op, std::vector<OpSlot> inputs,
            std::vector<OpSlot> outputs, std::string formula, std::string bound, bool in_suites = true) {
  std::vector<std::string> output_names = names_of(outputs);
  return {op, std::move(name), family, direction, abi_op, std::move(inputs), std::move(outputs), std::move(output_names),
          std::move(formula), std::move(bound), in_suites};
}

std::vector<OpSpec> make_table() {
  using R = SlotRole;
  const OpSlot x{"x", R::tensor}, gamma{"gamma", R::parameter}, beta{"beta", R::parameter}, dy{"dy", R::cotangent};
  const OpSlot y{"y", R::row_output}, dx{"dx", R::row_output}, dgamma{"dgamma", R::reduced_output},
      dbeta{"dbeta", R::reduced_output};
  const OpFamily ln = OpFamily::layernorm, rms = OpFamily::rmsnorm, gemma = OpFamily::gemma_rmsnorm;
  const OpDirection fwd = OpDirection::forward, bwd = OpDirection::backward;
  return {
      spec(Op::layernorm_forward, "layernorm_forward", ln, fwd, 0, {x, gamma, beta}, {y},
           "y = gamma (x - mean) / sqrt(var + eps) + beta, biased variance", "docs/bounds.md (LayerNorm forward)"),
      spec(Op::layernorm_backward, "layernorm_backward", ln, bwd, 1, {x, gamma, beta, dy}, {dx, dgamma, dbeta},
           "dx, dgamma, dbeta: the VJP of layernorm_forward for the cotangent dy (dgamma, dbeta summed over rows)",
           "docs/bounds.md (LayerNorm backward)"),
      spec(Op::rmsnorm_forward, "rmsnorm_forward", rms, fwd, 2, {x, gamma}, {y}, "y = g x / sqrt(mean(x^2) + eps)",
           "docs/bounds.md (RMSNorm)"),
      spec(Op::rmsnorm_backward, "rmsnorm_backward", rms, bwd, 3, {x, gamma, dy}, {dx, dgamma},
           "dx, dg: the VJP of rmsnorm_forward for the cotangent dy (dg summed over rows)", "docs/bounds.md (RMSNorm)"),
      spec(Op::gemma_rmsnorm_forward, "gemma_rmsnorm_forward", gemma, fwd, -1, {x, gamma}, {y},
           "y = (1 + w) x / sqrt(mean(x^2) + eps), w in gamma (Gemma's RMSNorm; the kernel forms 1 + w)",
           "docs/bounds.md section 10.6 (RMSNorm with the gain offset)", false),
      spec(Op::gemma_rmsnorm_backward, "gemma_rmsnorm_backward", gemma, bwd, -1, {x, gamma, dy}, {dx, dgamma},
           "dx, dgamma = dL/dw: the VJP of gemma_rmsnorm_forward for the cotangent dy (dgamma summed over rows)",
           "docs/bounds.md section 10.6 (RMSNorm with the gain offset)", false),
  };
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> table = [] {
    std::vector<OpSpec> t = make_table();
    for (size_t i = 0; i < t.size(); ++i)
      if (static_cast<size_t>(t[i].op) != i) throw std::logic_error("op_specs: row " + std::to_string(i) + " is out of Op's order");
    return t;
  }();
  return table;
}

const OpSpec& op_spec(Op op) { return op_specs().at(static_cast<size_t>(op)); }

std::string_view op_name(Op op) { return op_spec(op).name; }

std::optional<Op> parse_op(std::string_view name) {
  for (const OpSpec& s : op_specs())
    if (s.name == name) return s.op;
  return std::nullopt;
}

std::vector<std::string> op_name_list() {
  std::vector<std::string> out;
  for (const OpSpec& s : op_specs()) out.push_back(s.name);
  return out;
}

std::vector<std::string_view> op_name_views() {
  std::vector<std::string_view> out;
  for (const OpSpec& s : op_specs()) out.push_back(s.name);
  return out;
}

std::string op_names_joined() {
  std::string out;
  for (const OpSpec& s : op_specs()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

Op op_of(OpFamily family, OpDirection direction) {
  for (const OpSpec& s : op_specs())
    if (s.family == family && s.direction == direction) return s.op;
  throw std::logic_error("op_of: no op of this family and direction");
}

OpFamily family_at(int i) {
  if (i < 0 || i >= kOpFamilies) throw std::out_of_range("family_at: no op family " + std::to_string(i));
  return static_cast<OpFamily>(i);
}

const FamilySpec& family_spec(OpFamily f) {
  static const std::vector<FamilySpec> table = {
      {OpFamily::layernorm, "LayerNorm", "external_layernorm", {"two_pass", "welford"}},
      {OpFamily::rmsnorm, "RMSNorm", "external_rmsnorm", {}},
      {OpFamily::gemma_rmsnorm, "Gemma RMSNorm", "external_gemma_rmsnorm", {}, false},
  };
  static_assert(kOpFamilies == 3, "one FamilySpec row per OpFamily");
  return table.at(static_cast<size_t>(family_index(f)));
}

namespace {
bool has_slot(const std::vector<OpSlot>& slots, std::string_view name) {
  for (const OpSlot& s : slots)
    if (s.name == name) return true;
  return false;
}
}  // namespace

bool has_input(Op op, std::string_view name) { return has_slot(op_spec(op).inputs, name); }
bool has_output(Op op, std::string_view name) { return has_slot(op_spec(op).outputs, name); }

int64_t output_elements(const OpSlot& o, int64_t rows, int64_t n) { return o.per_row() ? rows * n : n; }

}  // namespace normcheck
