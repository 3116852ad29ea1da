// normcheck search-budget (issue 20): the worst-case search of the port-Hamiltonian norm budget over
// initial states and port signals; writes the worst cases as a corpus replayed by the tests.
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "io/output_files.hpp"
#include "suite/budget_search.hpp"

namespace normcheck::cli {

int search_budget_command(const BudgetSearchOptions& o) {
  std::vector<DType> dtypes;
  try {
    dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
    for (const std::string& obj : o.objectives)
      if (obj != "tightness" && obj != "slack") throw std::invalid_argument("unknown objective '" + obj + "' (tightness, slack)");
    if (o.objectives.empty()) throw std::invalid_argument("--objectives needs tightness and/or slack");
    if (!(o.h > 0) || !std::isfinite(o.h)) throw std::invalid_argument(fmt::format("--h must be finite and > 0, got {}", o.h));
    if (o.width < kPhMinWidth || o.width > kPhMaxWidth || o.depth < 1 || o.depth > kPhMaxDepth)
      throw std::invalid_argument(fmt::format("--width must be in [{}, {}] and --depth in [1, {}]", kPhMinWidth, kPhMaxWidth, kPhMaxDepth));
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  nlohmann::json corpus = {{"format", "normcheck-budget-corpus-v1"},
                           {"written_by", fmt::format("normcheck search-budget --width {} --depth {} --restarts {} --iterations {} --seed {}",
                                                      o.width, o.depth, o.restarts, o.iterations, o.seed)},
                           {"entries", nlohmann::json::array()}};
  bool violated = false;
  std::printf("%-5s %-9s %9s %6s %12s %12s %12s  %s\n", "dtype", "objective", "shape", "evals", "start", "best", "tightness", "checks");
  for (DType dt : dtypes)
    for (const std::string& obj : o.objectives) {
      const BudgetSearchConfig cfg{dt, o.width, o.depth, o.h, o.seed, o.restarts, o.iterations, obj};
      const BudgetSearchResult r = search_budget_worst_case(cfg);
      std::printf("%-5s %-9s %4lldx%-4lld %6lld %12.5g %12.5g %12.5g  %s\n", dtype_info(dt).name.data(), obj.c_str(),
                  static_cast<long long>(o.width), static_cast<long long>(o.depth), static_cast<long long>(r.evaluations), r.start_value,
                  r.value.of(obj), r.value.tightness, r.value.failed ? "FAILED" : "hold");
      violated = violated || r.value.failed || r.value.tightness > 1;
      corpus["entries"].push_back(budget_corpus_entry(r.best, obj, r.value));
    }
  if (!o.out.empty()) {
    try {
      write_json_atomically(o.out, corpus);
    } catch (const std::exception& e) {
      print_error(e.what());
      return kExitBadInput;
    }
    std::printf("corpus: %zu worst cases written to %s\n", corpus["entries"].size(), o.out.c_str());
  }
  if (violated) std::printf("BUDGET VIOLATED: a found case breaks the floating-point budget or a check (see the corpus)\n");
  return violated ? kExitCheckFailed : kExitOk;
}

}  // namespace normcheck::cli
