// The contraction oracle on MPFI with 400 decimal digits (one multiprecision type per TU).
#include "oracles/contraction_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_CONTRACTION_ORACLE(400)
