#pragma once
/// What the benchmark commands (bench-oracle, bench-audit) share: a monotonic clock, the median of
/// repeats, and the log-log slope of a cost against a size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

namespace normcheck::cli {

inline double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// The median of `v` (the upper one of an even count); 0 when empty.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

/// Least-squares slope of log(cost) against log(size): 1 for a cost proportional to the size, 0
/// for a cost per unit that does not grow.
inline double log_log_slope(const std::vector<std::pair<double, double>>& size_and_cost) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double k = static_cast<double>(size_and_cost.size());
  for (const auto& [n, cost] : size_and_cost) {
    const double x = std::log(n), y = std::log(cost);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = k * sxx - sx * sx;
  return den > 0 ? (k * sxy - sx * sy) / den : 0.0;
}

}  // namespace normcheck::cli
