#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "core/bias.hpp"
#include "suite/bias_calibration.hpp"

namespace normcheck::cli {

int bias_command(const BiasOptions& o) {
  BiasCalibrationConfig cfg;
  try {
    cfg.dtypes = parse_names<DType>(o.dtypes, parse_dtype, "dtype", dtype_names());
    for (DType d : cfg.dtypes)
      if (d != DType::f32 && d != DType::f64)
        throw std::invalid_argument("the bias statistic judges f32 and f64 outputs only (docs/bounds.md section 16.2)");
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  cfg.cases = o.cases;
  cfg.record_cases = o.record_cases;
  cfg.max_elements = o.max_elements;
  cfg.seed = o.seed;
  cfg.threads = o.threads;
  cfg.planted = !o.sound_only;
  // A progress line every 30 s of a long calibration (CI logs), with the time left at this pace
  // (the callback is called under the calibration's lock: one thread at a time).
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  const BiasCalibrationResult r = run_bias_calibration(cfg, [&](int64_t done, int64_t planned) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(30)) return;
    last = now;
    const double s = std::chrono::duration<double>(now - start).count();
    std::fprintf(stderr, "bias calibration: %lld of %lld cases, %.0f s elapsed, ~%.0f s left\n", static_cast<long long>(done),
                 static_cast<long long>(planned), s, done > 0 ? s * static_cast<double>(planned - done) / static_cast<double>(done) : 0.0);
  });
  std::printf("bias calibration: %lld cases (%lld per dtype, rows*n <= %lld, seed %llu); one test per record of %lld cases\n"
              "of one generator and per output, threshold |z| > %.4f (false-alarm probability 1e-9 per test under the\n"
              "model of docs/bounds.md section 16)\n",
              static_cast<long long>(r.cases_done), static_cast<long long>(cfg.cases), static_cast<long long>(cfg.max_elements),
              static_cast<unsigned long long>(cfg.seed), static_cast<long long>(cfg.record_cases), kBiasThreshold);
  std::printf("%s\n", fmt::format("{:<16} {:<7} {:<19} {:<6} {:<5} {:>9} {:>8} {:>9} {:>9} {:>11}", "kernel", "kind", "op", "output",
                                  "dtype", "records", "|z|>4", "flagged", "max |z|", "all cases z").c_str());
  int64_t false_alarms = 0, planted_missed = 0;
  for (const BiasCalibrationRow& row : r.rows) {
    std::printf("%s\n", fmt::format("{:<16} {:<7} {:<19} {:<6} {:<5} {:>9} {:>8} {:>9} {:>9.3f} {:>11.3f}", row.variant,
                                    row.planted ? "planted" : "sound", op_name(row.op), row.output, dtype_info(row.dtype).name,
                                    row.tests, row.above_4, row.flagged, row.max_abs_z, row.aggregate_z)
                            .c_str());
    if (!row.planted) false_alarms += row.flagged;
    if (row.planted && row.tests > 0 && std::fabs(row.aggregate_z) <= kBiasThreshold) ++planted_missed;  // dgamma: not tested
  }
  std::printf("false alarms on sound kernels: %lld; planted (kernel, output) pairs not flagged over all cases: %lld\n",
              static_cast<long long>(false_alarms), static_cast<long long>(planted_missed));
  return false_alarms == 0 && (o.sound_only || planted_missed == 0) ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
