#pragma once
/// The rules sections merge their shards with (sections/*.cpp choose one each): records picked
/// from the shard that ran them, per-dtype rows from the dtype's shard, records concatenated in
/// dtype order, or a section one shard runs whole. Every rule throws std::invalid_argument with one
/// line when the shards disagree.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sections/shard_report.hpp"
#include "suite/runner.hpp"

namespace normcheck::nightly {

/// The member `key` of every shard report (shard order); null where a shard lacks it.
std::vector<const nlohmann::json*> section_parts(const std::vector<ShardReport>& shards, const std::string& key);

/// Refuses when a shard has the section null or missing (interrupted before it).
void require_every_shard(const std::vector<const nlohmann::json*>& parts, const std::vector<ShardReport>& shards, const std::string& key);

/// Records planned identically by every shard: each comes from the one shard that ran it (cases > 0),
/// its replay command repointed at `out_path`.
nlohmann::json pick_records(const std::vector<const nlohmann::json*>& records, const std::vector<ShardReport>& shards,
                            const std::string& out_path);

/// Flag checks span the generators of a dtype: recomputed from merged per-op or block records.
std::vector<FlagCheck> recompute_flags(const nlohmann::json& records, const std::vector<DType>& dtypes);

/// The dtypes of a report configuration.
std::vector<DType> dtypes_of(const nlohmann::json& config);

/// Sum of an integer member over the parts; whether a boolean member is true in every part.
int64_t sum_of(const std::vector<const nlohmann::json*>& parts, const char* key);
bool all_true(const std::vector<const nlohmann::json*>& parts, const char* key);

/// Rebuilds a section's per-dtype comparison rows from its merged records (which carry acc_bytes).
using ComparisonFromRecords = nlohmann::json (*)(const nlohmann::json& records);

/// A suite section with records and per-dtype comparison rows (rms_block, qr_contraction, the JVPs):
/// records picked from the shard that ran them, counts summed; the comparison rows taken from the
/// dtype's shard (units of whole dtypes: the JVPs) or, with `comparison`, folded again from the
/// records' acc_bytes (units of one generator of one dtype: the block, whose worst cancellation comes
/// from worst_cancellation, and the QR contraction), which are then dropped. With `has_flags` its flag
/// checks are recomputed and its verdict includes them.
nlohmann::json merge_suite_section(const std::vector<const nlohmann::json*>& parts, const std::vector<ShardReport>& shards,
                                   const std::string& out_path, bool has_flags, ComparisonFromRecords comparison = nullptr);

/// Records created as cases arrive (grouped_norm): concatenated in dtype order,
/// replay commands repointed at `out_path`.
nlohmann::json merge_dtype_ordered(const std::vector<const nlohmann::json*>& parts, const std::vector<ShardReport>& shards,
                                   const std::string& out_path);

/// A section one shard runs whole (axis_audit): taken from that shard (null if none ran it).
nlohmann::json pick_whole(const std::vector<const nlohmann::json*>& parts, const std::string& key);

}  // namespace normcheck::nightly
