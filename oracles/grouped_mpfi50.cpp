// The grouped-normalization oracle on MPFI with 50 decimal digits (one multiprecision type per TU).
#include "oracles/grouped_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_GROUPED_ORACLE(50)

namespace normcheck::oracle {

CertifiedGroupedNorm certified_grouped_norm(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp) {
  return escalate_from_level<CertifiedGroupedNorm>(first_cascade_level(c.dtype),
      {evaluate_grouped_ball, evaluate_grouped_dd_ball, evaluate_grouped_mpfi50, evaluate_grouped_mpfi150, evaluate_grouped_mpfi400}, c, l,
      with_vjp);
}

}  // namespace normcheck::oracle
