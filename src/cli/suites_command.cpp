// normcheck suites: the named, versioned suites and what each contains (ops x kernels x dtypes x
// generators x cases x shapes), from the suite table (src/suite/suites.cpp).
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "sections/section.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

/// A cell as text: strings without quotes.
std::string cell(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// One line per section a suite runs (the sections its own --ops default names, or all): what runs and
/// how many cases.
nlohmann::json suite_sections(const SuiteDef& suite) {
  nlohmann::json rows = nlohmann::json::array();
  for (const sections::Section* s : sections::registry()) {
    const std::vector<std::string_view> names = s->ops();
    const bool runs = suite.ops.empty() || std::any_of(names.begin(), names.end(), [&](std::string_view op) {
                        return std::find(suite.ops.begin(), suite.ops.end(), op) != suite.ops.end();
                      });
    if (runs) rows.push_back(s->suite_row(suite.name));
  }
  return rows;
}

}  // namespace

int suites_command(bool json) {
  nlohmann::json all = nlohmann::json::array();
  for (const SuiteDef& s : suites())
    all.push_back({{"name", std::string(s.name)}, {"version", s.version}, {"seed", std::to_string(s.seed)},
                   {"description", std::string(s.description)}, {"sections", suite_sections(s)}});
  if (json) {
    std::printf("%s\n", all.dump(1).c_str());
    return kExitOk;
  }
  for (const nlohmann::json& s : all) {
    std::printf("%s (version %d, seed %s)\n  %s\n", s["name"].get<std::string>().c_str(), s["version"].get<int>(),
                s["seed"].get<std::string>().c_str(), s["description"].get<std::string>().c_str());
    std::printf("  %-17s %-26s %-7s %-10s %-6s %-7s %s\n", "section", "kernels", "dtypes", "generators", "cases", "per gen", "shapes");
    for (const nlohmann::json& row : s["sections"])
      std::printf("  %-17s %-26s %-7s %-10s %-6s %-7s %s\n", cell(row["section"]).c_str(), cell(row["kernels"]).c_str(),
                  cell(row["dtypes"]).c_str(), cell(row["generators"]).c_str(), cell(row["cases"]).c_str(),
                  cell(row["cases_per_generator"]).c_str(), cell(row["shapes"]).c_str());
  }
  return kExitOk;
}

}  // namespace normcheck::cli
