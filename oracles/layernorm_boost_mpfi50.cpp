// One multiprecision scalar per TU: the LayerNorm oracle on Boost's 50-digit MPFI type, the lean
// type's reference (oracles/boost_mpfi_reference.hpp).
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/boost_mpfi_reference.hpp"
#include "oracles/layernorm_certify_impl.hpp"

NORMCHECK_DEFINE_INTERVAL_LAYERNORM_ORACLE(boost_mpfi50, detail::MpfiInterval<50>, false)
