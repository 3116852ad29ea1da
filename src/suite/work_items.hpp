#pragma once
/// The work of a suite: items (dtype, generator index, case index) in dtype-major order, computed
/// from their index, and a parallel loop over them that stops early on stop_requested().
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/dtype.hpp"
#include "suite/unit_timing.hpp"

namespace normcheck {

/// Set to true (e.g. by a signal handler) to stop after the cases in flight (runner.cpp).
std::atomic<bool>& stop_requested();

/// Live counts for the progress line (cases finished, cases where a must-pass kernel failed), bumped by every
/// section as items finish (runner.cpp).
struct ProgressCounters {
  std::atomic<int64_t> done{0}, failing{0};
};
ProgressCounters& progress_counters();

/// Counts one finished item.
inline void count_finished(bool failing) {
  ++progress_counters().done;
  if (failing) ++progress_counters().failing;
}

/// A deterministic slice of a run (`run --shard i/N`). The work of every section is cut into units
/// (a per-op or port-Hamiltonian case, a (dtype, generator) or a dtype) numbered globally from each section's
/// `first_unit`; `owner` (the same on every shard: the run command balances the units' estimated
/// costs over the shards) says which shard runs each, else unit u runs on shard u mod count. A
/// unit is run whole by one shard, so merged shards give exactly the unsharded report.
/// The most shards a run may be cut into (run --shard i/N, and what merge accepts).
inline constexpr int kMaxShards = 100000;

struct ShardSpec {
  int index = 0, count = 1;
  int64_t first_unit = 0;
  std::shared_ptr<const std::vector<int>> owner;  ///< shard of every global unit (null: round robin)
  bool measured_balance = false;  ///< owner balances measured unit seconds (run --balance-from), not estimates
  std::string owner_digest;       ///< digest of `owner` (nightly/unit_costs.hpp): merge requires it equal on every shard
  bool owns(int64_t unit) const {
    const int64_t global = first_unit + unit;
    return owner && global < static_cast<int64_t>(owner->size()) ? (*owner)[static_cast<size_t>(global)] == index : global % count == index;
  }
  bool sharded() const { return count > 1; }
};

struct WorkItem {
  DType dtype;
  size_t generator_index;
  int64_t case_index;
};

/// The i-th item of dtypes x generators x cases.
inline WorkItem work_item_at(const std::vector<DType>& dtypes, size_t generators, int cases_per_generator, size_t i) {
  const size_t cases = static_cast<size_t>(cases_per_generator), per_dtype = generators * cases;
  return {dtypes[i / per_dtype], (i % per_dtype) / cases, static_cast<int64_t>(i % cases)};
}

/// Position of `dt` in `dtypes` (the unit number of a dtype-sliced section).
inline size_t dtype_position(const std::vector<DType>& dtypes, DType dt) {
  return static_cast<size_t>(std::find(dtypes.begin(), dtypes.end(), dt) - dtypes.begin());
}

/// Number of items i in [0, total) with owned(i).
template <class Owned>
int64_t count_owned(size_t total, Owned owned) {
  int64_t n = 0;
  for (size_t i = 0; i < total; ++i) n += owned(i) ? 1 : 0;
  return n;
}

/// The items of a dtype-major section with `per_dtype` items per dtype, sliced by dtype (the unit
/// of the grouped-norm and JVP sections). The QR contraction and the block slice by
/// (dtype, generator): `dtypes` counts those pairs and `per_dtype` the cases of one; the
/// port-Hamiltonian section by case (`dtypes` counts its cases, `per_dtype` is 1).
struct DtypeSlice {
  ShardSpec shard;
  size_t dtypes = 0, per_dtype = 0;
  size_t total() const { return dtypes * per_dtype; }
  bool owns(size_t item) const { return shard.owns(static_cast<int64_t>(item / per_dtype)); }
  int64_t planned() const { return count_owned(total(), [this](size_t i) { return owns(i); }); }
};

/// Runs `worker` on min(threads, items) threads, the caller's included: never more threads than
/// work, and a thread the system refuses to create (std::system_error) is not fatal: the threads
/// started so far, at least the caller's, do the work.
template <class Worker>
void run_on_threads(int threads, size_t items, Worker& worker) {
  const size_t wanted = std::max<size_t>(1, std::min(static_cast<size_t>(std::max(1, threads)), items));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < wanted; ++t) {
    try {
      pool.emplace_back(std::ref(worker));
    } catch (const std::system_error&) {
      break;
    }
  }
  worker();
  for (auto& t : pool) t.join();
}

/// Runs fn(i) for every i in [0, total) with wanted(i) on `threads` threads; results by index,
/// empty where an item is not wanted (another shard's) or a stop request left it undone.
template <class Result, class Fn, class Wanted>
std::vector<std::optional<Result>> run_items(size_t total, int threads, Fn fn, Wanted wanted) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < total; ++i)
    if (wanted(i)) todo.push_back(i);
  std::vector<std::optional<Result>> done(total);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; !stop_requested() && (k = next++) < todo.size();) done[todo[k]] = fn(todo[k]);
  };
  run_on_threads(threads, todo.size(), worker);
  return done;
}

/// run_items over the items a DtypeSlice's shard owns, each item's CPU time added to its shard unit
/// (the report's run.unit_seconds).
template <class Result, class Fn>
std::vector<std::optional<Result>> run_slice_items(const DtypeSlice& slice, int threads, Fn fn) {
  return run_items<Result>(
      slice.total(), threads,
      [&](size_t i) {
        const UnitTimer timer(slice.shard.first_unit + static_cast<int64_t>(i / slice.per_dtype));
        return fn(i);
      },
      [&](size_t i) { return slice.owns(i); });
}

}  // namespace normcheck
