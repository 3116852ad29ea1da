#include "audit/audit_kernels.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/grouped_norm.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck::audit {
namespace {

template <class S>
std::vector<double> run_grouped(const kernels::GroupPlan& plan, int64_t params, const std::vector<double>& x, double eps) {
  using A = default_accum_t<S>;
  const auto xs = to_storage<S>(x);
  const std::vector<S> gamma(static_cast<size_t>(params), dtype_traits<S>::from_double(1.0)),
      beta(static_cast<size_t>(params), dtype_traits<S>::from_double(0.0));
  std::vector<S> y(xs.size());
  kernels::grouped_norm_forward<S, A>(plan, xs.data(), gamma.data(), beta.data(), eps, y.data());
  return to_double(y);
}

template <class S>
std::vector<double> run_inference(const std::vector<int64_t>& param_of, int64_t params, const std::vector<double>& x, double eps) {
  using A = default_accum_t<S>;
  const auto xs = to_storage<S>(x);
  const S one = dtype_traits<S>::from_double(1.0), zero = dtype_traits<S>::from_double(0.0);
  const std::vector<S> gamma(static_cast<size_t>(params), one), beta(static_cast<size_t>(params), zero), rm(beta), rv(gamma);
  std::vector<S> y(xs.size());
  kernels::batch_norm_inference<S, A>(param_of, xs.data(), gamma.data(), beta.data(), rm.data(), rv.data(), eps, y.data());
  return to_double(y);
}

/// A kernel normalizing over the groups of (tensor read with `layout`, spec).
AuditKernel grouped(const TensorSpec& t, Layout layout, const NormSpec& spec, DType dt) {
  const TensorSpec seen{layout, t.shape};
  const auto param_of = channel_of_entries(t, layout);
  const int64_t params = t.shape[static_cast<size_t>(channel_axis(layout))];
  const kernels::GroupPlan plan = kernels::plan_of(declared_groups(seen, spec), param_of);
  return [plan, params, dt](const std::vector<double>& x) {
    std::vector<double> y;
    for_each_dtype([&](auto tag) {
      if (dtype_traits<decltype(tag)>::id == dt) y = run_grouped<decltype(tag)>(plan, params, x, 1e-5);
    });
    return y;
  };
}

Layout swapped(Layout l) {
  if (l == Layout::nchw) return Layout::nhwc;
  if (l == Layout::nhwc) return Layout::nchw;
  throw std::invalid_argument("layout_swapped applies to image layouts (nchw, nhwc) only");
}

/// A group count that divides C and differs from the declared one (2G when possible, else the
/// smallest other divisor).
int64_t wrong_group_count(const TensorSpec& t, const NormSpec& d) {
  const int64_t c = t.shape[static_cast<size_t>(channel_axis(t.layout))], g = d.kind == NormKind::group_norm ? d.groups : 1;
  if (c % (2 * g) == 0) return 2 * g;
  for (int64_t h = 1; h <= c; ++h)
    if (c % h == 0 && h != g) return h;
  throw std::invalid_argument("group_norm_wrong_groups needs a channel count with another divisor than G");
}

}  // namespace

const std::vector<AuditKernelInfo>& audit_kernels() {
  static const std::vector<AuditKernelInfo> list = {
      {"declared", false, "the correct kernel of the declared normalization"},
      {"batch_norm_eval", false, "batch norm in inference mode (running statistics: no reduction)"},
      {"last_axis_layer_norm", true, "layer norm over the last memory axis only (e.g. W of NCHW data)"},
      {"layout_swapped", true, "the declared normalization computed as if NCHW were NHWC (or the reverse)"},
      {"batch_norm_per_sample", true, "batch norm whose statistics are taken per sample (per N and C)"},
      {"group_norm_wrong_groups", true, "group norm with another group count than declared"},
      {"mean_over_all_axes", true, "statistics over the whole tensor"},
  };
  return list;
}

AuditKernel make_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dt) {
  if (auto err = validate(t, declared)) throw std::invalid_argument(*err);
  if (name == "declared") return grouped(t, t.layout, declared, dt);
  if (name == "last_axis_layer_norm") return grouped(t, t.layout, {NormKind::layer_norm, 1}, dt);
  if (name == "layout_swapped") {
    const Layout other = swapped(t.layout);
    if (auto err = validate({other, t.shape}, declared))
      throw std::invalid_argument(fmt::format("layout_swapped does not apply here: the data read as {} gives: {}", layout_name(other), *err));
    return grouped(t, other, declared, dt);
  }
  if (name == "mean_over_all_axes")
    return grouped(t, t.layout, {NormKind::layer_norm, static_cast<int>(t.shape.size())}, dt);
  if (name == "batch_norm_per_sample") {
    if (t.layout == Layout::dense) throw std::invalid_argument("batch_norm_per_sample needs spatial axes");
    return grouped(t, t.layout, {NormKind::instance_norm}, dt);
  }
  if (name == "group_norm_wrong_groups") {
    if (t.layout == Layout::dense) throw std::invalid_argument("group_norm_wrong_groups needs spatial axes");
    NormSpec wrong{NormKind::group_norm};
    wrong.groups = wrong_group_count(t, declared);
    return grouped(t, t.layout, wrong, dt);
  }
  if (name == "batch_norm_eval") {
    const auto param_of = channel_of_entries(t, t.layout);
    const int64_t params = t.shape[static_cast<size_t>(channel_axis(t.layout))];
    return [param_of, params, dt](const std::vector<double>& x) {
      std::vector<double> y;
      for_each_dtype([&](auto tag) {
        if (dtype_traits<decltype(tag)>::id == dt) y = run_inference<decltype(tag)>(param_of, params, x, 1e-5);
      });
      return y;
    };
  }
  throw std::invalid_argument("unknown audit kernel '" + std::string(name) + "' (see normcheck audit-axes --help)");
}

}  // namespace normcheck::audit
