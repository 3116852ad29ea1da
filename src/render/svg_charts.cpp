#include "render/svg_charts.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace normcheck::render {
namespace {

/// A plot area inside an SVG canvas.
struct Frame {
  double left, top, width, height;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

/// Maps a log10 range onto pixels.
struct LogScale {
  double lo, hi, px0, px1;  ///< log10 range and pixel range
  double at(double log_value) const {
    const double t = hi > lo ? (log_value - lo) / (hi - lo) : 0.5;
    return px0 + t * (px1 - px0);
  }
};

std::string svg_open(int width, int height, const std::string& title) {
  return fmt::format("<svg width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                     "role=\"img\" class=\"chart\"><title>{2}</title>"
                     "<text x=\"{3}\" y=\"14\" class=\"ct\" text-anchor=\"middle\">{2}</text>",
                     width, height, escape(title), width / 2);
}

/// A compact label for 10^k: "1", "10", "100", "1e3", ...
std::string decade_label(int k) {
  if (k >= 0 && k <= 2) return fmt::format("{}", static_cast<int>(std::pow(10, k)));
  if (k == -1) return "0.1";
  if (k == -2) return "0.01";
  return fmt::format("1e{}", k);
}

/// Horizontal grid lines and labels at every decade of a log10 y axis.
std::string y_decades(const Frame& f, const LogScale& s) {
  std::string out;
  const int step = std::max(1, static_cast<int>(std::ceil((s.hi - s.lo) / 8)));
  for (int k = static_cast<int>(std::ceil(s.lo)); k <= static_cast<int>(std::floor(s.hi)); k += step) {
    const double y = s.at(k);
    out += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tl\" text-anchor=\"end\">{}</text>",
                       f.left, f.right(), y, y, f.left - 4, y + 3, decade_label(k));
  }
  return out;
}

/// A label for a power of two: "1", "16", "1k", "64k", "1M".
std::string pow2_label(int k) {
  if (k < 0) return fmt::format("2^{}", k);
  if (k < 10) return fmt::format("{}", 1 << k);
  if (k < 20) return fmt::format("{}k", 1 << (k - 10));
  return fmt::format("{}M", 1 << std::min(k - 20, 30));
}

/// Vertical grid lines at powers of two of a log10 x axis (every other one when crowded).
std::string x_powers_of_two(const Frame& f, const LogScale& s) {
  std::string out;
  const int k0 = std::max(0, static_cast<int>(std::ceil(s.lo / std::log10(2.0)))), k1 = static_cast<int>(std::floor(s.hi / std::log10(2.0)));
  const int step = std::max(1, (k1 - k0 + 11) / 12);
  for (int k = k0; k <= k1; k += step) {
    const double x = s.at(k * std::log10(2.0));
    out += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tl\" text-anchor=\"middle\">{}</text>",
                       x, x, f.top, f.bottom(), x, f.bottom() + 12, pow2_label(k));
  }
  return out;
}

std::string axis_titles(const Frame& f, const std::string& x_label, const std::string& y_label) {
  return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"al\" text-anchor=\"middle\">{}</text>"
                     "<text transform=\"translate(12 {:.1f}) rotate(-90)\" class=\"al\" text-anchor=\"middle\">{}</text>",
                     f.left, f.top, f.width, f.height, f.left + f.width / 2, f.bottom() + 28, escape(x_label),
                     f.top + f.height / 2, escape(y_label));
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

std::string ulp_bucket_label(size_t k) {
  if (k == 0) return "\u22640.5";
  if (k <= 11) return fmt::format("{}", int64_t{1} << (k - 1));
  return fmt::format("2^{}", k - 1);
}

std::string ulp_bucket_range(size_t k, size_t bucket_count) {
  if (k == 0) return "\u2264 0.5 ULP";
  const std::string lo = k == 1 ? "0.5" : ulp_bucket_label(k - 1), hi = ulp_bucket_label(k);
  if (k + 1 == bucket_count) return fmt::format("> {} ULP or non-finite", lo);
  return fmt::format("({}, {}] ULP", lo, hi);
}

