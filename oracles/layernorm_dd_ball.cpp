// The double-double ball level of the LayerNorm, RMSNorm, JVP, block, grouped-norm and contraction oracles: the textbook
// templates of oracles/layernorm.hpp, rmsnorm.hpp, grouped_norm.hpp and affine_ln_affine.hpp on oracles/dd_ball.hpp's DdBall (106-bit
// midpoints), the second level of the precision cascade (oracles/certified_layernorm.cpp). No
// multiprecision type is instantiated here (the MPFI header is parsed for the shared implementation
// header's aliases only).
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/contraction_certify_impl.hpp"
#include "oracles/grouped_certify_impl.hpp"
#include "oracles/layernorm_certify_impl.hpp"

NORMCHECK_DEFINE_BALL_LAYERNORM_ORACLE(dd_ball, DdBall, 106)
NORMCHECK_DEFINE_BALL_GROUPED_ORACLE(dd_ball, DdBall, 106)
NORMCHECK_DEFINE_BALL_CONTRACTION_ORACLE(dd_ball, DdBall, 106)
