// One multiprecision scalar per TU: the 150-digit MPFI instantiation of the LayerNorm oracle.
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {

using Mpfi150 = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<150>,
                                             boost::multiprecision::et_off>;

CertifiedLayerNorm evaluate_layernorm_mpfi150(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate<Mpfi150>(c, with_vjp, static_cast<int>(mpfi_get_prec(Mpfi150(0).backend().data())));
}

}  // namespace normcheck::oracle
