#pragma once
/// Comparing two reports record by record (issue 8, partial): matched by identity (op, kernel,
/// variant / form / kind, storage, accum, property, output) across every section, classified as
/// new failure, fixed, regression, improvement, unchanged, added or removed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck::nightly {

/// When an accuracy change counts (data, with defaults): a regression is a growth beyond these.
struct DiffThresholds {
  double max_ulp_factor = 2.0;         ///< new max ULP > factor x base max ULP (and > 1 ULP apart)
  double rms_ulp_factor = 1.5;         ///< new RMS ULP > factor x base RMS ULP (and > 0.5 ULP apart)
  double bound_ratio_increase = 0.10;  ///< new max err/bound > base + this x max(1, base)
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
};

struct DiffResult {
  std::vector<RecordChange> changes;
  std::vector<std::string> warnings;  ///< compared despite different configurations (--force)
  bool regressed() const;              ///< any new failure or regression
};

/// Throws std::invalid_argument with one line when the reports cannot be compared: not reports,
/// different schema versions, or (without `force`) different suites or seeds.
DiffResult diff_reports(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t, bool force);

nlohmann::json diff_json(const DiffResult& d, const DiffThresholds& t);

/// How one record changed from `base` to `now` (verdict and metrics fields as in reports).
Change compare_records(const nlohmann::json& base, const nlohmann::json& now, const DiffThresholds& t);

/// The key a record is matched by across reports (RecordChange::key), e.g. "layernorm_forward two_pass two_pass f16 f32 accuracy/normal y".
std::string record_identity(const nlohmann::json& record);

}  // namespace normcheck::nightly
