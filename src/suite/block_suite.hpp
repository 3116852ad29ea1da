#pragma once
/// The Linear o RMSNorm block suite: every block variant (composed, deferred and the planted
/// defect) judged on the same cases against the certified block oracle and the block bounds
/// (docs/bounds.md section 11), with the composed-vs-deferred comparison per dtype.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/rmsnorm_case.hpp"
#include "kernels/block_registry.hpp"
#include "suite/runner.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

struct BlockSuiteConfig {
  std::vector<DType> dtypes;
  std::vector<std::string> generators;  ///< block generators (generators/block_generators.hpp)
  std::vector<std::string> variants;    ///< empty: all
  int cases_per_generator = 4;
  uint64_t seed = 20261130;
  int threads = 1;
  std::string journal_path;  ///< failing cases are appended here as JSON lines (empty: none)
  ShardSpec shard;  ///< the slice this run does (one unit per dtype and block generator)
  bool builtin = true;                          ///< judge the built-in block kernels
  std::vector<BlockKernelEntry> extra_kernels;  ///< external block kernels (serve mode)
  bool external_report_only = false;            ///< their records are report_only
};

struct BlockWorst {
  int64_t case_index = -1;
  uint64_t case_seed = 0;
  int64_t rows = 0, n = 0, m = 0;
  uint64_t digest = 0;
  WorstElement element;
  double cancellation = 0;  ///< deferred-term cancellation factor at the element (dx only, else 0)
};

/// One (variant, dtype, generator, output) over all its cases.
struct BlockRecord {
  std::string kernel = "builtin";
  std::string variant;
  DType storage, accum;
  std::string generator, output, bound_id;
  Expectation expectation = Expectation::must_pass;
  bool known_weak = false;
  int64_t cases = 0, failed_cases = 0, uncertified_cases = 0;
  int64_t kernel_failures = 0;  ///< external kernels: calls that crashed, hung or errored
  std::string first_kernel_failure;
  ErrorAccumulator acc;
  double oracle_max_err_ulps = 0;
  int oracle_precision_bits = 0;
  std::map<int, int64_t> oracle_levels;  ///< cases per precision (bits) of the cascade level that certified them
  BlockWorst worst;
  std::vector<CasePoint> points;  ///< per case, in case order (n = the normalized width)
  bool failed() const { return failed_cases > 0; }
};

struct BlockSuiteResult {
  std::vector<BlockRecord> records;
  std::vector<FlagCheck> flag_checks;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
};

/// Composed vs deferred: one (dtype, variant, output) merged over the generators.
struct BlockComparisonRow {
  DType dtype;
  std::string variant, output;
  ErrorAccumulator acc;
  double cancellation_at_worst = 0;
};

uint64_t block_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index);

/// Throws std::invalid_argument for unknown generators or variants.
void validate_block_config(const BlockSuiteConfig& cfg);

/// Judges every selected variant of the config's dtypes on every case; stops early (interrupted)
/// when stop_requested() is set.
BlockSuiteResult run_block_suite(const BlockSuiteConfig& cfg);

/// Runs variant `k` on case `c` and judges its outputs (block_outputs() order).
std::vector<OutputJudgement> judge_block_case(const BlockKernelEntry& k, const RmsBlockCase& c,
                                              const oracle::CertifiedRmsBlock& ref);

std::vector<BlockComparisonRow> block_comparison(const BlockSuiteResult& r);

/// Every must_pass record passed, every applicable flag caught, nothing interrupted.
bool block_suite_passed(const BlockSuiteResult& r);

/// Every must_pass record passed (flags and completeness aside: what shards merge by AND).
bool block_records_passed(const BlockSuiteResult& r);


/// Cases the config's shard plans.
int64_t planned_cases(const BlockSuiteConfig& cfg);

}  // namespace normcheck
