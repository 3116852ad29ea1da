#pragma once
/// The JSON certificate of one conversion: parameter counts, the storage dtype's overflow margin,
/// the coefficients' certified distance to the exact contraction, and the contracted block's
/// errors against the certified oracle on stated random and adversarial inputs, beside the
/// original block's own errors in its source dtype on the same inputs.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "kernels/contraction_converter.hpp"

namespace normcheck {

struct CertificateOptions {
  int random_inputs = 64;  ///< plus the fixed adversarial inputs
  uint64_t seed = 1;
  /// How the chain was established ({"source": "graph" | "assumed", modules, retained ...}), recorded as is.
  nlohmann::json chain = nlohmann::json::object();
  RetainedParts retained;  ///< modules other consumers still need: counted in N_new
};

/// The inputs a certificate uses (rows x d): `random_inputs` rows of k/16, |k| <= 64, then the
/// adversarial rows (zero, large 16 k, tiny 2^-10 k, one-hot, alternating signs); every value
/// exact in f16, bf16, f32 and f64.
std::vector<double> certificate_inputs(int64_t d, const CertificateOptions& o, int64_t& rows);

/// Computes the certificate; `passed` is false when an output violates its bound.
nlohmann::json contraction_certificate(const AffineLnAffine& blk, DType source, const ContractedBlock& k,
                                       const CertificateOptions& o, bool& passed);

}  // namespace normcheck
