#include "nightly/history.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "nightly/diff.hpp"
#include "io/case_json.hpp"
#include "io/json_input.hpp"
#include "report/verdicts.hpp"
#include "sections/section.hpp"

namespace normcheck::nightly {
namespace {

/// 64-bit FNV-1a of the report's text: two adds of the same file are the same run.
std::string digest_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

std::optional<double> metric(const nlohmann::json& r, const char* field) {
  if (!r.contains(field)) return std::nullopt;
  return json_number_value(r.at(field));
}

std::string text(const nlohmann::json& j, const char* field) {
  return j.contains(field) && j.at(field).is_string() ? j.at(field).get<std::string>() : "";
}

/// SQLite's message, escaped: it quotes names from the file (a table or index name may hold a
/// newline; found by fuzz_history), and every error is one line.
std::string sqlite_error(sqlite3* db) { return printable(sqlite3_errmsg(db)); }

}  // namespace

struct History::Impl {
  sqlite3* db = nullptr;
  std::string path;

  void exec(const char* sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string what = err ? err : "unknown error";
      sqlite3_free(err);
      throw std::runtime_error(fmt::format("history '{}': {}", printable(path), printable(what)));
    }
  }

  sqlite3_stmt* prepare(const char* sql) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("history '{}': {}", printable(path), sqlite_error(db)));
    return s;
  }

  /// A query's last sqlite3_step code: anything but SQLITE_DONE (a damaged page, a crafted schema)
  /// is an error, never a silently shortened list.
  void check_read_to_the_end(int rc) const {
    if (rc != SQLITE_DONE) throw std::runtime_error(fmt::format("history '{}': {}", printable(path), sqlite3_errstr(rc)));
  }

  void step_done(sqlite3_stmt* s) const {
    if (sqlite3_step(s) != SQLITE_DONE) throw std::runtime_error(fmt::format("history '{}': {}", printable(path), sqlite_error(db)));
    sqlite3_reset(s);
  }
};

namespace {

/// The SQLite URI of a file path for a read-only open ('%', '?' and '#' percent-encoded).
std::string read_only_uri(const std::string& path, bool immutable) {
  std::string uri = "file:";
  for (const unsigned char c : path) uri += c == '%' || c == '?' || c == '#' ? fmt::format("%{:02X}", c) : std::string(1, static_cast<char>(c));
  return uri + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

/// The text of column `i`, "" for NULL (a crafted or damaged database may hold NULL anywhere).
std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t)) : "";
}

}  // namespace

