// The port-Hamiltonian oracle on MPFI with 50 decimal digits (one multiprecision type per TU), and
// the escalation 50 -> 150 digits.
#include "oracles/port_hamiltonian_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_PH_ORACLE(50)

namespace normcheck::oracle {

CertifiedPhStream certified_ph_stream(const PhCase& c) {
  CertifiedPhStream r = certified_ph_stream_mpfi50(c);
  return r.certified ? r : certified_ph_stream_mpfi150(c);
}

CertifiedPhBackward certified_ph_backward(const PhCase& c) {
  CertifiedPhBackward r = certified_ph_backward_mpfi50(c);
  return r.certified ? r : certified_ph_backward_mpfi150(c);
}

CertifiedMatrix certified_cayley(const PhStep& p, double h, DType dt) {
  CertifiedMatrix r = certified_cayley_mpfi50(p, h, dt);
  return r.certified ? r : certified_cayley_mpfi150(p, h, dt);
}

CertifiedMatrix certified_dissipation(const PhStep& p, DType dt) {
  CertifiedMatrix r = certified_dissipation_mpfi50(p, dt);
  return r.certified ? r : certified_dissipation_mpfi150(p, dt);
}

}  // namespace normcheck::oracle
