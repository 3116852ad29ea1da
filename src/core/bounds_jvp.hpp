#pragma once
/// A priori bound of the LayerNorm JVP kernel (kernels/layernorm_jvp.hpp), docs/bounds.md section 17
/// (LN-JVP-TWOPASS-SEQ).
#include "core/bounds.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// Per-element bound on |du_hat - du| for the case and tangents, with the certified JVP `ref`.
/// Evaluates the certified VJP of the case with gamma = 1 and dy = tx (the kernel's q), once.
TensorBound layernorm_jvp_bound(const LayerNormCase& c, const LayerNormTangents& t,
                                const oracle::CertifiedLayerNormJvp& ref, DType accum);

}  // namespace normcheck
