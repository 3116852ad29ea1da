#pragma once
/// What every section's replay shares: finding the record in the report and printing the replayed
/// worst element beside the recorded one.
#include <string>

#include <nlohmann/json.hpp>

#include "core/layernorm_case.hpp"
#include "suite/judge.hpp"

namespace normcheck::sections {

/// Record `index` of `records` (the section's array, may be null); throws std::invalid_argument with
/// one line naming `what` ("block record") when it is missing or has no worst case.
const nlohmann::json& record_with_worst_case(const nlohmann::json* records, int64_t index, const std::string& what);

/// One line of a replayed value: label, hexfloat, decimal.
void print_value_line(const char* label, double v);

/// Compares the outputs of two calls of the replayed case bit for bit and prints the verdict: the
/// first differing element with both values in hex ("nondeterministic"), or that the calls agree.
/// Returns kExitOk when they agree (or the first call failed: that is the replay's verdict), else
/// kExitCheckFailed (a second call that fails or declines after a first that did not included).
int report_repeat(Op op, const KernelOutputs& first, const KernelOutputs& second, int64_t n);

/// Prints the replayed output's worst element (its index beside the recorded one, max err/bound and
/// ULP, then kernel, oracle and bound values) and whether it reproduces the recorded one
/// (`recorded`: the worst_case.element object); exit code 0 when it does, 1 when it differs.
int report_replay(const OutputJudgement& j, const nlohmann::json& recorded);

/// A per-op record's worst case (`wc`, the record's worst_case) of `report`: its inputs inline when
/// the report holds them, else regenerated from generator and seed under the report's shape; checked
/// against the recorded digest. Throws std::invalid_argument with one line.
LayerNormCase per_op_worst_case(const nlohmann::json& report, const nlohmann::json& wc, DType dtype);

}  // namespace normcheck::sections
