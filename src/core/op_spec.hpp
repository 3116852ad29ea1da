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

enum class Op { layernorm_forward, layernorm_backward, rmsnorm_forward, rmsnorm_backward, gemma_rmsnorm_forward, gemma_rmsnorm_backward };

/// What an op normalizes by: the centred LayerNorm (mean and variance; gamma and beta) or RMSNorm
/// (root mean square; the gain g is `gamma`, no beta), or Gemma's RMSNorm (the gain is 1 + w, w in
/// `gamma`; src/ops/gemma_rmsnorm/).
enum class OpFamily { layernorm, rmsnorm, gemma_rmsnorm };
/// The number of op families: a per-op case has one unit of work (one oracle) per family.
inline constexpr int kOpFamilies = 3;
enum class OpDirection { forward, backward };

/// An op family's index (0 .. kOpFamilies - 1: arrays and shard units keyed by family).
inline int family_index(OpFamily f) { return static_cast<int>(f); }
/// The family of index `i`; throws std::out_of_range outside 0 .. kOpFamilies - 1.
OpFamily family_at(int i);
/// What is said once per family: its name for messages, the tolerance-table row of an external
/// kernel of the family, and the contracts (stats algorithm classes) an external kernel may declare
/// (LayerNorm: two_pass, welford; none where the family has one algorithm class).
struct FamilySpec {
  OpFamily family;
  std::string label;               ///< "LayerNorm", "RMSNorm"
  std::string external_tolerance;  ///< tolerance-table variant of its external kernels ("_<contract>" appended for a declared contract other than the first)
  std::vector<std::string> contracts;
  /// The directed-rounding (bias) statistic applies: its rows are independent groups (docs/bounds.md
  /// section 16.2). Not for a gain the kernel forms per column (Gemma's 1 + w): its rounding is shared
  /// by every row of the column, so no two rows are independent.
  bool bias_test = true;
};
const FamilySpec& family_spec(OpFamily f);
/// The family's name for messages ("LayerNorm", "RMSNorm").
inline std::string_view family_label(OpFamily f) { return family_spec(f).label; }

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
  int abi_op;               ///< nc_op value in include/normcheck/plugin.h; -1: not in the plugin ABI (serve, exec and Python only)
  std::vector<OpSlot> inputs;
  std::vector<OpSlot> outputs;
  std::vector<std::string> output_names;  ///< outputs' names, in order (records, judging, Python's return)
  std::string formula;      ///< what the oracle evaluates, in one line
  std::string bound;        ///< where its error bound is derived
  /// In the suites' per-op section (default, nightly, quick, llm); false: judged with --ops only, until
  /// the suites' committed baselines include it.
  bool in_suites = true;
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

/// The op's family and its index.
inline OpFamily op_family(Op op) { return op_spec(op).family; }
inline int op_family_index(Op op) { return family_index(op_family(op)); }
/// True if the op has an input (or output) of this name: what a layer asks instead of naming a family.
bool has_input(Op op, std::string_view name);
bool has_output(Op op, std::string_view name);
/// True for the backward ops (they need a cotangent dy).
inline bool is_backward(Op op) { return op_spec(op).direction == OpDirection::backward; }
/// The op of a family and direction (e.g. the backward op of a forward one's family).
Op op_of(OpFamily family, OpDirection direction);
/// The number of elements of output `o` of `op` for a case of rows x n.
int64_t output_elements(const OpSlot& o, int64_t rows, int64_t n);

}  // namespace normcheck
