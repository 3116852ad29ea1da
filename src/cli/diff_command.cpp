// normcheck diff BASE NEW: record-by-record comparison of two reports (exit 0 no regression,
// 1 regression or new failure, nothing compared or records removed without --allow-removed, 2 bad input).
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "report/schema_check.hpp"
#include "io/json_input.hpp"
#include "nightly/diff.hpp"
#include "report/report.hpp"

namespace normcheck::cli {

int diff_command(const DiffOptions& o) {
  nightly::DiffResult d;
  nightly::DiffThresholds t;
  t.max_ulp_factor = o.max_ulp_factor;
  t.rms_ulp_factor = o.rms_ulp_factor;
  t.bound_ratio_increase = o.bound_ratio_increase;
  t.allow_removed = o.allow_removed;
  try {
    if (!(t.max_ulp_factor >= 1) || !(t.rms_ulp_factor >= 1) || !(t.bound_ratio_increase >= 0))
      throw std::invalid_argument("thresholds: ulp factors must be >= 1 and the bound-ratio increase >= 0");
    d = nightly::diff_reports(read_report_file(o.base), read_report_file(o.now), t, o.force);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.base + "' or '" + o.now, e).c_str());
    return kExitBadInput;
  }
  const nlohmann::json j = nightly::diff_json(d, t);
  for (const std::string& w : d.warnings) std::printf("warning: %s\n", w.c_str());
  std::fputs(nightly::change_groups_text(d).c_str(), stdout);
  for (const nightly::RecordChange& c : d.changes) {
    if (c.change == nightly::Change::unchanged && !o.verbose) continue;
    std::printf("%-12s %-14s %s%s%s\n", nightly::change_name(c.change), c.section.c_str(), c.key.c_str(),
                c.why.empty() ? "" : ": ", c.why.c_str());
    for (size_t start = 0; start < c.details.size();) {  // indented, one fact per line
      const size_t end = c.details.find('\n', start);
      std::printf("    %s\n", c.details.substr(start, end - start).c_str());
      start = end == std::string::npos ? c.details.size() : end + 1;
    }
  }
  std::string counts;
  for (const auto& [change, count] : j.at("counts").items())
    if (count.get<int64_t>() > 0) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count.get<int64_t>(), change);
  std::printf("records compared: %s\n", counts.empty() ? "none" : counts.c_str());
  std::printf("%s\n", d.verdict_line().c_str());
  if (!o.out.empty()) write_json_atomically(o.out, j);
  return d.passed() ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
