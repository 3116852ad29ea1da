#pragma once
/// The JVP suites (LayerNorm, RMSNorm): every JVP kernel of the op (the sound kernel and a planted
/// one, or one external kernel) x dtype x row generator, judged against the certified JVP with
/// LN-JVP-TWOPASS-SEQ or RMS-JVP-SEQ (docs/bounds.md sections 17, 17.1).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bounds/bounds.hpp"
#include "core/layernorm_case.hpp"
#include "oracles/certified_layernorm.hpp"
#include "suite/judge.hpp"
#include "suite/work_items.hpp"

namespace normcheck {

/// What a JVP kernel returns: du, or why it has none.
struct JvpOutputs {
  std::vector<double> du;
  std::string failure;   ///< an external kernel crashed, hung or errored
  bool skipped = false;  ///< an external kernel declined the call
};
using JvpKernel = std::function<JvpOutputs(const LayerNormCase&, const LayerNormTangents&)>;

struct JvpExternalKernel {
  std::string name;  ///< "plugin:<name>" or "serve:<name>"
  JvpKernel run;
  bool report_only = false;
};

struct JvpSuiteConfig {
  std::string op = "layernorm_jvp";  ///< "layernorm_jvp" or "rmsnorm_jvp" (jvp_op_info)
  std::vector<DType> dtypes;
  std::vector<std::string> generators;  ///< gen::jvp_generator_names() unless narrowed
  int cases_per_generator = 4;
  int64_t max_elements = 4096;  ///< rows*n cap of the cases
  uint64_t seed = 20261130;
  int threads = 1;
  ShardSpec shard;  ///< the slice of the dtypes this run does (one unit per dtype)
  std::optional<JvpExternalKernel> external;  ///< judged instead of the built-in kernels
};

struct JvpWorst {
  int64_t case_index = -1;
  uint64_t case_seed = 0;
  int64_t rows = 0, n = 0;
  WorstElement element;
};

/// One (dtype, generator, kernel) over its cases.
struct JvpRecord {
  DType storage, accum;
  std::string generator, kernel;
  bool known_weak = false;
  int64_t cases = 0, failed_cases = 0, uncertified_cases = 0, kernel_failures = 0;
  std::string first_kernel_failure;
  ErrorAccumulator acc;
  int oracle_precision_bits = 0;
  std::map<int, int64_t> oracle_levels;  ///< cases per precision (bits) of the cascade level that certified them
  double oracle_max_err_ulps = 0;
  JvpWorst worst;
  bool failed() const { return failed_cases > 0; }
};

struct JvpSuiteResult {
  std::vector<JvpRecord> records;
  int64_t cases_done = 0, cases_planned = 0;
  bool interrupted = false;
};

uint64_t jvp_case_seed(uint64_t run_seed, DType dt, size_t generator_index, int64_t case_index);

/// The judgement of one case for one kernel (du against the certified JVP with the bound).
struct JvpJudgement {
  OutputJudgement du;
  int precision_bits = 0;
  double oracle_max_err_ulps = 0;
  bool certified = false;
  bool skipped = false;
};
/// What differs between the JVP ops: the record's op and bound names, the oracle, the bound.
struct JvpOpInfo {
  std::string_view op, bound_name;
  std::string_view replay_option;  ///< `normcheck replay --<option> I`
  std::string_view abi_op;         ///< the plugin ABI v2 op (docs/plugins.md)
  const char* summary_title;       ///< the terminal summary's heading
  oracle::CertifiedLayerNormJvp (*oracle)(const LayerNormCase&, const LayerNormTangents&);
  TensorBound (*bound)(const LayerNormCase&, const LayerNormTangents&, const oracle::CertifiedLayerNormJvp&, DType);
};
/// The op's entry; throws std::invalid_argument for another name.
const JvpOpInfo& jvp_op_info(std::string_view op);

/// Judges every kernel of `kernels` on one case of `op` (the oracle and the bound evaluated once).
std::vector<JvpJudgement> judge_jvp(std::string_view op, const LayerNormCase& c, const LayerNormTangents& t,
                                    const std::vector<JvpKernel>& kernels);

JvpSuiteResult run_jvp_suite(const JvpSuiteConfig& cfg);
/// Every must-pass record holds and every known-weak record is flagged somewhere in its dtype.
bool jvp_suite_passed(const JvpSuiteResult& r, bool report_only = false);
int64_t planned_cases(const JvpSuiteConfig& cfg);

}  // namespace normcheck
