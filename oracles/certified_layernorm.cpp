#include "oracles/certified_layernorm.hpp"

namespace normcheck::oracle {

CertifiedLayerNorm certified_layernorm(const LayerNormCase& c, bool with_vjp) {
  CertifiedLayerNorm low = evaluate_layernorm_mpfi50(c, with_vjp);
  if (low.certified) return low;
  CertifiedLayerNorm mid = evaluate_layernorm_mpfi150(c, with_vjp);
  if (mid.certified) return mid;
  return evaluate_layernorm_mpfi400(c, with_vjp);
}

}  // namespace normcheck::oracle
