#pragma once
/// The work of a suite: items (dtype, generator index, case index) in dtype-major order, computed
/// from their index, and a parallel loop over them that stops early on stop_requested().
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "core/dtype.hpp"

namespace normcheck {

/// Set to true (e.g. by a signal handler) to stop after the cases in flight (runner.cpp).
std::atomic<bool>& stop_requested();

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

/// Runs fn(i) for i in [0, total) on `threads` threads; results by index, empty where a stop
/// request left an item undone.
template <class Result, class Fn>
std::vector<std::optional<Result>> run_items(size_t total, int threads, Fn fn) {
  std::vector<std::optional<Result>> done(total);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; !stop_requested() && (i = next++) < total;) done[i] = fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return done;
}

}  // namespace normcheck
