#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck::oracle {

namespace {

using Evaluator = CertifiedLayerNorm (*)(const LayerNormCase&, bool);

/// Tries the precisions in order until one certifies every output; returns the last otherwise.
CertifiedLayerNorm escalate(const LayerNormCase& c, bool with_vjp, std::initializer_list<Evaluator> levels) {
  CertifiedLayerNorm r;
  for (Evaluator level : levels) {
    r = level(c, with_vjp);
    if (r.certified) break;
  }
  return r;
}

}  // namespace

CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp) {
  return escalate(c, with_vjp, {evaluate_layernorm_mpfi50, evaluate_layernorm_mpfi150, evaluate_layernorm_mpfi400});
}

CertifiedRmsBlock certified_rms_block(const RmsBlockCase& c) {
  CertifiedRmsBlock r;
  for (auto level : {evaluate_rms_block_mpfi50, evaluate_rms_block_mpfi150, evaluate_rms_block_mpfi400}) {
    r = level(c);
    if (r.certified) break;
  }
  return r;
}

CertifiedLayerNorm certified_rmsnorm(const LayerNormCase& c, bool with_vjp) {
  return escalate(c, with_vjp, {evaluate_rmsnorm_mpfi50, evaluate_rmsnorm_mpfi150, evaluate_rmsnorm_mpfi400});
}

}  // namespace normcheck::oracle
