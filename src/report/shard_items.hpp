#pragma once
/// A sharded run's per-op cases in its report (`shard_items`), exactly: `merge` folds them in case
/// order with the run's own fold (merge_item), so that merged shards equal the unsharded run bit for
/// bit whatever the number of shards. Accumulators and worst elements travel as their bytes
/// (base64; the merge checks that every shard comes from the same build), scalars as JSON.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "suite/runner.hpp"

namespace normcheck::nightly {

/// An accumulator as its bytes (base64), and back: what a record that spans shards carries so that
/// `merge` can fold it exactly (throws std::invalid_argument on another size: another build).
std::string accumulator_bytes(const ErrorAccumulator& acc);
ErrorAccumulator accumulator_from_bytes(const nlohmann::json& j);

/// A shard record's storage dtype and accumulator (its acc_bytes; empty, `ran` false, when it ran no
/// case), for the sections whose merge folds per-dtype rows again. Throws std::invalid_argument.
struct ShardRecordAccumulator {
  DType storage;
  ErrorAccumulator acc;
  bool ran = false;
};
ShardRecordAccumulator shard_record_accumulator(const nlohmann::json& record, const std::string& section);

nlohmann::json shard_items_json(const std::vector<std::pair<int64_t, CaseResult>>& items);

/// Throws std::invalid_argument (one line) on a malformed entry.
std::vector<std::pair<int64_t, CaseResult>> shard_items_from_json(const nlohmann::json& j);

}  // namespace normcheck::nightly
