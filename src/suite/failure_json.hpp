#pragma once
/// A worst element and a failure-journal line as JSON: what records and the journal write of a
/// judged output (suite/judge.hpp's types; the case itself is io/case_json.hpp's).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/layernorm_case.hpp"
#include "kernels/registry.hpp"
#include "suite/judge.hpp"

namespace normcheck {

/// One worst element: index, kernel value and reference in hexfloat and decimal.
nlohmann::json worst_element_json(const WorstElement& w, int64_t n);

/// One line of the failure journal: kernel, output, case and worst element.
std::string failing_case_json_line(const LayerNormCase& c, const KernelEntry& k, const OutputJudgement& j);

}  // namespace normcheck
