#pragma once
/// The per-op ops described once (issue 43): name, family, direction, the plugin ABI number, the
/// inputs and outputs with their shapes and roles, the Python signature and the bound. The report
/// fields, --ops, the CLI help, the plugin ABI, the Python module, the suites and the judge loop over
/// op_specs() instead of naming the ops; a new per-op op is one row of the table in op_spec.cpp (plus
/// its kernels, oracle and bound).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace normcheck {

enum class Op { layernorm_forward, layernorm_backward, rmsnorm_forward, rmsnorm_backward };

/// What an op normalizes by: the centred LayerNorm (mean and variance; gamma and beta) or RMSNorm
/// (root mean square; the gain g is `gamma`, no beta).
enum class OpFamily { layernorm, rmsnorm };
enum class OpDirection { forward, backward };

/// What a tensor of an op is: a per-row input, a parameter shared by the rows, the cotangent of a
/// backward op, a per-row output, or an output reduced over the rows (parameter gradients: they
/// depend on the whole batch, so batch invariance does not apply to them).
enum class SlotRole { tensor, parameter, cotangent, row_output, reduced_output };

/// One tensor of an op: its name (report field, plugin slot, Python argument) and role; its shape is
/// rows x n for per-row tensors and n for parameters and reduced outputs.
struct OpSlot {
  std::string name;
  SlotRole role;
  bool per_row() const { return role == SlotRole::tensor || role == SlotRole::cotangent || role == SlotRole::row_output; }
};

struct OpSpec {
  Op op;
  std::string name;         ///< report field "op", --ops, the serve/exec request, normcheck.check(op=)
  OpFamily family;
  OpDirection direction;
  int abi_op;               ///< nc_op value in include/normcheck/plugin.h
  std::vector<OpSlot> inputs;
  std::vector<OpSlot> outputs;
  std::vector<std::string> output_names;  ///< outputs' names, in order (records, judging, Python's return)
  std::string formula;      ///< what the oracle evaluates, in one line
  std::string bound;        ///< where its error bound is derived
};

/// Every per-op op, in the order of Op.
const std::vector<OpSpec>& op_specs();
const OpSpec& op_spec(Op op);

std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view name);
/// The ops' names in table order, joined by ", " (help texts and error lines).
std::string op_names_joined();
std::vector<std::string> op_name_list();
/// The same names as views into the table (they live as long as the program).
std::vector<std::string_view> op_name_views();

/// True for the RMSNorm ops (gamma is the gain g, beta is unused).
inline bool is_rmsnorm(Op op) { return op_spec(op).family == OpFamily::rmsnorm; }
/// True for the backward ops (they need a cotangent dy).
inline bool is_backward(Op op) { return op_spec(op).direction == OpDirection::backward; }
/// The op of a family and direction (e.g. the backward op of a forward one's family).
Op op_of(OpFamily family, OpDirection direction);
/// The number of elements of output `o` of `op` for a case of rows x n.
int64_t output_elements(const OpSlot& o, int64_t rows, int64_t n);

}  // namespace normcheck