void History::open(const std::string& path, Access access) {
  impl_->path = path;
  const auto open_with = [&](const std::string& name, int flags) {
    sqlite3_close(impl_->db);  // a failed open still allocates a handle
    impl_->db = nullptr;
    return sqlite3_open_v2(name.c_str(), &impl_->db, flags, nullptr) == SQLITE_OK;
  };
  bool opened = false;
  if (access == Access::read_write) {
    opened = open_with(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  } else {
    opened = open_with(read_only_uri(path, false), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    // a WAL database in a folder we cannot write cannot get its shared-memory file: read it as it is on disk
    if (opened && sqlite3_exec(impl_->db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK)
      opened = open_with(read_only_uri(path, true), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  if (!opened) throw std::runtime_error(fmt::format("cannot open history '{}': {}", printable(path), impl_->db ? sqlite_error(impl_->db) : "out of memory"));
  sqlite3_busy_timeout(impl_->db, 10000);
  if (access == Access::read_write) {
    impl_->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
    // IMMEDIATE: the write lock is taken (waiting for another writer) before anything is read, so
    // that a concurrent add waits instead of failing at once with "database is locked"
    impl_->exec(
        "BEGIN IMMEDIATE;"
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE, suite TEXT, suite_version INTEGER,"
        " seed TEXT, git_revision TEXT, start_time TEXT, end_time TEXT, passed INTEGER, complete INTEGER, records INTEGER,"
        " failing INTEGER, added_at TEXT DEFAULT CURRENT_TIMESTAMP);"
        "CREATE TABLE IF NOT EXISTS records(run_id INTEGER NOT NULL REFERENCES runs(id), section TEXT NOT NULL,"
        " identity TEXT NOT NULL, verdict TEXT, max_ulp REAL, max_ulp_normal REAL, rms_ulp REAL, max_bound_ratio REAL,"
        " PRIMARY KEY(run_id, section, identity));"
        // added later under the same schema version: a table an older history lacks until its next add
        "CREATE TABLE IF NOT EXISTS run_kernels(run_id INTEGER NOT NULL REFERENCES runs(id), kernel TEXT NOT NULL,"
        " PRIMARY KEY(run_id, kernel));"
        "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1');"
        "COMMIT;");
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(impl_->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &s, nullptr) != SQLITE_OK)
    throw std::runtime_error(fmt::format("'{}' is not a normcheck history ({})", printable(path), sqlite_error(impl_->db)));
  const bool found = sqlite3_step(s) == SQLITE_ROW;
  const std::string version = found ? column_text(s, 0) : "";
  sqlite3_finalize(s);
  if (version.empty()) throw std::runtime_error(fmt::format("history '{}' has no schema version (not a normcheck history, or damaged)", path));
  if (version != std::to_string(kHistorySchemaVersion))
    throw std::runtime_error(fmt::format("history '{}' has schema version {}, this normcheck reads {}", printable(path), printable(version.substr(0, 40)),
                                         kHistorySchemaVersion));
}

History::History(const std::string& path, Access access) : impl_(new Impl) {
  try {
    open(path, access);
  } catch (...) {
    sqlite3_close(impl_->db);
    delete impl_;
    throw;
  }
}

History::~History() {
  sqlite3_close(impl_->db);
  delete impl_;
}

namespace {

/// The kernels a report judged: every section's records' kernel names (a string field), sorted.
std::set<std::string> kernels_of(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const sections::Section* sec : sections::registry())
    if (const auto* list = sec->records(report))
      for (const auto& r : *list)
        if (r.is_object() && r.contains("kernel") && r.at("kernel").is_string()) out.insert(r.at("kernel").get<std::string>());
  return out;
}

}  // namespace

int64_t History::add(const nlohmann::json& report, const std::string& report_text) {
  const nlohmann::json& run = report.at("run");
  if (!run.value("complete", false)) throw std::invalid_argument("an incomplete (interrupted) report is not added to the history");
  const std::string digest = digest_of(report_text);
  // A test hook: microseconds to wait after each record (to kill the process in the middle of an add).
  const char* delay = std::getenv("NORMCHECK_TEST_HISTORY_INSERT_DELAY_US");
  const long delay_us = delay ? std::strtol(delay, nullptr, 10) : 0;
  impl_->exec("BEGIN IMMEDIATE;");
  try {
    sqlite3_stmt* dup = impl_->prepare("SELECT id FROM runs WHERE digest = ?");
    sqlite3_bind_text(dup, 1, digest.c_str(), -1, SQLITE_TRANSIENT);
    const bool exists = sqlite3_step(dup) == SQLITE_ROW;
    const int64_t existing = exists ? sqlite3_column_int64(dup, 0) : 0;
    sqlite3_finalize(dup);
    if (exists) throw std::invalid_argument(fmt::format("this report is already in the history (run {})", existing));
    const nlohmann::json& config = report.at("config");
    int64_t records = 0, failing = 0;
    for (const sections::Section* sec : sections::registry())
      if (const auto* list = sec->records(report))
        for (const auto& r : *list)
          records += 1, failing += is_failing_verdict(r.value("verdict", "")) && r.value("expectation", "") != "report_only" ? 1 : 0;
    sqlite3_stmt* ins = impl_->prepare(
        "INSERT INTO runs(digest, suite, suite_version, seed, git_revision, start_time, end_time, passed, complete, records, failing)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    const std::string suite = text(config, "suite"), seed = text(config, "seed"), rev = text(run, "git_revision"),
                      start = text(run, "start_time"), end = text(run, "end_time");
    sqlite3_bind_text(ins, 1, digest.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, suite.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 3, config.value("suite_version", int64_t{0}));
    sqlite3_bind_text(ins, 4, seed.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 5, rev.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 6, start.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 7, end.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(ins, 8, run.value("passed", false) ? 1 : 0);
    sqlite3_bind_int(ins, 9, 1);
    sqlite3_bind_int64(ins, 10, records);
    sqlite3_bind_int64(ins, 11, failing);
    impl_->step_done(ins);
    sqlite3_finalize(ins);
    const int64_t id = sqlite3_last_insert_rowid(impl_->db);
    sqlite3_stmt* rec = impl_->prepare(
        "INSERT OR REPLACE INTO records(run_id, section, identity, verdict, max_ulp, max_ulp_normal, rms_ulp, max_bound_ratio)"
        " VALUES(?,?,?,?,?,?,?,?)");
    for (const sections::Section* sec : sections::registry()) {
      if (!sec->diffed()) continue;
      const auto* list = sec->records(report);
      if (!list) continue;
      const std::string section(sec->key());
      for (const auto& r : *list) {
        const std::string identity = record_identity(r), verdict = text(r, "verdict");
        sqlite3_bind_int64(rec, 1, id);
        sqlite3_bind_text(rec, 2, section.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(rec, 3, identity.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(rec, 4, verdict.c_str(), -1, SQLITE_TRANSIENT);
        int column = 5;
        for (const char* field : {"max_ulp", "max_ulp_normal", "rms_ulp", "max_bound_ratio"}) {
          const auto v = metric(r, field);
          if (v && !std::isnan(*v)) sqlite3_bind_double(rec, column, *v);
          else sqlite3_bind_null(rec, column);
          ++column;
        }
        impl_->step_done(rec);
        if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      }
    }
    sqlite3_finalize(rec);
    sqlite3_stmt* kern = impl_->prepare("INSERT OR IGNORE INTO run_kernels(run_id, kernel) VALUES(?,?)");
    for (const std::string& k : kernels_of(report)) {
      sqlite3_bind_int64(kern, 1, id);
      sqlite3_bind_text(kern, 2, k.c_str(), -1, SQLITE_TRANSIENT);
      impl_->step_done(kern);
    }
    sqlite3_finalize(kern);
    impl_->exec("COMMIT;");
    return id;
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<HistoryRun> History::runs() const {
  std::vector<HistoryRun> out;
  sqlite3_stmt* s = impl_->prepare(
      "SELECT id, suite, seed, git_revision, start_time, passed, complete, records FROM runs ORDER BY start_time, id");
  int rc = SQLITE_DONE;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const auto col = [s](int i) { return column_text(s, i); };
    out.push_back({sqlite3_column_int64(s, 0), col(1), col(2), col(3), col(4), sqlite3_column_int(s, 5) != 0,
                   sqlite3_column_int(s, 6) != 0, sqlite3_column_int64(s, 7), {}});
  }
  sqlite3_finalize(s);
  impl_->check_read_to_the_end(rc);
  add_run_kernels(out);
  return out;
}

void History::add_run_kernels(std::vector<HistoryRun>& runs) const {
  sqlite3_stmt* k = nullptr;
  // a history written before run_kernels existed, opened read-only: its nights have no kernel list
  if (sqlite3_prepare_v2(impl_->db, "SELECT run_id, kernel FROM run_kernels ORDER BY run_id, kernel", -1, &k, nullptr) != SQLITE_OK) return;
  std::map<int64_t, HistoryRun*> by_id;
  for (HistoryRun& r : runs) by_id[r.id] = &r;
  int rc = SQLITE_DONE;
  while ((rc = sqlite3_step(k)) == SQLITE_ROW)
    if (const auto it = by_id.find(sqlite3_column_int64(k, 0)); it != by_id.end()) it->second->kernels.push_back(column_text(k, 1));
  sqlite3_finalize(k);
  impl_->check_read_to_the_end(rc);
}

std::vector<HistoryTrend> History::trends() const {
  std::map<int64_t, HistoryRun> by_id;
  std::map<int64_t, size_t> order;
  const std::vector<HistoryRun> all = runs();
  for (size_t i = 0; i < all.size(); ++i) by_id[all[i].id] = all[i], order[all[i].id] = i;
  std::map<std::pair<std::string, std::string>, HistoryTrend> trends;
  sqlite3_stmt* s = impl_->prepare(
      "SELECT run_id, section, identity, verdict, max_ulp, max_ulp_normal, rms_ulp, max_bound_ratio FROM records");
  // A crafted or damaged database may name a night it does not list, or a record twice on one
  // night: refused in one line (they were shown as a night 0, or as two points of one night).
  std::set<std::tuple<int64_t, std::string, std::string>> seen;
  std::string damaged;
  int rc = SQLITE_DONE;
  while (damaged.empty() && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    const auto str = [s](int i) { return column_text(s, i); };
    const auto num = [s](int i) -> std::optional<double> {
      if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
      return sqlite3_column_double(s, i);
    };
    const int64_t run = sqlite3_column_int64(s, 0);
    if (!by_id.count(run)) damaged = fmt::format("a record of run {}, which table runs does not hold", run);
    else if (!seen.insert({run, str(1), str(2)}).second)
      damaged = fmt::format("record '{}' of section '{}' twice in run {}", printable(str(2)), printable(str(1)), run);
    if (!damaged.empty()) break;
    HistoryTrend& t = trends[{str(1), str(2)}];
    t.section = str(1);
    t.identity = str(2);
    t.points.push_back({by_id.at(run), str(3), num(4), num(5), num(6), num(7), false});
  }
  sqlite3_finalize(s);
  if (!damaged.empty()) throw std::runtime_error(fmt::format("history '{}' is damaged: {}", printable(impl_->path), damaged));
  impl_->check_read_to_the_end(rc);
  std::vector<HistoryTrend> out;
  const DiffThresholds thresholds;
  for (auto& [key, t] : trends) {
    std::sort(t.points.begin(), t.points.end(), [&](const HistoryPoint& a, const HistoryPoint& b) { return order[a.run.id] < order[b.run.id]; });
    const auto as_json = [](const HistoryPoint& p) {
      nlohmann::json j = {{"verdict", p.verdict}};
      if (p.max_ulp) j["max_ulp"] = json_number(*p.max_ulp);
      if (p.rms_ulp) j["rms_ulp"] = json_number(*p.rms_ulp);
      if (p.max_bound_ratio) j["max_bound_ratio"] = json_number(*p.max_bound_ratio);
      return j;
    };
    for (size_t i = 1; i < t.points.size(); ++i) {
      const RecordChange c = classify_records(as_json(t.points[i - 1]), as_json(t.points[i]), thresholds);
      t.points[i].regressed = c.change == Change::new_failure || c.change == Change::regression;
      if (t.points[i].regressed) t.points[i].regressed_why = c.why;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace normcheck::nightly
