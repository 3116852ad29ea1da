#pragma once
/// Inline SVG chart primitives for the HTML report (issue 8): a log-count histogram of ULP-error
/// buckets and a log-log scatter plot. Self-contained markup, no scripts, every string escaped.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace normcheck::render {

/// Escapes & < > " ' for HTML text and attribute values (SVG included).
std::string escape(std::string_view s);

/// A count with thousands separators: 1234567 -> "1,234,567".
std::string format_count(int64_t n);

/// A measured value, 4 significant digits: 0.5 -> "0.5", 12345.6 -> "1.235e+04"; inf/nan spelled out.
std::string format_value(double v);

/// The upper edge of ULP bucket k (report `ulp_histogram`): "≤0.5", "1", "2", "4", ..., "2^20", ...
std::string ulp_bucket_label(size_t k);

/// The ULP range of bucket k in words, e.g. "(1, 2] ULP"; the last of `bucket_count` also holds non-finite.
std::string ulp_bucket_range(size_t k, size_t bucket_count);

/// An SVG bar chart of `counts` (element counts per ULP bucket) on a log10 count axis; `shown`
/// buckets are drawn (a common x range across charts), labelled with their upper edges.
std::string histogram_svg(const std::vector<int64_t>& counts, size_t shown, size_t bucket_count,
                          const std::string& title);

struct ScatterPoint {
  double x, y;
  std::string label{};  ///< shown on hover (SVG <title>): the case and its record
};

struct ScatterSeries {
  std::string name;
  std::vector<ScatterPoint> points;
};

struct ScatterAxes {
  std::string title, x_label, y_label;
  double y_floor = 1e-3;               ///< zero (and smaller) values are drawn at this floor
  std::optional<double> reference_y;   ///< a dashed horizontal line (the bound: err/bound = 1)
  std::string reference_label;
};

/// An SVG scatter plot, log10 x and log10 y, one color per series with a legend; non-finite y
/// values are drawn on the top edge.
std::string scatter_svg(const std::vector<ScatterSeries>& series, const ScatterAxes& axes);

/// The color of series i (a fixed palette, repeated).
const char* series_color(size_t i);

/// Thins the series deterministically to at most `cap` points in all: each series keeps a share
/// proportional to its size, evenly spaced, always including its largest y. Returns the points dropped.
size_t thin_series(std::vector<ScatterSeries>& series, size_t cap);

/// One night of a record's trend: its label (the run's start date), the value and whether the record
/// regressed that night (against the night before).
struct TrendPoint {
  std::string label;
  double value;
  bool regressed = false;
  std::string why{};  ///< what regressed (the chart draws err/bound; the regression may be another metric)
};

/// A line chart of a record's max err/bound night by night (log y, the bound at 1 dashed), the nights
/// it regressed marked in red and labelled; each point names its night and value on hover.
std::string trend_svg(const std::vector<TrendPoint>& points, const std::string& title);

}  // namespace normcheck::render
