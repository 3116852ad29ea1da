#pragma once
/// Generators of grouped normalization cases (batch norm, group norm, instance norm, layer norm and
/// RMSNorm over trailing axes, channel layer norm) on NCHW, NHWC and sequence tensors; every value
/// exact in the dtype.
#include <cstdint>

#include "core/grouped_norm_case.hpp"

namespace normcheck::gen {

/// Shapes N 1-4, C 1-8 (a multiple of G for group norm), H, W 1-6 (L 1-12); x ~ N(shift, s) with
/// a random shift and spread, gamma ~ N(1, 0.3), beta ~ N(0, 0.3), dy ~ N(0, 1), running mean
/// ~ N(0, 0.5), running variance |N(1, 0.3)|. Layer norm and RMSNorm normalize the last 1 to
/// rank - 1 axes (drawn) with elementwise gamma (and beta) of the normalized axes' shape.
GroupedNormCase make_grouped_case(audit::NormKind kind, audit::Layout layout, DType dt, uint64_t seed);

}  // namespace normcheck::gen
