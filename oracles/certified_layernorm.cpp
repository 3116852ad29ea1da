#include "oracles/certified_layernorm.hpp"

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

CertifiedLayerNorm certified_rmsnorm(const LayerNormCase& c, bool with_vjp) {
  return escalate(c, with_vjp, {evaluate_rmsnorm_mpfi50, evaluate_rmsnorm_mpfi150, evaluate_rmsnorm_mpfi400});
}

}  // namespace normcheck::oracle
