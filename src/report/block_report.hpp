#pragma once
/// The report section of the Linear o RMSNorm block suite ("rms_block" in the run report).
#include <string>

#include <nlohmann/json.hpp>

#include "suite/block_suite.hpp"

namespace normcheck {

/// Records (each with its worst case and replay command), the composed-vs-deferred comparison
/// per dtype, flag checks and the verdict.
nlohmann::json block_suite_json(const BlockSuiteConfig& cfg, const BlockSuiteResult& r, const std::string& report_path);

/// The per-dtype comparison rows of merged shard records (each carrying acc_bytes and
/// worst_cancellation), folded in record order as the unsharded run folds them. Throws std::invalid_argument.
nlohmann::json block_comparison_from_records(const nlohmann::json& records);

/// The block suite configuration a report section was produced with.
BlockSuiteConfig block_config_from_json(const nlohmann::json& section);

}  // namespace normcheck
