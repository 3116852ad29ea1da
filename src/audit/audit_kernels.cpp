#include "audit/audit_kernels.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/grouped_norm.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck::audit {
namespace {

template <class S>
std::vector<double> run_grouped(const kernels::GroupPlan& plan, const std::vector<double>& x, const std::vector<double>& gamma,
                                const std::vector<double>& beta, double eps) {
  using A = default_accum_t<S>;
  const auto xs = to_storage<S>(x), gs = to_storage<S>(gamma), bs = to_storage<S>(beta);
  std::vector<S> y(xs.size());
  kernels::grouped_norm_forward<S, A>(plan, xs.data(), gs.data(), bs.data(), eps, y.data());
  return to_double(y);
}

/// The seed's recipe for channel-only layer norm: move the channel axis last, normalize the last
/// axis (the LayerNorm row kernel, rows of C), move it back.
template <class S>
std::vector<double> run_channel_last_recipe(const TensorSpec& t, const std::vector<double>& x, const std::vector<double>& gamma,
                                            const std::vector<double>& beta, double eps) {
  using A = default_accum_t<S>;
  const int ch = channel_axis(t.layout);
  const int64_t c = t.shape[static_cast<size_t>(ch)];
  int64_t inner = 1;  // entries between consecutive channels in memory
  for (size_t a = static_cast<size_t>(ch) + 1; a < t.shape.size(); ++a) inner *= t.shape[a];
  const int64_t outer = static_cast<int64_t>(x.size()) / (c * inner);
  std::vector<double> moved(x.size());  // (outer, inner, C): channels last
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < inner; ++i) moved[static_cast<size_t>((o * inner + i) * c + k)] = x[static_cast<size_t>((o * c + k) * inner + i)];
  const auto xs = to_storage<S>(moved), gs = to_storage<S>(gamma), bs = to_storage<S>(beta);
  std::vector<S> ys(xs.size());
  kernels::layernorm_forward_two_pass<S, A>(xs.data(), gs.data(), bs.data(), outer * inner, c, eps, ys.data());
  const std::vector<double> y_moved = to_double(ys);
  std::vector<double> y(x.size());  // back to the original axis order
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < inner; ++i) y[static_cast<size_t>((o * c + k) * inner + i)] = y_moved[static_cast<size_t>((o * inner + i) * c + k)];
  return y;
}

/// Calls `run` with the storage type of `dt`.
template <class Run>
std::vector<double> in_dtype(DType dt, Run run) {
  std::vector<double> y;
  for_each_dtype([&](auto tag) {
    if (dtype_traits<decltype(tag)>::id == dt) y = run(tag);
  });
  return y;
}

/// Inference-mode batch norm (running mean 0, variance 1) with gamma and beta per channel (the
/// given ones, indexed by channel modulo their count).
template <class S>
std::vector<double> run_inference(const std::vector<int64_t>& param_of, int64_t params, const std::vector<double>& x,
                                  const std::vector<double>& gamma_in, const std::vector<double>& beta_in, double eps) {
  using A = default_accum_t<S>;
  const auto xs = to_storage<S>(x);
  std::vector<double> g(static_cast<size_t>(params)), b(static_cast<size_t>(params));
  for (int64_t c = 0; c < params; ++c) {
    g[static_cast<size_t>(c)] = gamma_in[static_cast<size_t>(c) % gamma_in.size()];
    b[static_cast<size_t>(c)] = beta_in[static_cast<size_t>(c) % beta_in.size()];
  }
  const std::vector<S> gamma = to_storage<S>(g), beta = to_storage<S>(b), rm(params, dtype_traits<S>::from_double(0.0)),
                       rv(params, dtype_traits<S>::from_double(1.0));
  std::vector<S> y(xs.size());
  kernels::batch_norm_inference<S, A>(param_of, xs.data(), gamma.data(), beta.data(), rm.data(), rv.data(), eps, y.data());
  return to_double(y);
}

/// A kernel normalizing over the groups of (tensor read with `layout`, spec), with gamma and beta
/// indexed by `param_of` (per entry; by default the declared affine index: the groups are what is wrong).
AffineAuditKernel grouped(const TensorSpec& t, Layout layout, const NormSpec& spec, DType dt, std::vector<int64_t> param_of) {
  const kernels::GroupPlan plan = kernels::plan_of(declared_groups({layout, t.shape}, spec), std::move(param_of));
  return [plan, dt](const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta) {
    return in_dtype(dt, [&](auto tag) { return run_grouped<decltype(tag)>(plan, x, gamma, beta, 1e-5); });
  };
}

