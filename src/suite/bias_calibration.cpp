#include "suite/bias_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "ops/op_kernels.hpp"
#include "core/rng.hpp"
#include "generators/generators.hpp"
#include "suite/judge.hpp"
#include "suite/work_items.hpp"

namespace normcheck {
namespace {

/// The sound built-in kernels of the suites' ops and the planted directed ones of the calibrated dtypes.
std::vector<const KernelEntry*> calibrated_kernels(const BiasCalibrationConfig& cfg) {
  std::vector<const KernelEntry*> out;
  const auto wanted = [&](const KernelEntry& k) {
    return std::find(cfg.dtypes.begin(), cfg.dtypes.end(), k.storage) != cfg.dtypes.end();
  };
  for (const KernelEntry& k : builtin_kernels())
    if (!k.known_weak && wanted(k) && op_spec(k.op).in_suites) out.push_back(&k);
  if (cfg.planted)
    for (const KernelEntry& k : planted_directed_kernels())
      if (wanted(k)) out.push_back(&k);
  return out;
}

/// The generators a calibration cycles through: every random row generator (not the corpus).
std::vector<std::string> calibration_generators() {
  std::vector<std::string> out;
  for (const std::string& g : gen::row_generator_names())
    if (g != gen::kCorpusGenerator) out.push_back(g);
  return out;
}

/// The statistic of every (kernel, output) on one record's cases, by row of the result.
using RecordStats = std::vector<std::pair<size_t, BiasAccumulator>>;

}  // namespace

BiasCalibrationResult run_bias_calibration(const BiasCalibrationConfig& cfg,
                                           const std::function<void(int64_t, int64_t)>& progress) {
  const auto kernels = calibrated_kernels(cfg);
  const auto generators = calibration_generators();
  BiasCalibrationResult result;
  std::map<std::tuple<const KernelEntry*, std::string>, size_t> index;
  for (const KernelEntry* k : kernels)
    for (const std::string& output : op_outputs(k->op)) {
      index[{k, output}] = result.rows.size();
      result.rows.push_back({k->variant, k->kernel == "planted", k->op, output, k->storage});
    }
  std::vector<BiasAccumulator> aggregate(result.rows.size());
  const int64_t records_per_dtype = std::max<int64_t>(1, cfg.cases / cfg.record_cases);
  const int64_t total = records_per_dtype * static_cast<int64_t>(cfg.dtypes.size());
  std::mutex mu;
  const auto run_record = [&](size_t r) {
    const DType dt = cfg.dtypes[r / static_cast<size_t>(records_per_dtype)];
    const std::string& generator = generators[r % generators.size()];
    gen::ShapeRequest shape;
    shape.max_elements = cfg.max_elements;
    std::map<size_t, BiasAccumulator> stats;
    for (int64_t k = 0; k < cfg.record_cases; ++k) {
      const LayerNormCase c = gen::make_layernorm_case(generator, dt, derive_seed(cfg.seed, static_cast<uint64_t>(dt), r, k), shape);
      for (int f = 0; f < kOpFamilies; ++f) {
        if (std::none_of(kernels.begin(), kernels.end(), [&](const KernelEntry* k) { return k->storage == dt && op_family_index(k->op) == f; }))
          continue;  // no calibrated kernel of the family: no oracle
        const auto ref = certified_reference(op_of(family_at(f), OpDirection::forward), c, true);
        for (const KernelEntry* kernel : kernels)
          if (kernel->storage == dt && op_family_index(kernel->op) == f)
            for (const OutputJudgement& j : judge_case(*kernel, c, ref)) stats[index.at({kernel, j.output})].merge(j.bias);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [row, bias] : stats) {
      BiasCalibrationRow& out = result.rows[row];
      if (bias.elements() == 0) continue;
      const double z = std::fabs(bias.z());
      ++out.tests;
      out.above_4 += z > 4 ? 1 : 0;
      out.flagged += bias.flagged() ? 1 : 0;
      out.max_abs_z = std::max(out.max_abs_z, z);
      aggregate[row].merge(bias);
    }
    result.cases_done += cfg.record_cases;
    if (progress) progress(result.cases_done, total * cfg.record_cases);
    return 0;
  };
  run_items<int>(static_cast<size_t>(total), cfg.threads, run_record, [](size_t) { return true; });
  for (size_t r = 0; r < result.rows.size(); ++r) result.rows[r].aggregate_z = aggregate[r].z();
  return result;
}

}  // namespace normcheck
