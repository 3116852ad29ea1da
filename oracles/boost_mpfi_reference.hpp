#pragma once
/// The LayerNorm, RMSNorm and grouped-norm oracles on Boost's mpfi_float_backend<50> (168 bits, expression
/// templates off): the MPFI level as it was before the lean type (oracles/lean_interval.hpp). Not a
/// level of the cascade: the reference point of `normcheck bench-oracle --paths boost_mpfi` and of
/// the test that the lean type's enclosures are Boost's, bit for bit. The same formulas and
/// certificates as evaluate_*_mpfi50 (oracles/certified_layernorm.hpp).
#include <cstdint>
#include <vector>

#include "oracles/certified_grouped_norm.hpp"
#include "oracles/certified_layernorm.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck::oracle {

CertifiedLayerNorm evaluate_layernorm_boost_mpfi50(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNormJvp evaluate_layernorm_jvp_boost_mpfi50(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNormJvp evaluate_rmsnorm_jvp_boost_mpfi50(const LayerNormCase& c, const LayerNormTangents& t);
CertifiedLayerNorm evaluate_rmsnorm_boost_mpfi50(const LayerNormCase& c, bool with_vjp);
CertifiedLayerNorm evaluate_layernorm_columns_boost_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_rmsnorm_columns_boost_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& cols);
CertifiedLayerNorm evaluate_layernorm_outputs_boost_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& ys,
                                                           const std::vector<int64_t>& dxs);
CertifiedLayerNorm evaluate_rmsnorm_outputs_boost_mpfi50(const LayerNormCase& c, const std::vector<int64_t>& ys,
                                                         const std::vector<int64_t>& dxs);
CertifiedRmsBlock evaluate_rms_block_boost_mpfi50(const RmsBlockCase& c);
/// The grouped-norm oracle on Boost's type (oracles/grouped_boost_mpfi50.cpp), evaluate_grouped_mpfi50's reference.
CertifiedGroupedNorm evaluate_grouped_boost_mpfi50(const GroupedNormCase& c, const GroupedNormLayout& l, bool with_vjp);

}  // namespace normcheck::oracle
