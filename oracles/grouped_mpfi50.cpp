// The grouped-normalization oracle on MPFI with 50 decimal digits (one multiprecision type per TU).
#include "oracles/grouped_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_GROUPED_ORACLE(50)

namespace normcheck::oracle {

CertifiedGroupedNorm certified_grouped_norm(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp) {
  CertifiedGroupedNorm r;
  for (auto level : {evaluate_grouped_mpfi50, evaluate_grouped_mpfi150, evaluate_grouped_mpfi400}) {
    r = level(c, l, with_vjp);
    if (r.certified) break;
  }
  return r;
}

}  // namespace normcheck::oracle
