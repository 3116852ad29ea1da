// normcheck norm-budget: the port-Hamiltonian budget check and growth table (issue 9).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "report/report.hpp"
#include "report/budget_report.hpp"
#include "suite/budget_suite.hpp"

namespace normcheck::cli {
namespace {

BudgetSuiteConfig budget_config(const BudgetOptions& o) {
  BudgetSuiteConfig cfg;
  if (o.dtypes.empty()) cfg.dtypes = dtype_ids();
  else cfg.dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
  if (o.width < kPhMinWidth || o.width > kPhMaxWidth)
    throw std::invalid_argument(fmt::format("--width must be in [{}, {}], got {}", kPhMinWidth, kPhMaxWidth, o.width));
  if (o.depths.empty()) throw std::invalid_argument("--depths needs at least one depth");
  for (int64_t d : o.depths)
    if (d < 1 || d > kPhMaxDepth) throw std::invalid_argument(fmt::format("--depths must be in [1, {}], got {}", kPhMaxDepth, d));
  if (!(o.h > 0) || !std::isfinite(o.h)) throw std::invalid_argument(fmt::format("--h must be finite and > 0, got {}", o.h));
  if (!(o.gain > 0) || !std::isfinite(o.gain)) throw std::invalid_argument(fmt::format("--gain must be finite and > 0, got {}", o.gain));
  if (o.cases < 0) throw std::invalid_argument(fmt::format("--cases must be >= 0, got {}", o.cases));
  if (o.threads < 1) throw std::invalid_argument(fmt::format("--threads must be >= 1, got {}", o.threads));
  cfg.cases = o.cases;
  cfg.seed = o.seed;
  cfg.threads = o.threads;
  GrowthConfig g;
  g.width = o.width;
  g.depths = o.depths;
  g.h = o.h;
  g.gain = o.gain;
  g.seed = o.seed;
  cfg.growth = g;
  return cfg;
}

std::string cell(const nlohmann::json& v) { return v.is_null() ? "overflow" : fmt::format("{:.3g}", v.get<double>()); }

/// One growth table: `kernel` / `oracle` columns of every row at every depth.
void print_growth(const nlohmann::json& g, const char* title, const char* kernel, const char* oracle, bool overflow) {
  std::printf("%s at width %lld (kernel / oracle):\n", title, static_cast<long long>(g["width"].get<int64_t>()));
  for (const auto& row : g["rows"]) {
    std::printf("  %-23s %-4s", row["arch"].get<std::string>().c_str(), row["storage"].get<std::string>().c_str());
    for (size_t i = 0; i < row[kernel].size(); ++i)
      std::printf("  L=%lld %s/%s", static_cast<long long>(g["depths"][i].get<int64_t>()), cell(row[kernel][i]).c_str(),
                  cell(row[oracle][i]).c_str());
    std::printf("%s\n", !overflow || row["overflow_depth"].is_null() ? "" : fmt::format("  overflow at {}", row["overflow_depth"].get<int64_t>()).c_str());
  }
}

void print_tables(const nlohmann::json& s) {
  const nlohmann::json& g = s["growth"];
  print_growth(g, "growth ||x_L|| / ||x_0||", "kernel_ratio", "oracle_ratio", true);
  print_growth(g, "gradient growth ||dL/dx_0|| / ||dL/dx_L||", "grad_kernel_ratio", "grad_oracle_ratio", false);
  for (const auto& b : g["budget"])
    std::printf("  %-4s defect %s (bound %s), slack > 1%% at depth %s, budget %s; gradient budget slack %s, %s\n",
                b["storage"].get<std::string>().c_str(), cell(b["orthogonality_defect"]).c_str(), cell(b["orthogonality_defect_bound"]).c_str(),
                b["slack_exceeds_1pct_depth"].is_null() ? "none" : std::to_string(b["slack_exceeds_1pct_depth"].get<int64_t>()).c_str(),
                b["fp_budget_holds"].get<bool>() ? "holds" : "VIOLATED", cell(b["grad_final_slack"]).c_str(),
                b["fp_grad_budget_holds"].get<bool>() ? "holds" : "VIOLATED");
}

}  // namespace

int norm_budget_command(const BudgetOptions& o, const std::string& command_line) {
  BudgetSuiteConfig cfg;
  const std::string out = o.out.empty() ? "reports/norm_budget.json" : o.out;
  try {
    cfg = budget_config(o);
    check_writable(out);  // before the stream runs
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  if (o.out.empty()) announce_default_output(out);
  const BudgetSuiteResult r = run_budget_suite(cfg);
  const nlohmann::json section = budget_suite_json(cfg, r);
  write_json_atomically(out, {{"tool", "normcheck norm-budget"}, {"command", command_line}, {"port_hamiltonian", section}});
  print_tables(section);
  const bool passed = budget_suite_passed(r);
  std::printf("report: %s (%s)\n", out.c_str(), passed ? "PASSED" : "FAILED");
  return passed ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
