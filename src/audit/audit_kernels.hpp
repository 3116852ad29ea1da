#pragma once
/// Kernels the axis audit can probe: the correct kernel of a declared normalization, inference-mode
/// batch norm, and planted wrong-axis kernels reproducing real bugs. Each runs the grouped-norm
/// kernel under test (kernels/grouped_norm.hpp) in the storage dtype (f32 accumulation for
/// f16/bf16) with gamma = 1, beta = 0, on flat tensors in memory order.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/axes.hpp"
#include "core/dtype.hpp"

namespace normcheck::audit {

/// A kernel as the audit sees it: input values (memory order, exact in the dtype) to outputs.
using AuditKernel = std::function<std::vector<double>(const std::vector<double>&)>;

struct AuditKernelInfo {
  std::string_view name;
  bool planted;  ///< a wrong-axis kernel the audit must catch
  std::string_view what;
};

const std::vector<AuditKernelInfo>& audit_kernels();

/// The kernel `name` for tensor `t` and declared normalization `declared`; throws
/// std::invalid_argument for an unknown name or one that does not apply (e.g. layout_swapped on
/// dense data, group_norm_wrong_groups with one channel).
AuditKernel make_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dtype);

}  // namespace normcheck::audit
