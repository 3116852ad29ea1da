// The double-double ball level of the LayerNorm, RMSNorm and LayerNorm-JVP oracles: the textbook
// templates of oracles/layernorm.hpp and oracles/rmsnorm.hpp on oracles/dd_ball.hpp's DdBall, the
// second level of the precision cascade (oracles/certified_layernorm.cpp). No multiprecision type is
// instantiated here (the MPFI header is parsed for the shared implementation header's aliases only).
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {

namespace {
constexpr int kDdBallBits = 106;  ///< the midpoint's precision (two doubles), reported as the level's precision
}

CertifiedLayerNorm evaluate_layernorm_dd_ball(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate<DdBall>(c, with_vjp, kDdBallBits);
}

CertifiedLayerNorm evaluate_rmsnorm_dd_ball(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate_rms<DdBall>(c, with_vjp, kDdBallBits);
}

CertifiedLayerNormJvp evaluate_layernorm_jvp_dd_ball(const LayerNormCase& c, const LayerNormTangents& t) {
  return detail::evaluate_jvp<DdBall>(c, t, kDdBallBits);
}

}  // namespace normcheck::oracle
