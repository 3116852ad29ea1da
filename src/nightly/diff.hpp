#pragma once
/// Comparing two reports record by record (issue 8, partial): matched by identity (op, kernel,
/// variant / form / kind, storage, accum, property, output) across every section, classified as
/// new failure, fixed, regression, improvement, unchanged, added or removed.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck::nightly {

/// When an accuracy change counts (data, with defaults): a regression is a growth beyond these.
struct DiffThresholds {
  double max_ulp_factor = 2.0;         ///< new max ULP > factor x base max ULP (and > 1 ULP apart)
  double rms_ulp_factor = 1.5;         ///< new RMS ULP > factor x base RMS ULP (and > 0.5 ULP apart)
  double bound_ratio_increase = 0.10;  ///< new max err/bound > base + this x max(1, base)
  /// Records judged in the base but absent or not run in the new report do not fail the comparison
  /// (`--allow-removed`: a night that deliberately runs a subset of the baseline's selection).
  bool allow_removed = false;
};

enum class Change { new_failure, fixed, regression, improvement, unchanged, added, removed };
const char* change_name(Change c);

struct RecordChange {
  std::string section, key;
  Change change;
  std::string why;  ///< e.g. "max_ulp 3.2 -> 9.1"
  /// New failures and regressions: the numbers before and after (err/bound, max ULP over normal
  /// outputs, RMS ULP), the new worst element and its replay command, one fact per line.
  std::string details{};
  /// The group a change is counted in (kernel x dtype x op): "builtin two_pass", "f32", "layernorm_forward".
  std::string kernel{}, dtype{}, op{};
};

struct DiffResult {
  std::vector<RecordChange> changes;
  std::vector<std::string> warnings;  ///< compared despite different configurations (--force)
  bool allow_removed = false;         ///< DiffThresholds::allow_removed of the comparison
  bool regressed() const;              ///< any new failure or regression
  /// Records judged in both reports: every change but added and removed.
  int64_t compared() const;
  int64_t count(Change c) const;
  /// Why the nightly verdict fails, one reason per entry: new failures and regressions, no judged
  /// record in common (nothing was compared), records removed (unless allow_removed). Empty: passed.
  std::vector<std::string> failure_reasons() const;
  /// The reasons beyond new failures and regressions: nothing compared, records removed.
  std::vector<std::string> comparison_failures() const;
  bool passed() const { return failure_reasons().empty(); }
  /// The verdict in one line: "no regression", "REGRESSED: ..." or "FAILED: <why>".
  std::string verdict_line() const;
};

/// Changed records counted per (kernel, dtype, op), groups with a new failure or regression first,
/// then by the number of changes; unchanged records are not counted.
struct ChangeGroup {
  std::string kernel, dtype, op;
  std::array<int64_t, 7> counts{};  ///< indexed by Change
  int64_t changed() const;
};
std::vector<ChangeGroup> group_changes(const DiffResult& d);

/// The groups as text, one line each ("  3 changed  builtin two_pass f32 layernorm_forward: 2 regression, 1 fixed"),
/// after a heading; empty when nothing changed.
std::string change_groups_text(const DiffResult& d);

/// Throws std::invalid_argument with one line when the reports cannot be compared: not reports,
/// different schema versions, or (without `force`) different suites or seeds.
DiffResult diff_reports(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t, bool force);

nlohmann::json diff_json(const DiffResult& d, const DiffThresholds& t);

/// How one record changed from `base` to `now` (verdict and metrics fields as in reports).
Change compare_records(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t);
/// The same with what changed (RecordChange::why: the metrics that grew, before and after).
RecordChange classify_records(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t);

/// The key a record is matched by across reports (RecordChange::key), e.g. "layernorm_forward two_pass two_pass f16 f32 accuracy/normal y".
std::string record_identity(const nlohmann::json& record);

}  // namespace normcheck::nightly