std::string histogram_svg(const std::vector<int64_t>& counts, size_t shown, size_t bucket_count,
                          const std::string& title) {
  const Frame f{44, 24, 244, 120};
  shown = std::max<size_t>(shown, 1);
  const int64_t peak = std::max<int64_t>(1, counts.empty() ? 1 : *std::max_element(counts.begin(), counts.end()));
  const LogScale s{-0.3, std::max(1.0, std::ceil(std::log10(static_cast<double>(peak)))), f.bottom(), f.top};
  std::string out = svg_open(296, 184, title) + y_decades(f, s);
  const double w = f.width / static_cast<double>(shown);
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(26.0 / w)));
  for (size_t k = 0; k < shown; ++k) {
    const double x = f.left + w * static_cast<double>(k);
    const int64_t c = k < counts.size() ? counts[k] : 0;
    if (c > 0) {
      const double y = s.at(std::log10(static_cast<double>(c)));
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"bar{}\">"
                         "<title>{}: {}</title></rect>",
                         x + 0.5, y, std::max(1.0, w - 1), f.bottom() - y, k + 1 == bucket_count ? " nf" : "",
                         escape(ulp_bucket_range(k, bucket_count)), format_count(c));
    }
    if (k % label_every == 0)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tl\" text-anchor=\"middle\">{}</text>", x + w / 2,
                         f.bottom() + 12, escape(ulp_bucket_label(k)));
  }
  return out + axis_titles(f, "|error| in ULP (bucket upper edge)", "elements") + "</svg>";
}

const char* series_color(size_t i) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return palette[i % (sizeof palette / sizeof *palette)];
}

std::string scatter_svg(const std::vector<ScatterSeries>& series, const ScatterAxes& axes) {
  const Frame f{48, 24, 390, 250};
  double x_lo = HUGE_VAL, x_hi = -HUGE_VAL, y_lo = std::log10(axes.y_floor), y_hi = y_lo + 1;
  if (axes.reference_y) y_hi = std::max(y_hi, std::log10(*axes.reference_y) + 0.5);
  for (const ScatterSeries& s : series)
    for (const ScatterPoint& p : s.points) {
      if (p.x > 0) x_lo = std::min(x_lo, std::log10(p.x)), x_hi = std::max(x_hi, std::log10(p.x));
      if (std::isfinite(p.y) && p.y > axes.y_floor) y_hi = std::max(y_hi, std::log10(p.y));
    }
  if (!(x_lo <= x_hi)) x_lo = 0, x_hi = 1;
  const LogScale sx{x_lo - 0.1, x_hi + 0.1, f.left, f.right()}, sy{y_lo, std::ceil(y_hi * 2) / 2, f.bottom(), f.top};
  std::string out = svg_open(580, 310, axes.title) + y_decades(f, sy) + x_powers_of_two(f, sx);
  if (axes.reference_y) {
    const double y = sy.at(std::log10(*axes.reference_y));
    out += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"ref\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"reft\" text-anchor=\"end\">{}</text>",
                       f.left, f.right(), y, y, f.right() - 4, y - 4, escape(axes.reference_label));
  }
  for (size_t i = 0; i < series.size(); ++i) {
    // One circle per point, its case named on hover (SVG <title>: no script needed).
    std::string dots;
    for (const ScatterPoint& p : series[i].points) {
      if (!(p.x > 0)) continue;  // not on a log axis (counted as not drawn in the caption)
      const double ly = !std::isfinite(p.y) ? sy.hi : std::log10(std::max(p.y, axes.y_floor));
      dots += fmt::format("<circle cx=\"{:.0f}\" cy=\"{:.0f}\" r=\"2\"><title>{}</title></circle>", sx.at(std::log10(p.x)),
                          sy.at(std::min(ly, sy.hi)), escape(p.label.empty() ? format_value(p.y) : p.label + ": " + format_value(p.y)));
    }
    if (!dots.empty()) out += fmt::format("<g class=\"pts\" fill=\"{}\">{}</g>", series_color(i), dots);
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"lg\">{}</text>",
                       f.right() + 10, f.top + 16.0 * i, series_color(i), f.right() + 24, f.top + 16.0 * i + 9,
                       escape(series[i].name));
  }
  return out + axis_titles(f, axes.x_label, axes.y_label) + "</svg>";
}

