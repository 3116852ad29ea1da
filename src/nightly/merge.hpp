#pragma once
/// Combining the reports of `run --shard i/N` (i = 0..N-1) into the report of the unsharded run.
/// Every aggregate of a report lives inside one shard unit (docs/nightly.md), so the merge picks
/// each record from the shard that ran it and recomputes only what spans units: flag checks,
/// verdicts, case counts and completeness.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sections/shard_report.hpp"

namespace normcheck::nightly {


/// Throws std::invalid_argument with one line when the shards do not form one run: not normcheck
/// reports, other schema versions or git revisions, different configurations, not sharded, or
/// not exactly the shards 0..N-1 of one N. `out_path` is the merged report's path (replay commands).
nlohmann::json merge_shards(std::vector<ShardReport> shards, const std::string& out_path);

}  // namespace normcheck::nightly
