// normcheck render REPORT [--diff BASE] [--out FILE]: one self-contained HTML file (exit 0 written,
// 2 bad input; render does not judge).
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "report/schema_check.hpp"
#include "io/json_input.hpp"
#include "io/output_files.hpp"
#include "nightly/diff.hpp"
#include "nightly/history.hpp"
#include "render/html_report.hpp"
#include "report/report.hpp"

namespace normcheck::cli {
namespace {

/// REPORT with .json replaced by .html (appended when it does not end in .json).
std::string default_html_path(const std::string& report) {
  const std::string ext = ".json";
  if (report.size() > ext.size() && report.compare(report.size() - ext.size(), ext.size(), ext) == 0)
    return report.substr(0, report.size() - ext.size()) + ".html";
  return report + ".html";
}

}  // namespace

int render_command(const RenderOptions& o) {
  try {
    const nlohmann::json report = read_report_file(o.report);
    render::RenderOptions ro;
    ro.worst_count = static_cast<size_t>(o.worst);
    ro.report_name = o.report;
    ro.base_name = o.diff;
    std::optional<nightly::DiffResult> diff;
    nightly::DiffThresholds t;
    t.allow_removed = o.allow_removed;
    if (o.allow_removed && o.diff.empty()) throw std::invalid_argument("--allow-removed needs --diff BASE");
    if (!o.diff.empty()) diff = nightly::diff_reports(read_report_file(o.diff), report, t, /*force=*/false);
    std::vector<nightly::HistoryTrend> trends;
    if (!o.history.empty()) {
      if (!std::filesystem::exists(o.history)) throw std::invalid_argument("--history '" + o.history + "' does not exist");
      trends = nightly::History(o.history).trends();
      ro.trends = &trends;
      ro.history_name = o.history;
    }
    const std::string html = render::render_html(report, diff ? &*diff : nullptr, ro);
    const std::string out = o.out.empty() ? default_html_path(o.report) : o.out;
    if (std::filesystem::exists(out) && std::filesystem::equivalent(out, o.report))
      throw std::invalid_argument("--out '" + out + "' would overwrite the report");
    if (!o.diff.empty() && std::filesystem::exists(out) && std::filesystem::exists(o.diff) && std::filesystem::equivalent(out, o.diff))
      throw std::invalid_argument("--out '" + out + "' would overwrite the --diff base report");
    write_file_atomically(out, html);
    std::printf("wrote %s (%zu bytes)\n", out.c_str(), html.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: error: %s\n", describe_input_error(o.diff.empty() ? o.report : o.report + "' or '" + o.diff, e).c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace normcheck::cli
