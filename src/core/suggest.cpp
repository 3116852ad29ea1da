#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace normcheck {

int edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const int cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& candidates) {
  const int limit = std::max<int>(2, static_cast<int>(given.size()) / 3);
  const std::string* best = nullptr;
  int best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const int d = edit_distance(given, c);
    if (d < best_distance) {
      best_distance = d;
      best = &c;
    }
  }
  return best ? "; did you mean '" + *best + "'?" : "";
}

}  // namespace normcheck
