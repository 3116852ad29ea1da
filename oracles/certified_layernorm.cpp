#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck::oracle {

namespace {

using Evaluator = CertifiedLayerNorm (*)(const LayerNormCase&, bool);

}  // namespace

CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp) {
  return escalate_until_accepted<CertifiedLayerNorm>(
      {evaluate_layernorm_ball, evaluate_layernorm_mpfi50, evaluate_layernorm_mpfi150, evaluate_layernorm_mpfi400}, c, with_vjp);
}

CertifiedLayerNormJvp certified_layernorm_jvp(const LayerNormCase& c, const LayerNormTangents& t) {
  return escalate_until_accepted<CertifiedLayerNormJvp>(
      {evaluate_layernorm_jvp_ball, evaluate_layernorm_jvp_mpfi50, evaluate_layernorm_jvp_mpfi150, evaluate_layernorm_jvp_mpfi400}, c, t);
}

CertifiedRmsBlock certified_rms_block(const RmsBlockCase& c) {
  return escalate_until_accepted<CertifiedRmsBlock>(
      {evaluate_rms_block_mpfi50, evaluate_rms_block_mpfi150, evaluate_rms_block_mpfi400}, c);
}

CertifiedLayerNorm certified_rmsnorm(const LayerNormCase& c, bool with_vjp) {
  return escalate_until_accepted<CertifiedLayerNorm>(
      {evaluate_rmsnorm_ball, evaluate_rmsnorm_mpfi50, evaluate_rmsnorm_mpfi150, evaluate_rmsnorm_mpfi400}, c, with_vjp);
}

}  // namespace normcheck::oracle
