// The contraction oracle on MPFI with 50 decimal digits (one multiprecision type per TU).
#include "oracles/contraction_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_CONTRACTION_ORACLE(50)

namespace normcheck::oracle {

CoefficientError coefficient_error(const AffineLnAffine& blk, const StoredContraction& s) {
  return detail::coefficient_error<detail::MpfiInterval<50>>(blk, s);
}

CertifiedAffineLn certified_affine_ln(const ContractionCase& c, bool with_vjp) {
  return escalate_from_level<CertifiedAffineLn>(first_cascade_level(c.dtype),
      {evaluate_affine_ln_ball, evaluate_affine_ln_dd_ball, evaluate_affine_ln_mpfi50, evaluate_affine_ln_mpfi150, evaluate_affine_ln_mpfi400}, c,
      with_vjp);
}

}  // namespace normcheck::oracle
