#pragma once
/// The QR-contraction suite: for every dtype, contraction generator (the seed's test categories)
/// and case, the converter under test (float64 QR, storage in the dtype) is judged against the
/// certified original block with the contraction bound, and the original block's own kernel in
/// the same dtype is measured on the same inputs (report only).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/contraction_case.hpp"
#include "suite/contraction_judge.hpp"
#include "suite/runner.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

/// An external contracted-block kernel (ABI v2 plugin or serve) judged instead of the built-in one.
struct ContractionExternalKernel {
  std::string name;  ///< "plugin:<name>" or "serve:<name>"
  ContractedKernel run;
  bool report_only = false;
};

struct ContractionSuiteConfig {
  std::vector<DType> dtypes;
  std::vector<std::string> generators;  ///< generators/contraction_generators.hpp
  int cases_per_generator = 4;
  uint64_t seed = 20261130;
  int threads = 1;
  std::string journal_path;  ///< failing cases appended as JSON lines (empty: none)
  ShardSpec shard;  ///< the slice this run does (one unit per dtype and seed category)
  std::optional<ContractionExternalKernel> external;  ///< judged instead of the built-in contracted kernel
};

struct ContractionWorst {
  int64_t case_index = -1;
  uint64_t case_seed = 0;
  int64_t d = 0, n = 0, m = 0, rows = 0;
  WorstElement element;
};

/// One (dtype, generator, form, output): form "contracted" (judged) or "original" (measured).
struct ContractionRecord {
  DType storage, accum;
  std::string generator, form, output, bound_id;
  Expectation expectation = Expectation::must_pass;
  int64_t cases = 0, failed_cases = 0, rejected_cases = 0, uncertified_cases = 0;
  int64_t kernel_failures = 0;  ///< external kernels: calls that crashed, hung or errored
  std::string first_kernel_failure;
  ErrorAccumulator acc;
  double oracle_max_err_ulps = 0;
  int oracle_precision_bits = 0;
  double max_coefficient_rel_D = 0, max_coefficient_rel_G = 0;  ///< certified, contracted records only
  ContractionWorst worst;
  bool failed() const { return failed_cases > 0; }
};

struct ContractionSuiteResult {
  std::vector<ContractionRecord> records;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
};

uint64_t contraction_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index);

/// Throws std::invalid_argument for unknown generators.
void validate_contraction_config(const ContractionSuiteConfig& cfg);

ContractionSuiteResult run_contraction_suite(const ContractionSuiteConfig& cfg);

/// Every must-pass (contracted) record passed and nothing was interrupted.
bool contraction_suite_passed(const ContractionSuiteResult& r, bool report_only = false);

/// Cases the config's shard plans.
int64_t planned_cases(const ContractionSuiteConfig& cfg);

}  // namespace normcheck
