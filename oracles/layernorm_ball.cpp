// The double-ball level of the LayerNorm, RMSNorm and LayerNorm-JVP oracles: the textbook templates
// of oracles/layernorm.hpp and oracles/rmsnorm.hpp on oracles/ball.hpp's Ball, the first level of
// the precision cascade (oracles/certified_layernorm.cpp). No multiprecision type is instantiated
// here (the MPFI header is parsed for the shared implementation header's aliases only).
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {

namespace {
constexpr int kBallBits = 53;  ///< the ball's midpoint precision, reported as the level's precision
}

CertifiedLayerNorm evaluate_layernorm_ball(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate<Ball>(c, with_vjp, kBallBits);
}

CertifiedLayerNorm evaluate_rmsnorm_ball(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate_rms<Ball>(c, with_vjp, kBallBits);
}

CertifiedLayerNormJvp evaluate_layernorm_jvp_ball(const LayerNormCase& c, const LayerNormTangents& t) {
  return detail::evaluate_jvp<Ball>(c, t, kBallBits);
}

}  // namespace normcheck::oracle