/// gamma/beta indexed by the coordinate along the last memory axis (mod the parameter count): a
/// (C,) parameter broadcast against W, as NumPy does when W = C.
std::vector<int64_t> last_axis_param_of(const TensorSpec& t, int64_t params) {
  std::vector<int64_t> out(static_cast<size_t>(account(t, {NormKind::batch_norm}).elements));
  for (size_t e = 0; e < out.size(); ++e) out[e] = (static_cast<int64_t>(e) % t.shape.back()) % params;
  return out;
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
      {"channel_layer_norm_recipe", false, "channel-only layer norm by the seed's recipe: channels moved last, last-axis layer norm, moved back"},
      {"affine_along_last_axis", true, "the declared groups, but gamma and beta indexed along the last memory axis (a (C,) parameter broadcast against W)"},
  };
  return list;
}

int64_t affine_parameter_count(const TensorSpec& t, const NormSpec& declared) {
  int64_t p = 1;
  for (int64_t s : account(t, declared).affine_shape) p *= s;
  return p;
}

AffineAuditKernel make_affine_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dt) {
  if (auto err = validate(t, declared)) throw std::invalid_argument(*err);
  const std::vector<int64_t> param_of = affine_index_of_entries(t, declared);
  if (name == "declared") return grouped(t, t.layout, declared, dt, param_of);
  if (name == "last_axis_layer_norm") return grouped(t, t.layout, {NormKind::layer_norm, 1}, dt, param_of);
  if (name == "layout_swapped") {
    const Layout other = swapped(t.layout);
    if (auto err = validate({other, t.shape}, declared))
      throw std::invalid_argument(fmt::format("layout_swapped does not apply here: the data read as {} gives: {}", layout_name(other), *err));
    return grouped(t, other, declared, dt, param_of);
  }
  if (name == "mean_over_all_axes")
    return grouped(t, t.layout, {NormKind::layer_norm, static_cast<int>(t.shape.size())}, dt, param_of);
  if (name == "batch_norm_per_sample") {
    if (t.layout == Layout::dense) throw std::invalid_argument("batch_norm_per_sample needs spatial axes");
    return grouped(t, t.layout, {NormKind::instance_norm}, dt, param_of);
  }
  if (name == "group_norm_wrong_groups") {
    if (t.layout == Layout::dense) throw std::invalid_argument("group_norm_wrong_groups needs spatial axes");
    NormSpec wrong{NormKind::group_norm};
    wrong.groups = wrong_group_count(t, declared);
    return grouped(t, t.layout, wrong, dt, param_of);
  }
  if (name == "channel_layer_norm_recipe") {
    if (declared.kind != NormKind::channel_layer_norm || t.layout == Layout::dense)
      throw std::invalid_argument("channel_layer_norm_recipe implements a declared channel_layer_norm of an image or sequence tensor");
    return [t, dt](const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta) {
      return in_dtype(dt, [&](auto tag) { return run_channel_last_recipe<decltype(tag)>(t, x, gamma, beta, 1e-5); });
    };
  }
  if (name == "affine_along_last_axis") {
    const int64_t params = affine_parameter_count(t, declared);
    if (!declared.affine || params < 2 || t.shape.back() < 2)
      throw std::invalid_argument("affine_along_last_axis needs learned parameters and a last axis longer than 1");
    if (last_axis_param_of(t, params) == param_of)
      throw std::invalid_argument("affine_along_last_axis: the declared parameters already run along the last axis");
    return grouped(t, t.layout, declared, dt, last_axis_param_of(t, params));
  }
  if (name == "batch_norm_eval") {
    const auto channel_of = channel_of_entries(t, t.layout);
    const int64_t params = t.shape[static_cast<size_t>(channel_axis(t.layout))];
    return [channel_of, params, dt](const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta) {
      return in_dtype(dt, [&](auto tag) { return run_inference<decltype(tag)>(channel_of, params, x, gamma, beta, 1e-5); });
    };
  }
  throw std::invalid_argument("unknown audit kernel '" + std::string(name) + "' (see normcheck audit-axes --help)");
}

AuditKernel make_audit_kernel(std::string_view name, const TensorSpec& t, const NormSpec& declared, DType dt) {
  const AffineAuditKernel k = make_affine_audit_kernel(name, t, declared, dt);
  const int64_t params = affine_parameter_count(t, declared);
  const std::vector<double> ones(static_cast<size_t>(params), 1.0), zeros(static_cast<size_t>(params), 0.0);
  return [k, ones, zeros](const std::vector<double>& x) { return k(x, ones, zeros); };
}

}  // namespace normcheck::audit
