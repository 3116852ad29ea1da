// One multiprecision scalar per TU: the grouped-norm oracle on Boost's 50-digit MPFI type, the lean
// type's reference (oracles/boost_mpfi_reference.hpp).
#include "oracles/boost_mpfi_reference.hpp"
#include "oracles/grouped_certify_impl.hpp"

NORMCHECK_DEFINE_INTERVAL_GROUPED_ORACLE(boost_mpfi50, detail::MpfiInterval<50>)
