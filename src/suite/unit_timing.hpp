#pragma once
/// CPU seconds each shard unit took in this process: the report's run.unit_seconds, which
/// `run --shard i/N --balance-from REPORT` balances the shards by (docs/nightly.md, "Even shards").
#include <cstdint>
#include <optional>
#include <vector>

namespace normcheck {

/// Adds the calling thread's CPU time between construction and destruction to global unit `unit`
/// (a unit's items may run on several threads: their times add up).
class UnitTimer {
 public:
  explicit UnitTimer(int64_t unit);
  ~UnitTimer();
  UnitTimer(const UnitTimer&) = delete;
  UnitTimer& operator=(const UnitTimer&) = delete;

 private:
  int64_t unit_;
  double start_;
};

/// The calling thread's CPU time in seconds.
double thread_cpu_seconds();

/// Adds `seconds` to global unit `unit` (what a UnitTimer adds when it ends).
void add_unit_seconds(int64_t unit, double seconds);

/// The seconds measured for each global unit in [0, units); empty for a unit no timer covered here.
std::vector<std::optional<double>> measured_unit_seconds(int64_t units);

}  // namespace normcheck
