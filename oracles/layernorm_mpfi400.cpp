// One multiprecision scalar per TU: the 400-digit MPFI instantiation of the LayerNorm oracle.
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/layernorm_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_LAYERNORM_ORACLE(400)
