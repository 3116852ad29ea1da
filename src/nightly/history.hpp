#pragma once
/// Nightly history in SQLite (issue 21 item 3, docs/nightly.md): each report's summary and per-record
/// metrics, one transaction per report, so that trends across nights can be shown and the night a
/// record regressed found. Schema versioned (table meta), WAL journal, duplicates refused; a process
/// killed in the middle of `add` leaves the database as it was before (SQLite's atomic commit).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace normcheck::nightly {

inline constexpr int kHistorySchemaVersion = 1;

struct HistoryRun {
  int64_t id = 0;
  std::string suite, seed, git_revision, start_time;
  bool passed = false, complete = false;
  int64_t records = 0;
  /// The kernels the night judged (the records' kernel fields: builtin, plugin:NAME, serve:NAME, ...),
  /// sorted; empty for a night added before the history kept them.
  std::vector<std::string> kernels;
};

/// One record on one night.
struct HistoryPoint {
  HistoryRun run;
  std::string verdict;
  std::optional<double> max_ulp, max_ulp_normal, rms_ulp, max_bound_ratio;
  bool regressed = false;  ///< a new failure or a regression against the previous night (diff's default thresholds)
  std::string regressed_why{};  ///< what regressed: the metrics that grew, before and after (or the verdict change)
};

/// A record's trend: its section, identity (as `normcheck diff` names it) and one point per night.
struct HistoryTrend {
  std::string section, identity;
  std::vector<HistoryPoint> points;
};

class History {
 public:
  /// read_write: opens the database, creating it (and its tables) when absent, and waits up to 10 s
  /// for another writer. read_only: opens an existing database without ever writing to it (a file
  /// or folder without write permission, a read-only mount: `history show`). Either throws
  /// std::runtime_error with one line when it cannot, or when the file holds no normcheck history
  /// or another schema version.
  enum class Access { read_write, read_only };
  explicit History(const std::string& path, Access access = Access::read_write);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  /// Adds a complete report (its summary and every record of every diffed section) in one
  /// transaction; returns the run id. Throws std::invalid_argument when the report is already there
  /// (same content digest) or is incomplete.
  int64_t add(const nlohmann::json& report, const std::string& report_text);

  std::vector<HistoryRun> runs() const;

  /// Every record's trend, nights in order of the runs' start times.
  std::vector<HistoryTrend> trends() const;

 private:
  void open(const std::string& path, Access access);
  void add_run_kernels(std::vector<HistoryRun>& runs) const;
  struct Impl;
  Impl* impl_;
};

}  // namespace normcheck::nightly
