#pragma once
/// The external grouped-norm kernel of a run (an ABI v2 plugin's NC_GROUPED_NORM or the serve
/// command's grouped_norm op), shared by the sections that call it: the grouped suite judges it,
/// the axis audit probes which entries it normalizes together.
#include <optional>
#include <string_view>

#include "audit/audit_kernels.hpp"
#include "sections/section.hpp"
#include "suite/grouped_suite.hpp"

namespace normcheck::sections {

/// The run's external grouped-norm kernel, or nullopt when it has none or --ops leaves `section`
/// out; throws PlanError when --ops names `section` and no external kernel implements the op, or
/// when there are several.
std::optional<GroupedExternalKernel> external_grouped_kernel(const PlanInputs& in, std::string_view section);

/// Thrown by a probe when the external kernel declines the call (unsupported kind or dtype).
struct KernelDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The external kernel as the axis audit sees it: x (memory order) to y, for the declared
/// normalization of `t` in `dtype` with gamma = 1, beta = 0, dy = 0, eps 1e-5. Throws KernelDeclined
/// when the kernel declines, std::runtime_error with its message when the call fails.
audit::AuditKernel grouped_audit_kernel(const GroupedExternalKernel& k, const audit::TensorSpec& t, const audit::NormSpec& declared,
                                        DType dtype);

/// The same with gamma and beta given (the declared affine shape, flattened in memory order): what
/// affine-axis inference probes. nullopt when the declared normalization has no learned parameters
/// or its affine shape is not the grouped call's parameter shape (tied affine).
std::optional<audit::AffineAuditKernel> grouped_affine_audit_kernel(const GroupedExternalKernel& k, const audit::TensorSpec& t,
                                                                    const audit::NormSpec& declared, DType dtype);

}  // namespace normcheck::sections