size_t thin_series(std::vector<ScatterSeries>& series, size_t cap) {
  size_t total = 0;
  for (const ScatterSeries& s : series) total += s.points.size();
  if (total <= cap) return 0;
  size_t dropped = 0;
  const size_t budget = cap > series.size() ? cap - series.size() : 1;  // room for each series' minimum of one
  for (ScatterSeries& s : series) {
    const size_t n = s.points.size();
    const size_t keep = std::max<size_t>(1, n * budget / total);
    if (keep >= n) continue;
    const auto top = std::max_element(s.points.begin(), s.points.end(), [](const ScatterPoint& a, const ScatterPoint& b) {
      return !std::isnan(b.y) && (std::isnan(a.y) || a.y < b.y);
    });
    const ScatterPoint peak = *top;
    std::vector<ScatterPoint> kept{peak};
    for (size_t j = 1; j < keep; ++j) kept.push_back(s.points[j * n / keep]);
    dropped += n - kept.size();
    s.points = std::move(kept);
  }
  return dropped;
}

/// The metric names of a regression's why ("max_ulp 3 -> 33; max err/bound 0.5 -> 5.5": " (max_ulp, max
/// err/bound)"), for the label on the chart: the regression may be in a metric other than the one drawn.
static std::string regressed_metrics(const std::string& why) {
  std::string names;
  for (size_t start = 0; start < why.size();) {
    const size_t end = std::min(why.find("; ", start), why.size());
    const std::string item = why.substr(start, end - start);
    const size_t number = item.find_first_of("0123456789-");
    std::string name = item.substr(0, number == std::string::npos ? item.size() : number);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!name.empty()) names += (names.empty() ? "" : ", ") + name;
    start = end + 2;
  }
  return names.empty() ? "" : " (" + names + ")";
}

std::string trend_svg(const std::vector<TrendPoint>& points, const std::string& title) {
  const Frame f{48, 24, 420, 200};
  double y_hi = 0.5, y_lo = -4;  // log10 of max err/bound: 1e-4 .. at least 10^0.5
  for (const TrendPoint& p : points)
    if (std::isfinite(p.value) && p.value > 0) y_hi = std::max(y_hi, std::log10(p.value) + 0.3), y_lo = std::min(y_lo, std::floor(std::log10(p.value)));
  const LogScale sy{y_lo, std::ceil(y_hi * 2) / 2, f.bottom(), f.top};
  const double step = points.size() > 1 ? f.width / static_cast<double>(points.size() - 1) : 0;
  const auto x_at = [&](size_t i) { return f.left + (points.size() > 1 ? step * static_cast<double>(i) : f.width / 2); };
  const auto y_at = [&](double v) { return sy.at(!std::isfinite(v) ? sy.hi : std::log10(std::max(v, std::pow(10.0, y_lo)))); };
  std::string out = svg_open(540, 270, title) + y_decades(f, sy);
  const double one = sy.at(0);
  out += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"ref\"/>", f.left, f.right(), one, one);
  std::string line;
  for (size_t i = 0; i < points.size(); ++i) line += fmt::format("{}{:.1f} {:.1f}", i ? " L" : "M", x_at(i), y_at(points[i].value));
  if (!line.empty()) out += "<path d=\"" + line + "\" fill=\"none\" stroke=\"#4a78b5\" stroke-width=\"1.5\"/>";
  for (size_t i = 0; i < points.size(); ++i) {
    const TrendPoint& p = points[i];
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"{}><title>{}: {}{}</title></circle>", x_at(i),
                       y_at(p.value), p.regressed ? 6 : 3, p.regressed ? "#c62828" : "#4a78b5", p.regressed ? " class=\"regressed\"" : "",
                       escape(p.label), escape(format_value(p.value)), p.regressed ? " (regressed: " + escape(p.why) + ")" : "");
    if (p.regressed)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"reft\" text-anchor=\"middle\">regressed{}</text>", x_at(i),
                         y_at(p.value) - 9, escape(regressed_metrics(p.why)));
    if (points.size() <= 12 || i % ((points.size() + 11) / 12) == 0)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tl\" text-anchor=\"middle\">{}</text>", x_at(i), f.bottom() + 12,
                         escape(p.label.size() >= 16 ? p.label.substr(5, 11) : p.label));  // "12-02T05:58" of an ISO time
  }
  return out + axis_titles(f, "night (run start, UTC)", "max err/bound") + "</svg>";
}

}  // namespace normcheck::render
