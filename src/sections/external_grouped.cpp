#include "sections/external_grouped.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve_grouped.hpp"
#include "sections/options.hpp"
#include "sections/section_support.hpp"

namespace normcheck::sections {

std::optional<GroupedExternalKernel> external_grouped_kernel(const PlanInputs& in, std::string_view section) {
  return one_external_kernel<GroupedExternalKernel>(
      in, section, "NC_GROUPED_NORM", [](const external::PluginInfo& p) { return !p.grouped_dtypes.empty(); },
      external::plugin_grouped_kernel, external::serve_grouped_kernel);
}

namespace {

/// The audit's call of the external kernel: the declared normalization of `t` in `dtype`, eps 1e-5, dy = 0.
GroupedNormCase audit_call_case(const audit::TensorSpec& t, const audit::NormSpec& declared, DType dtype) {
  GroupedNormCase base;
  base.dtype = dtype;
  base.tensor = t;
  base.spec = declared;
  base.spec.affine = true;
  base.eps = 1e-5;
  base.generator = "axis_audit";
  base.gamma.assign(static_cast<size_t>(case_param_count(base)), 1.0);
  if (case_centred(base)) base.beta.assign(base.gamma.size(), 0.0);
  base.running_mean.assign(static_cast<size_t>(case_channel_count(base)), 0.0);
  base.running_var.assign(base.running_mean.size(), 1.0);
  return base;
}

std::vector<double> audit_call(const GroupedExternalKernel& k, GroupedNormCase c) {
  c.dy.assign(c.x.size(), 0.0);
  const GroupedOutputs out = k.run(c);
  if (out.skipped) throw KernelDeclined("the kernel declined the call");
  if (!out.failure.empty()) throw std::runtime_error(out.failure);
  const auto y = std::find(out.names.begin(), out.names.end(), "y");
  if (y == out.names.end()) throw std::runtime_error("the kernel returned no y");
  return out.values[static_cast<size_t>(y - out.names.begin())];
}

}  // namespace

audit::AuditKernel grouped_audit_kernel(const GroupedExternalKernel& k, const audit::TensorSpec& t, const audit::NormSpec& declared,
                                        DType dtype) {
  return [k, base = audit_call_case(t, declared, dtype)](const std::vector<double>& x) {
    GroupedNormCase c = base;
    c.x = x;
    return audit_call(k, std::move(c));
  };
}

std::optional<audit::AffineAuditKernel> grouped_affine_audit_kernel(const GroupedExternalKernel& k, const audit::TensorSpec& t,
                                                                    const audit::NormSpec& declared, DType dtype) {
  const GroupedNormCase base = audit_call_case(t, declared, dtype);
  if (!declared.affine || audit::affine_parameter_count(t, declared) != case_param_count(base)) return std::nullopt;
  const bool with_beta = case_centred(base);
  return [k, base, with_beta](const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta) {
    GroupedNormCase c = base;
    c.x = x;
    c.gamma = gamma;
    if (with_beta) c.beta = beta;
    return audit_call(k, std::move(c));
  };
}

}  // namespace normcheck::sections
