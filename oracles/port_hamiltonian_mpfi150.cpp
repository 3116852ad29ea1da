// The port-Hamiltonian oracle on MPFI with 150 decimal digits (one multiprecision type per TU).
#include "oracles/port_hamiltonian_certify_impl.hpp"

NORMCHECK_DEFINE_MPFI_PH_ORACLE(150)
