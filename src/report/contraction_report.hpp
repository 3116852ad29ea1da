#pragma once
/// The report section of the QR-contraction suite ("qr_contraction" in the run report).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "suite/contraction_suite.hpp"

namespace normcheck {

/// Records (with their worst case: generator, seed, shapes, element) and the contracted-vs-
/// original comparison per dtype and output, merged over the generators.
nlohmann::json contraction_suite_json(const ContractionSuiteConfig& cfg, const ContractionSuiteResult& r,
                                      const std::string& report_path);

/// One (dtype, form, output) merged over the generators, in record order.
struct ContractionComparisonRow {
  DType dtype;
  std::string form, output;
  ErrorAccumulator acc;
};
std::vector<ContractionComparisonRow> contraction_comparison(const ContractionSuiteResult& r);

/// The per-dtype comparison rows of merged shard records (each carrying acc_bytes), folded in record
/// order as the unsharded run folds them: the same JSON bit for bit. Throws std::invalid_argument.
nlohmann::json contraction_comparison_from_records(const nlohmann::json& records);

}  // namespace normcheck
