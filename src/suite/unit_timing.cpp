#include "suite/unit_timing.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <mutex>

namespace normcheck {
namespace {

struct UnitSeconds {
  std::mutex mu;
  std::map<int64_t, double> seconds;
};

UnitSeconds& unit_seconds() {
  static UnitSeconds s;
  return s;
}

}  // namespace

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void add_unit_seconds(int64_t unit, double seconds) {
  UnitSeconds& s = unit_seconds();
  std::lock_guard<std::mutex> lock(s.mu);
  s.seconds[unit] += seconds;
}

UnitTimer::UnitTimer(int64_t unit) : unit_(unit), start_(thread_cpu_seconds()) {}

UnitTimer::~UnitTimer() { add_unit_seconds(unit_, thread_cpu_seconds() - start_); }

std::vector<std::optional<double>> measured_unit_seconds(int64_t units) {
  std::vector<std::optional<double>> out(static_cast<size_t>(std::max<int64_t>(units, 0)));
  UnitSeconds& s = unit_seconds();
  std::lock_guard<std::mutex> lock(s.mu);
  for (const auto& [unit, seconds] : s.seconds)
    if (unit >= 0 && unit < units) out[static_cast<size_t>(unit)] = seconds;
  return out;
}

}  // namespace normcheck
