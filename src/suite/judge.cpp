#include "suite/judge.hpp"

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "bounds/bounds.hpp"
#include "core/rng.hpp"
#include "ops/family_math.hpp"

namespace normcheck {

/// Per-output bounds for an op under one bound model, in op_outputs order.
std::vector<TensorBound> bounds_for(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
                                    const BoundModel& m) {
  std::vector<TensorBound> out = family_math(op_family(op)).bounds(op, c, ref, m);
  if (out.size() != op_spec(op).outputs.size())
    throw std::logic_error("bounds_for: " + std::string(op_name(op)) + "'s bounds do not match its outputs");
  return out;
}

const std::vector<CertifiedValue>& reference_of(const oracle::CertifiedLayerNorm& ref, const std::string& output) {
  if (output == "y") return ref.y;
  if (output == "dx") return ref.dx;
  if (output == "dgamma") return ref.dgamma;
  if (output == "dbeta") return ref.dbeta;
  throw std::invalid_argument("the per-op oracle has no output '" + output + "'");
}

namespace {

/// Names the pair (kernel value, correctly rounded reference) of an element for the bias
/// statistic's clusters: equal pairs, equal keys (the raw bits of a double identify a dtype value as
/// its encoding does). Two SplitMix64 rounds, so distinct pairs share a key with probability about
/// 2^-64; 0 is reserved for "left out".
uint64_t value_pair_key(double got, double rounded) {
  uint64_t a, b;
  std::memcpy(&a, &got, sizeof a);
  std::memcpy(&b, &rounded, sizeof b);
  uint64_t state = a;
  state = splitmix64(state) ^ b;
  const uint64_t key = splitmix64(state);
  return key == 0 ? 1 : key;
}

/// Measures the outputs again against the looser contract's bound (and its envelope), as the verdict bound is measured.
void judge_looser(OutputJudgement& j, const std::vector<double>& got, const std::vector<CertifiedValue>& ref, const TensorBound& b,
                  DType dtype, double max_ratio) {
  j.has_looser = true;
  for (size_t i = 0; i < got.size(); ++i) {
    ElementError e = measure_element(got[i], ref[i], dtype, b.bound[i] * max_ratio, b.envelope(i));
    e.regime = b.regime[i];
    j.looser.add(e, static_cast<int64_t>(i));
  }
  j.looser_failed = j.looser.bound_violations() > 0;
}

}  // namespace

OutputJudgement judge_tensor(const std::string& name, const std::vector<double>& got,
                             const std::vector<CertifiedValue>& ref, const TensorBound& verdict,
                             const TensorBound* own, DType dtype, double max_ratio, BiasInputs* bias) {
  if (got.size() != ref.size())
    throw std::runtime_error("output '" + name + "' has " + std::to_string(got.size()) + " values, expected " +
                             std::to_string(ref.size()));
  OutputJudgement j;
  j.output = name;
  if (bias) {
    bias->rho.assign(got.size(), 0.0);
    bias->s.assign(got.size(), 0.0);
    bias->cluster.assign(got.size(), 0);
  }
  const FloatFormat& fmt = *dtype_info(dtype).format;
  for (size_t i = 0; i < got.size(); ++i) {
    ElementError e = measure_element(got[i], ref[i], dtype, verdict.bound[i] * max_ratio, verdict.envelope(i));
    e.regime = verdict.regime[i];
    j.acc.add(e, static_cast<int64_t>(i));
    if (bias && !e.bound_void && !e.unjudged() && e.kernel_finite && !e.rounding_undecided && ref[i].hi != 0) {
      bias->rho[i] = e.signed_ratio;
      bias->s[i] = std::copysign(ulp_at(std::fabs(ref[i].approx()), fmt) / (verdict.bound[i] * max_ratio), ref[i].hi);
      bias->cluster[i] = value_pair_key(got[i], ref[i].rounded);
    }
    if (own) {
      ElementError o = measure_element(got[i], ref[i], dtype, own->bound[i] * max_ratio, {}, Judging::rigor);
      o.regime = own->regime[i];
      j.own.add(o, static_cast<int64_t>(i));
    }
  }
  if (const int64_t w = j.acc.worst_index(); w >= 0) {  // the accumulator's worst, with its values
    const auto k = static_cast<size_t>(w);
    ElementError e = measure_element(got[k], ref[k], dtype, verdict.bound[k] * max_ratio, verdict.envelope(k));
    e.regime = verdict.regime[k];
    j.worst = {w, got[k], ref[k], verdict.bound[k], e};
  }
  if (!own) j.own = j.acc;  // the kernel's own bound is the verdict bound
  j.failed = j.acc.bound_violations() > 0;
  j.own_failed = j.own.rigor_violations() > 0;
  return j;
}

oracle::CertifiedLayerNorm certified_reference(Op op, const LayerNormCase& c, bool with_vjp) {
  return family_math(op_family(op)).reference(c, with_vjp);
}

const std::vector<std::string>& op_outputs(Op op) { return op_spec(op).output_names; }

std::vector<OutputJudgement> judge_outputs(const KernelEntry& k, const LayerNormCase& c,
                                           const oracle::CertifiedLayerNorm& ref, const KernelOutputs& out) {
  if (out.skipped) {
    std::vector<OutputJudgement> declined(op_outputs(k.op).size());
    for (size_t o = 0; o < declined.size(); ++o) {
      declined[o].output = op_outputs(k.op)[o];
      declined[o].declined = true;
    }
    return declined;
  }
  if (!out.failure.empty()) {
    std::vector<OutputJudgement> failed;
    for (const std::string& name : op_outputs(k.op)) {
      OutputJudgement j;
      j.output = name;
      j.failed = true;
      j.kernel_failure = out.failure;
      failed.push_back(std::move(j));
    }
    return failed;
  }
  const ToleranceEntry& t = tolerance_for(k);
  const BoundModel verdict_model = verdict_bound_model(t, k);
  const std::vector<TensorBound> verdict = bounds_for(k.op, c, ref, verdict_model);
  // The bias statistic where the output dtype is the contract's accumulator (f32, f64): there the
  // last rounding is one of many and the errors spread over ULPs. In f16/bf16 the store rounding of a
  // nearly exact value dominates and repeats the inputs' grid (section 16.2).
  const bool with_bias = verdict_model.accum == verdict_model.storage && family_spec(op_family(k.op)).bias_test;
  std::vector<TensorBound> own;
  if (t.judged_by_contract) own = bounds_for(k.op, c, ref, own_bound_model(t, k));
  const std::optional<BoundModel> looser_model = looser_contract_model(k);
  const std::vector<TensorBound> looser = looser_model ? bounds_for(k.op, c, ref, *looser_model) : std::vector<TensorBound>{};
  std::vector<OutputJudgement> result;
  const auto& names = op_outputs(k.op);
  BiasInputs bias;
  for (size_t o = 0; o < names.size(); ++o) {
    const std::vector<double>& got = output_of(out, names[o]);
    const std::vector<CertifiedValue>& want = reference_of(ref, names[o]);
    result.push_back(judge_tensor(names[o], got, want, verdict[o], own.empty() ? nullptr : &own[o], c.dtype, t.max_ratio,
                                  with_bias ? &bias : nullptr));
    if (with_bias) add_bias_groups(k.op, names[o], c, ref, verdict[o], bias, result.back().bias);
    if (!looser.empty()) judge_looser(result.back(), got, want, looser[o], c.dtype, t.max_ratio);
  }
  return result;
}

std::vector<OutputJudgement> judge_case(const KernelEntry& k, const LayerNormCase& c,
                                        const oracle::CertifiedLayerNorm& ref) {
  return judge_outputs(k, c, ref, k.run(c));
}

}  // namespace normcheck
