#pragma once
/// A priori bounds of the JVP kernels (kernels/layernorm_jvp.hpp, kernels/rmsnorm_jvp.hpp), docs/bounds.md
/// section 17 (LN-JVP-TWOPASS-SEQ) and 17.1 (RMS-JVP-SEQ).
#include "bounds/bounds.hpp"
#include "oracles/certified_layernorm.hpp"

namespace normcheck {

/// Per-element bound on |du_hat - du| for the case and tangents, with the certified JVP `ref`.
/// Evaluates the certified VJP of the case with gamma = 1 and dy = tx (the kernel's q), once.
TensorBound layernorm_jvp_bound(const LayerNormCase& c, const LayerNormTangents& t,
                                const oracle::CertifiedLayerNormJvp& ref, DType accum);

/// RMS-JVP-SEQ (section 17.1): the RMSNorm JVP kernel (kernels/rmsnorm_jvp.hpp) along (t.dx,
/// t.dgamma), from the certified RMSNorm VJP of the case with gamma = 1 and dy = tx, evaluated once.
TensorBound rmsnorm_jvp_bound(const LayerNormCase& c, const LayerNormTangents& t, const oracle::CertifiedLayerNormJvp& ref,
                              DType accum);

}  // namespace normcheck
