// One multiprecision scalar per TU: the 50-digit MPFI instantiation of the LayerNorm oracle.
#include <boost/multiprecision/mpfi.hpp>

#include "oracles/layernorm_certify_impl.hpp"

namespace normcheck::oracle {

using Mpfi50 = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<50>,
                                             boost::multiprecision::et_off>;

CertifiedLayerNorm evaluate_layernorm_mpfi50(const LayerNormCase& c, bool with_vjp) {
  return detail::evaluate<Mpfi50>(c, with_vjp, static_cast<int>(mpfi_get_prec(Mpfi50(0).backend().data())));
}

}  // namespace normcheck::oracle
