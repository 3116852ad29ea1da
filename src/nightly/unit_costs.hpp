#pragma once
/// Measured shard-unit costs (docs/nightly.md, "Even shards"): every run writes the CPU seconds of
/// each shard unit it ran (run.unit_seconds); `run --shard i/N --balance-from REPORT` balances the
/// units by a report's measured seconds instead of the built-in estimates, and every shard records
/// a digest of its unit-to-shard assignment, which `merge` requires to be the same on every shard.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck::nightly {

/// run.unit_seconds: one entry per global unit, seconds rounded to the microsecond, null where the
/// unit did not run in this process.
nlohmann::json unit_seconds_json(const std::vector<std::optional<double>>& seconds);

/// The run.unit_seconds of the report at `path`, which must measure exactly `units` units (a run of
/// the same suite and options); only its `run` member is kept while parsing. Throws
/// std::invalid_argument with one line naming the file.
std::vector<std::optional<double>> unit_seconds_from_report(const std::string& path, int64_t units);

/// `estimates` with every unit the measurement has replaced by its measured seconds.
std::vector<double> measured_or_estimated(const std::vector<double>& estimates, const std::vector<std::optional<double>>& measured);

/// A digest (FNV-1a, 16 hex digits) of the unit-to-shard assignment: shards balanced alike agree on it.
std::string owner_digest(const std::vector<int>& owner);

/// The merged run.unit_seconds of shard reports' `run` members (every unit from the shard that ran
/// it); null when a shard has none. Throws std::invalid_argument when two shards measured the same unit.
nlohmann::json merged_unit_seconds(const std::vector<const nlohmann::json*>& runs);

}  // namespace normcheck::nightly
