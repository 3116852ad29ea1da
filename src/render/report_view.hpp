#pragma once
/// A read-only view of a report for rendering: every record of every section with the labels the
/// HTML report groups it by (op, dtype), tolerant of missing fields and of sections it does not know.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck::render {

/// One record of any report section.
struct RecordRef {
  std::string section;  ///< "records" (top level), "rms_block", "qr_contraction", "grouped_norm", or any other
  size_t index;         ///< index in the section's `records` (the replay option's value)
  const nlohmann::json* json;
  std::string op;       ///< op, else kind, else the section
  std::string dtype;    ///< storage, else dtype, else "-"
};

/// The verdict columns of the summary table.
enum class VerdictClass { pass, fail, flagged, not_run, uncertified, other };
inline constexpr int kVerdictClasses = 6;
const char* verdict_class_name(VerdictClass c);

/// Throws std::invalid_argument with one line unless `j` is a normcheck report (tool, schema_version, run).
void require_report(const nlohmann::json& j);

/// Every record: the top-level `records`, then each top-level object holding a `records` array of
/// objects (known sections first, in a fixed order, then unknown ones in key order).
std::vector<RecordRef> collect_records(const nlohmann::json& report);

/// pass; fail, own_bound_violated and kernel_failure; flagged; not_run; uncertified; anything else (e.g. "measured").
VerdictClass verdict_class(const nlohmann::json& record);

/// A failing record that had to pass (verdict fail, own_bound_violated or kernel_failure, expectation not report_only).
bool failing_must_pass(const nlohmann::json& record);

/// A numeric field: a JSON number, or the report's "inf" / "-inf" / "nan" strings; nullopt otherwise.
std::optional<double> number_field(const nlohmann::json& j, const char* field);

/// A string field, or `fallback` when absent or not a string.
std::string string_field(const nlohmann::json& j, const char* field, const std::string& fallback = "");

/// A field of any type as display text (strings unquoted, null/absent as `fallback`).
std::string text_field(const nlohmann::json& j, const char* field, const std::string& fallback = "-");

/// The kernel a record judges: the variant of a built-in kernel, kernel and variant of an external one, else form or kind.
std::string kernel_label(const nlohmann::json& record);

/// The worst case's shape: "rows x n", or "d,n,m = ..." for blocks and contractions; "-" when unknown.
std::string shape_label(const nlohmann::json& record);

/// The sum of the records' `ulp_histogram` arrays (empty when none has one).
std::vector<int64_t> summed_histogram(const std::vector<const RecordRef*>& records);

}  // namespace normcheck::render
