#pragma once
/// Judges the grouped normalization kernels (batch norm training and inference with the
/// running-statistic update, group norm, instance norm, layer norm and RMSNorm over trailing axes,
/// channel layer norm) on one case against the certified
/// grouped oracle with the grouped bounds.
#include <string>
#include <vector>

#include "core/grouped_norm_case.hpp"
#include "oracles/certified_grouped_norm.hpp"
#include "suite/judge.hpp"

namespace normcheck {

/// Group and channel of every entry, in the oracle's terms.
oracle::GroupedNormLayout grouped_layout(const GroupedNormCase& c);

/// Kernel outputs by name: y, dx, dgamma, dbeta (not for RMSNorm), and for batch norm running_mean, running_var,
/// y_inference; as exact doubles of storage values. `unbiased_running_var = false` plants the
/// common defect of updating the running variance with the biased batch variance.
struct GroupedOutputs {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  std::string failure;   ///< an external kernel crashed, hung or errored (no values)
  bool skipped = false;  ///< an external kernel declined the call: not judged
};

/// The outputs a grouped kernel must produce for the case's kind (batch norm adds the running
/// statistics and the inference output).
std::vector<std::string> grouped_output_names(const GroupedNormCase& c);
GroupedOutputs run_grouped_kernel(const GroupedNormCase& c, bool unbiased_running_var = true);

struct GroupedJudgement {
  oracle::CertifiedGroupedNorm reference;
  std::vector<OutputJudgement> outputs;
};

GroupedJudgement judge_grouped(const GroupedNormCase& c, const GroupedOutputs& got);

}  // namespace normcheck
