#pragma once
/// A priori componentwise error bounds for the block Linear o RMSNorm kernels, composed and
/// deferred (docs/bounds.md section 11). Evaluated per element from the case's exact inputs and
/// the oracle's row statistics by propagating (magnitude, error) pairs through the kernel's
/// exact sequence of operations; an element whose intermediates may overflow gets a void bound.
#include <string>

#include "bounds/bounds.hpp"
#include "core/rmsnorm_case.hpp"
#include "oracles/certified_rms_block.hpp"

namespace normcheck {

enum class BlockForm { composed, deferred };

struct BlockBound {
  TensorBound y, dx, dw, dg;
};

/// Bounds of every output of the block kernel of `form` with storage c.dtype and accumulator `accum`.
BlockBound rms_block_bound(const RmsBlockCase& c, const oracle::CertifiedRmsBlock& ref, BlockForm form, DType accum);

/// "BLOCK-COMPOSED" or "BLOCK-DEFERRED".
std::string block_bound_id(BlockForm form);

}  // namespace normcheck
