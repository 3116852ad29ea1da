#pragma once
/// Kernels the axis audit can probe: the correct kernel of a declared normalization, inference-mode
/// batch norm, the seed's channel-layer-norm recipe (move channels last, normalize the last axis,
/// move back), and planted wrong-axis kernels reproducing real bugs (wrong reduction groups, or
/// gamma/beta broadcast along the wrong axis). Each runs the grouped-norm kernel under test
/// (kernels/grouped_norm.hpp) or the LayerNorm row kernel in the storage dtype (f32 accumulation
/// for f16/bf16) on flat tensors in memory order, with gamma and beta of the declared affine shape.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/axes.hpp"
#include "core/dtype.hpp"

namespace normcheck::audit {

/// A kernel as the audit sees it: input values (memory order, exact in the dtype) to outputs.
using AuditKernel = std::function<std::vector<double>(const std::vector<double>&)>;
/// The same with learned parameters: gamma and beta (flattened declared affine shape, exact in the dtype).
using AffineAuditKernel =
    std::function<std::vector<double>(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta)>;

struct AuditKernelInfo {
  std::string_view name;
  bool planted;  ///< a wrong-axis kernel the audit must catch
  std::string_view what;
};

const std::vector<AuditKernelInfo>& audit_kernels();

/// The kernel `name` for tensor `t` and declared normalization `declared`; throws
/// std::invalid_argument for an unknown name or one that does not apply (e.g. layout_swapped on
/// dense data, group_norm_wrong_groups with one channel).
AffineAuditKernel make_affine_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dtype);
/// The kernel with gamma = 1 and beta = 0 (what group inference probes).
AuditKernel make_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dtype);

/// Number of learned gamma (or beta) values of the declared normalization: the product of its affine shape.
int64_t affine_parameter_count(const TensorSpec& t, const NormSpec& declared);

}  // namespace normcheck::audit
