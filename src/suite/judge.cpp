#include "suite/judge.hpp"

#include <stdexcept>

#include "core/bounds.hpp"

namespace normcheck {
namespace {

OutputJudgement judge_tensor(const std::string& name, const std::vector<double>& got,
                             const std::vector<CertifiedValue>& ref, const std::vector<double>& bound,
                             DType dtype, double max_ratio) {
  if (got.size() != ref.size() || bound.size() != ref.size())
    throw std::runtime_error("output '" + name + "' has " + std::to_string(got.size()) +
                             " values, expected " + std::to_string(ref.size()));
  OutputJudgement j;
  j.output = name;
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref[i], dtype, bound[i] * max_ratio);
    const double before = j.acc.max_bound_ratio();
    j.acc.add(e, static_cast<int64_t>(i));
    if (e.bound_ratio > before) j.worst = {static_cast<int64_t>(i), got[i], ref[i], bound[i], e};
  }
  j.failed = j.acc.bound_violations() > 0;
  return j;
}

}  // namespace

const std::vector<std::string>& op_outputs(Op op) {
  static const std::vector<std::string> fwd = {"y"};
  static const std::vector<std::string> bwd = {"dx", "dgamma", "dbeta"};
  return op == Op::layernorm_forward ? fwd : bwd;
}

std::vector<OutputJudgement> judge_outputs(const KernelEntry& k, const LayerNormCase& c,
                                           const oracle::CertifiedLayerNorm& ref, const KernelOutputs& out) {
  const ToleranceEntry& t = tolerance_for(k);
  const BoundModel model = bound_model_for(t, k);
  std::vector<OutputJudgement> result;
  if (k.op == Op::layernorm_forward) {
    const auto bound = layernorm_forward_bound(c, ref, model);
    result.push_back(judge_tensor("y", out.y, ref.y, bound, c.dtype, t.max_ratio));
  } else {
    const BackwardBound b = layernorm_backward_bound(c, ref, model);
    result.push_back(judge_tensor("dx", out.dx, ref.dx, b.dx, c.dtype, t.max_ratio));
    result.push_back(judge_tensor("dgamma", out.dgamma, ref.dgamma, b.dgamma, c.dtype, t.max_ratio));
    result.push_back(judge_tensor("dbeta", out.dbeta, ref.dbeta, b.dbeta, c.dtype, t.max_ratio));
  }
  return result;
}

std::vector<OutputJudgement> judge_case(const KernelEntry& k, const LayerNormCase& c,
                                        const oracle::CertifiedLayerNorm& ref) {
  return judge_outputs(k, c, ref, k.run(c));
}

}  // namespace normcheck
