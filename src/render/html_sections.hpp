#pragma once
/// The chart and table sections of the HTML report (internal to src/render).
#include <map>
#include <string>
#include <vector>

#include "nightly/diff.hpp"
#include "nightly/history.hpp"
#include "render/report_view.hpp"

namespace normcheck::render {

/// A record's diff class by section and identity (nightly::record_identity).
using ChangeMap = std::map<std::string, const nightly::RecordChange*>;
std::string change_key(const std::string& section, const std::string& identity);

/// CSS class of a diff class: "bad" (new failure, regression), "good" (fixed, improvement) or "neutral".
const char* change_css(nightly::Change c);

/// ULP histograms per op x dtype, summed over the records (records without histograms skipped).
/// Records grouped by kernel, dtype and op: counts by outcome, max err/bound, max ULP (normal outputs),
/// void-bound elements and kernel failures with the first message (a sortable, filterable table).
std::string kernel_summary_section(const std::vector<RecordRef>& records);

/// Trend lines from the nightly history (render --history): the records that regressed on some night
/// (all of them, the night marked), then those with the largest latest max err/bound, at most `count` charts.
std::string trend_section(const std::vector<nightly::HistoryTrend>& trends, const std::string& history_name, size_t count);

std::string histogram_section(const std::vector<RecordRef>& records);

/// Max ULP and max err/bound against n per dtype, one series per op, from the records' points.
std::string scatter_section(const std::vector<RecordRef>& records, size_t max_points_per_chart);

/// The `count` records with the largest max err/bound, every failing must-pass record and every
/// regressed record, with kernel, dtype, generator, shape, errors and the replay command.
std::string worst_section(const std::vector<RecordRef>& records, const ChangeMap* changes, size_t count);

}  // namespace normcheck::render
