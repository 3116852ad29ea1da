#pragma once
/// The grouped-normalization suite: batch norm (training statistics, running-statistic update,
/// inference mode), group norm, instance norm, layer norm and RMSNorm over trailing axes and
/// channel layer norm on NCHW, NHWC and sequence tensors in every dtype, judged against the certified grouped oracle with the grouped bounds.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/grouped_norm_case.hpp"
#include "suite/grouped_judge.hpp"
#include "suite/judge.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

/// An external grouped-norm kernel (serve mode) judged instead of the built-in one.
struct GroupedExternalKernel {
  std::string name;  ///< "serve:<name>"
  std::function<GroupedOutputs(const GroupedNormCase&)> run;
  bool report_only = false;
};

struct GroupedSuiteConfig {
  std::vector<DType> dtypes;
  int cases_per_layout = 8;  ///< per (kind, layout, dtype)
  uint64_t seed = 20261130;
  int threads = 1;
  ShardSpec shard;  ///< the slice of the dtypes this run does (one unit per dtype)
  std::optional<GroupedExternalKernel> external;  ///< judged instead of the built-in kernel
};

/// One (dtype, kind, output) over every layout and case.
struct GroupedRecord {
  DType storage;
  audit::NormKind kind;
  std::string output;
  int64_t cases = 0, failed_cases = 0, uncertified_cases = 0;
  int64_t kernel_failures = 0;        ///< external kernels: calls that crashed, hung or errored
  std::string first_kernel_failure;
  ErrorAccumulator acc;
  int oracle_precision_bits = 0;
  uint64_t worst_seed = 0;
  audit::TensorSpec worst_tensor;
  WorstElement worst;
  bool failed() const { return failed_cases > 0; }
};

struct GroupedSuiteResult {
  std::vector<GroupedRecord> records;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
};

uint64_t grouped_case_seed(uint64_t run_seed, DType dt, int kind, int layout, int64_t index);

GroupedSuiteResult run_grouped_suite(const GroupedSuiteConfig& cfg);
/// Every record holds (report-only external kernels: their failures do not count) and no case was lost.
bool grouped_suite_passed(const GroupedSuiteResult& r, bool report_only = false);

/// The kinds and layouts the suite runs, in seed order.
const std::vector<audit::NormKind>& grouped_suite_kinds();
const std::vector<audit::Layout>& grouped_suite_layouts();

/// Cases the config's shard plans.
int64_t planned_cases(const GroupedSuiteConfig& cfg);

}  // namespace normcheck
