// normcheck history add REPORT --db FILE / history show --db FILE [--record ID]: the nightly history in
// SQLite (src/nightly/history.*, docs/nightly.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "nightly/history.hpp"
#include "render/svg_charts.hpp"
#include "io/json_input.hpp"
#include "report/schema_check.hpp"

namespace normcheck::cli {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string shown(const std::optional<double>& v) { return v ? render::format_value(*v) : "-"; }

/// The trend whose identity is `record`, or the only one containing it; throws with the candidates otherwise.
const nightly::HistoryTrend& trend_named(const std::vector<nightly::HistoryTrend>& trends, const std::string& record) {
  std::vector<const nightly::HistoryTrend*> matches;
  for (const nightly::HistoryTrend& t : trends) {
    if (t.identity == record) return t;
    if (t.identity.find(record) != std::string::npos) matches.push_back(&t);
  }
  if (matches.size() == 1) return *matches.front();
  std::string list;
  for (size_t i = 0; i < matches.size() && i < 5; ++i) list += (i ? "; '" : " '") + printable(matches[i]->identity) + "'";
  throw std::invalid_argument(matches.empty() ? fmt::format("no record '{}' in the history", printable(record))
                                              : fmt::format("'{}' names {} records, e.g.{}", record, matches.size(), list));
}

}  // namespace

int history_add_command(const HistoryOptions& o) {
  try {
    const nlohmann::json report = read_report_file(o.report);
    nightly::History history(o.db);
    int64_t id = 0;
    try {
      id = history.add(report, file_text(o.report));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("'" + o.report + "': " + e.what());
    }
    std::printf("added %s to %s as run %lld\n", o.report.c_str(), o.db.c_str(), static_cast<long long>(id));
  } catch (const std::exception& e) {
    print_error(describe_input_error(o.report, e));
    return kExitBadInput;
  }
  return kExitOk;
}

int history_show_command(const HistoryOptions& o) {
  try {
    if (!std::filesystem::exists(o.db)) throw std::invalid_argument("history '" + o.db + "' does not exist");
    const nightly::History history(o.db, nightly::History::Access::read_only);
    if (o.record.empty()) {
      std::printf("%-5s %-21s %-8s %-18s %-7s %-8s %s\n", "run", "start (UTC)", "suite", "git revision", "passed", "records", "kernels judged");
      for (const nightly::HistoryRun& r : history.runs()) {
        std::string kernels;
        for (const std::string& k : r.kernels) kernels += (kernels.empty() ? "" : ", ") + printable(k);
        std::printf("%-5lld %-21s %-8s %-18s %-7s %-8lld %s\n", static_cast<long long>(r.id), printable(r.start_time).c_str(),
                    printable(r.suite).c_str(), printable(r.git_revision).c_str(), r.passed ? "yes" : "NO", static_cast<long long>(r.records),
                    kernels.empty() ? "(not recorded)" : kernels.c_str());
      }
      return kExitOk;
    }
    const std::vector<nightly::HistoryTrend> trends = history.trends();
    const nightly::HistoryTrend& t = trend_named(trends, o.record);
    // what the database holds is printed with control characters escaped: it is a file anyone may have edited
    std::printf("%s: %s\n%-21s %-18s %-10s %12s %12s %12s %10s\n", printable(t.section).c_str(), printable(t.identity).c_str(), "start (UTC)",
                "git revision", "verdict", "err/bound", "max ULP", "ULP normal", "RMS ULP");
    for (const nightly::HistoryPoint& p : t.points)
      std::printf("%-21s %-18s %-10s %12s %12s %12s %10s%s\n", printable(p.run.start_time).c_str(), printable(p.run.git_revision).c_str(),
                  printable(p.verdict).c_str(),
                  shown(p.max_bound_ratio).c_str(), shown(p.max_ulp).c_str(), shown(p.max_ulp_normal).c_str(), shown(p.rms_ulp).c_str(),
                  p.regressed ? "  REGRESSED" : "");
  } catch (const std::exception& e) {
    print_error(printable(e.what()));
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace normcheck::cli
