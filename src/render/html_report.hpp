#pragma once
/// The HTML report (issue 8): one self-contained file (inline CSS and SVG, no scripts, nothing
/// fetched) with the run's verdict, a pass/fail summary per op x dtype, ULP histograms, error and
/// err/bound against n, the worst cases with their replay commands and, against a base report,
/// the regressions. Every string taken from the report is escaped.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "nightly/diff.hpp"
#include "nightly/history.hpp"

namespace normcheck::render {

struct RenderOptions {
  size_t worst_count = 20;              ///< records with the largest max err/bound in the worst-case table
  size_t max_points_per_chart = 1000;   ///< scatter points per chart before deterministic thinning
  std::string report_name;              ///< shown in the title (the report's path)
  std::string base_name;                ///< the --diff base report's path
  const std::vector<nightly::HistoryTrend>* trends = nullptr;  ///< render --history: per-record trends
  std::string history_name;             ///< the history database's path
  size_t trend_count = 12;              ///< trend charts beyond the regressed records
};

/// Renders the document. `diff` (may be null) is nightly::diff_reports(base, report, ...).
/// Throws std::invalid_argument when `report` is not a normcheck report.
std::string render_html(const nlohmann::json& report, const nightly::DiffResult* diff, const RenderOptions& o);

}  // namespace normcheck::render
