// libFuzzer target: the nightly history database (docs/nightly.md, "History") as a crafted or damaged
// SQLite file: `history show` opens it read-only and lists its runs and trends; `history add` and
// `render --history` open it read-write. The input is the file's bytes. Beyond "no crash": a refusal
// is one line (std::runtime_error or std::invalid_argument), and every trend names its section and
// record and has one point per night at most.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "nightly/history.hpp"

namespace {

namespace nightly = normcheck::nightly;

/// The database file the input is written to (and SQLite's -wal/-shm beside it), removed at exit.
struct DatabaseFile {
  std::string path;
  DatabaseFile() {
    path = (std::filesystem::temp_directory_path() / "fuzz_history_XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd < 0) std::abort();
    close(fd);
  }
  ~DatabaseFile() { remove_all(); }
  void remove_all() const {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
  }
};

const DatabaseFile& database() {
  static const DatabaseFile file;
  return file;
}

bool is_one_line(const char* s) { return s[0] != '\0' && std::string(s).find('\n') == std::string::npos; }

void read_everything(nightly::History::Access access) {
  const nightly::History h(database().path, access);
  std::set<int64_t> ids;
  for (const nightly::HistoryRun& r : h.runs()) ids.insert(r.id);
  for (const nightly::HistoryTrend& t : h.trends()) {
    if (t.points.size() > ids.size()) __builtin_trap();  // at most one point per night
    for (const nightly::HistoryPoint& p : t.points)
      if (!ids.count(p.run.id)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  database().remove_all();
  std::ofstream(database().path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  for (const nightly::History::Access access : {nightly::History::Access::read_only, nightly::History::Access::read_write}) {
    try {
      read_everything(access);
    } catch (const std::runtime_error& e) {
      if (!is_one_line(e.what())) __builtin_trap();
    } catch (const std::invalid_argument& e) {
      if (!is_one_line(e.what())) __builtin_trap();
    }
  }
  return 0;
}
