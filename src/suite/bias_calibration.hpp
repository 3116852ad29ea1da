#pragma once
/// The calibration of the bias statistic (docs/bounds.md section 16.4): many random cases through
/// every sound built-in kernel (the false alarms: must be none) and through the planted directed-
/// rounding kernels (the detections). Cases are grouped like a suite's records: `record_cases`
/// consecutive cases of one generator make one test per kernel and output.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/registry.hpp"

namespace normcheck {

struct BiasCalibrationConfig {
  std::vector<DType> dtypes = {DType::f32, DType::f64};
  int64_t cases = 1000;           ///< per dtype; generators taken in turn, record by record
  int64_t record_cases = 10;      ///< cases per record (one test), as in the default suite
  int64_t max_elements = 1024;    ///< rows * n cap of the generated cases
  uint64_t seed = 20261201;
  int threads = 1;
  bool planted = true;            ///< also run the planted directed-rounding kernels (detections)
};

/// One (kernel, op, output, dtype): per-record tests, how many exceeded |z| 4 and the threshold, the
/// largest |z|, and the statistic over all its cases together.
struct BiasCalibrationRow {
  std::string variant;
  bool planted = false;
  Op op = Op::layernorm_forward;
  std::string output;
  DType dtype = DType::f32;
  int64_t tests = 0, above_4 = 0, flagged = 0;
  double max_abs_z = 0, aggregate_z = 0;
};

struct BiasCalibrationResult {
  std::vector<BiasCalibrationRow> rows;
  int64_t cases_done = 0;
};

/// Runs the calibration; `progress(done, planned)` after each record's cases, one call at a time
/// (under the calibration's lock; may be empty).
BiasCalibrationResult run_bias_calibration(const BiasCalibrationConfig& cfg,
                                           const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace normcheck
