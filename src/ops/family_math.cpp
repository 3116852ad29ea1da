#include "ops/family_math.hpp"

#include <stdexcept>
#include <string>

#include "ops/gemma_rmsnorm/gemma_rmsnorm.hpp"

namespace normcheck {
namespace {

std::vector<TensorBound> layernorm_bounds(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  if (!is_backward(op)) return {layernorm_forward_bound(c, ref, m)};
  BackwardBound b = layernorm_backward_bound(c, ref, m);
  return {std::move(b.dx), std::move(b.dgamma), std::move(b.dbeta)};
}

std::vector<TensorBound> rmsnorm_bounds(Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref, const BoundModel& m) {
  if (!is_backward(op)) return {rmsnorm_forward_bound(c, ref, m)};
  BackwardBound b = rmsnorm_backward_bound(c, ref, m);
  return {std::move(b.dx), std::move(b.dgamma)};
}

const std::vector<FamilyMath>& table() {
  static const std::vector<FamilyMath> rows = [] {
    std::vector<FamilyMath> t = {
        {OpFamily::layernorm, &oracle::certified_layernorm, &layernorm_bounds, &add_layernorm_kernels},
        {OpFamily::rmsnorm, &oracle::certified_rmsnorm, &rmsnorm_bounds, &add_rmsnorm_kernels},
        {OpFamily::gemma_rmsnorm, &gemma_rmsnorm_reference, &gemma_rmsnorm_bounds, &add_gemma_rmsnorm_kernels},
    };
    for (size_t i = 0; i < t.size(); ++i)
      if (family_index(t[i].family) != static_cast<int>(i)) throw std::logic_error("family_math: row " + std::to_string(i) + " is out of OpFamily's order");
    if (t.size() != static_cast<size_t>(kOpFamilies)) throw std::logic_error("family_math: not one row per op family");
    return t;
  }();
  return rows;
}

}  // namespace

const FamilyMath& family_math(OpFamily f) { return table().at(static_cast<size_t>(family_index(f))); }

}  // namespace normcheck
