// normcheck suites: the named, versioned suites and what each contains (ops x kernels x dtypes x
// generators x cases x shapes), from the suite table (src/suite/suites.cpp).
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "kernels/block_registry.hpp"
#include "properties/block_generators.hpp"
#include "properties/contraction_generators.hpp"
#include "suite/suites.hpp"

namespace normcheck::cli {
namespace {

/// A cell as text: strings without quotes.
std::string cell(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// One line per section of a suite: what runs and how many cases.
nlohmann::json suite_sections(std::string_view name) {
  const RunConfig ops = *suite_config(name);
  const BlockSuiteConfig block = *suite_block_config(name);
  const ContractionSuiteConfig qr = *suite_contraction_config(name);
  const GroupedSuiteConfig grouped = *suite_grouped_config(name);
  const BudgetSuiteConfig budget = *suite_budget_config(name);
  const auto cases = [](size_t dtypes, size_t generators, int per) { return static_cast<int64_t>(dtypes * generators) * per; };
  const size_t kernels = selected_kernels(ops).size(), block_kernels = builtin_block_kernels().size();
  return nlohmann::json::array({
      {{"section", "records"}, {"ops", "layernorm_forward, layernorm_backward, rmsnorm_forward, rmsnorm_backward"},
       {"kernels", kernels}, {"dtypes", ops.dtypes.size()}, {"generators", ops.generators.size()},
       {"cases_per_generator", ops.cases_per_generator}, {"cases", planned_cases(ops)},  // the corpus: its own count
       {"shapes", fmt::format("generator shapes, rows*n <= {}", ops.shape.max_elements)}},
      {{"section", "rms_block"}, {"ops", "linear_rmsnorm"}, {"kernels", block_kernels}, {"dtypes", block.dtypes.size()},
       {"generators", block.generators.size()}, {"cases_per_generator", block.cases_per_generator},
       {"cases", cases(block.dtypes.size(), block.generators.size(), block.cases_per_generator)}, {"shapes", "block generator shapes"}},
      {{"section", "qr_contraction"}, {"ops", "qr_contraction"}, {"kernels", 2}, {"dtypes", qr.dtypes.size()},
       {"generators", qr.generators.size()}, {"cases_per_generator", qr.cases_per_generator},
       {"cases", cases(qr.dtypes.size(), qr.generators.size(), qr.cases_per_generator)}, {"shapes", "the seed's categories"}},
      {{"section", "grouped_norm"}, {"ops", "batch_norm, group_norm, instance_norm"}, {"kernels", 3}, {"dtypes", grouped.dtypes.size()},
       {"generators", 3}, {"cases_per_generator", 3 * grouped.cases_per_layout},
       {"cases", cases(grouped.dtypes.size(), 9, grouped.cases_per_layout)}, {"shapes", "NCHW, NHWC, sequence"}},
      {{"section", "port_hamiltonian"}, {"ops", "port_hamiltonian"}, {"kernels", "cayley, dissipation, step"},
       {"dtypes", budget.dtypes.size()}, {"generators", 1}, {"cases_per_generator", budget.cases},
       {"cases", static_cast<int64_t>(budget.dtypes.size()) * budget.cases},
       {"shapes", fmt::format("width 2-{}, depth 1-{}", budget.max_width, budget.max_depth)}},
      {{"section", "axis_audit"}, {"ops", "axis_audit"}, {"kernels", "correct+planted"}, {"dtypes", 2}, {"generators", "tables"},
       {"cases_per_generator", 1}, {"cases", 0}, {"shapes", "(2,3), (2,3,4,4), NHWC, sequence"}},
  });
}

}  // namespace

int suites_command(bool json) {
  nlohmann::json all = nlohmann::json::array();
  for (const SuiteDef& s : suites())
    all.push_back({{"name", std::string(s.name)}, {"version", s.version}, {"seed", std::to_string(s.seed)},
                   {"description", std::string(s.description)}, {"sections", suite_sections(s.name)}});
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
