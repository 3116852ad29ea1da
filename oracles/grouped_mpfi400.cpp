// The grouped-normalization oracle on MPFI with 400 decimal digits (one multiprecision type per TU).
#include "oracles/grouped_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_GROUPED_ORACLE(400)
