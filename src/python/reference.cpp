// The certified oracle as functions of the Python module (`normcheck.reference`, docs/python.md)
// and the harness's generators: LayerNorm and RMSNorm with their VJPs, the LayerNorm JVP and the
// grouped norms on exact inputs of a dtype, returning correctly rounded values with enclosures.
#include <pybind11/stl.h>

#include <cmath>
#include <limits>

#include "core/axes.hpp"
#include "core/grouped_norm_case.hpp"
#include "oracles/certified_grouped_norm.hpp"
#include "oracles/certified_layernorm.hpp"
#include "generators/generators.hpp"
#include "python/convert.hpp"
#include "suite/grouped_judge.hpp"

namespace normcheck::python {
namespace {

/// A case from the harness's generator: exact values of the dtype, as float64 arrays.
py::dict generate(const std::string& generator, const std::string& dtype, uint64_t seed, int64_t rows, int64_t n, int64_t max_elements) {
  if (!gen::is_row_generator(generator) && generator != gen::kCorpusGenerator)
    throw py::value_error("unknown generator '" + generator + "'");
  gen::ShapeRequest shape;
  shape.rows = rows;
  shape.n = n;
  shape.max_elements = max_elements;
  return case_dict(gen::make_layernorm_case(generator, dtype_named(dtype), seed, shape));
}

/// An enclosure hi + lo +- rad in plain doubles, without the power-of-two scale.
struct Unscaled {
  double hi, lo, rad;
};

/// The certificate's enclosure unscaled so that it still holds the value: hi and lo rounded to
/// nearest (below 2^-1022 each is off by at most 2^-1075; above, exact), rad rounded to nearest
/// too, then widened by 2^-1073 and one more step up, which covers the three roundings (issue
/// 42: a plain ldexp of rad was no upper bound). An enclosure beyond the double range: rad = inf.
Unscaled unscaled(const CertifiedValue& cv) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (cv.scale == 0) return {cv.hi, cv.lo, cv.rad};
  const double hi = std::ldexp(cv.hi, cv.scale), lo = std::ldexp(cv.lo, cv.scale), rad = std::ldexp(cv.rad, cv.scale);
  if (!std::isfinite(hi) || !std::isfinite(lo) || !std::isfinite(rad)) return {hi, lo, kInfinity};
  return {hi, lo, cv.scale > 0 ? rad : std::nextafter(rad + 0x1p-1073, kInfinity)};
}

/// One output's certificates: the correctly rounded dtype values (for an undecided rounding, the
/// lower end's, with the upper end's in rounded_alt), the enclosure (hi + lo +- rad, unscaled),
/// whether each rounding is decided.
py::dict certificates(const std::vector<CertifiedValue>& v, const std::vector<int64_t>& shape) {
  std::vector<double> rounded, rounded_alt, hi, lo, rad, decided;
  for (const CertifiedValue& cv : v) {
    rounded.push_back(cv.rounded);
    rounded_alt.push_back(cv.rounded_alt);
    const Unscaled u = unscaled(cv);
    hi.push_back(u.hi);
    lo.push_back(u.lo);
    rad.push_back(u.rad);
    decided.push_back(cv.rounding_decided ? 1.0 : 0.0);
  }
  py::dict d;
  d["rounded"] = array_shaped(rounded, shape);
  d["rounded_alt"] = array_shaped(rounded_alt, shape);
  d["hi"] = array_shaped(hi, shape);
  d["lo"] = array_shaped(lo, shape);
  d["rad"] = array_shaped(rad, shape);
  d["decided"] = array_shaped(decided, shape).attr("astype")("bool");
  return d;
}

/// The case of a row-wise reference: x (rows, n), gamma, eps in `dtype` (beta and dy left to the caller).
LayerNormCase rows_case(const py::handle& x, const py::handle& gamma, double eps, const std::string& dtype) {
  LayerNormCase c;
  c.dtype = dtype_named(dtype);
  const auto xa = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(x);
  if (!xa || xa.ndim() != 2) throw py::value_error("x must be a 2-D array (rows, n)");
  c.rows = xa.shape(0);
  c.n = xa.shape(1);
  c.eps = eps;
  c.x = vector_of(x, "x");
  c.gamma = vector_of(gamma, "gamma");
  return c;
}

/// The certified reference of LayerNorm or RMSNorm (and its VJP when dy is given) on exact inputs of
/// the dtype: refuses values the dtype cannot hold, eps <= 0 and mismatched shapes.
py::dict reference(bool rms, const py::handle& x, const py::handle& gamma, const py::object& beta, double eps, const std::string& dtype,
                   const py::object& dy) {
  LayerNormCase c = rows_case(x, gamma, eps, dtype);
  c.beta = beta.is_none() ? std::vector<double>(static_cast<size_t>(c.n), 0.0) : vector_of(beta, "beta");
  const bool with_vjp = !dy.is_none();
  if (with_vjp) c.dy = vector_of(dy, "dy");
  if (auto err = validate_case(c, with_vjp)) throw py::value_error(*err);
  const oracle::CertifiedLayerNorm r = rms ? oracle::certified_rmsnorm(c, with_vjp) : oracle::certified_layernorm(c, with_vjp);
  py::dict out;
  out["y"] = certificates(r.y, {c.rows, c.n});
  if (with_vjp) {
    out["dx"] = certificates(r.dx, {c.rows, c.n});
    out["dgamma"] = certificates(r.dgamma, {c.n});
    if (!rms) out["dbeta"] = certificates(r.dbeta, {c.n});
  }
  out["precision_bits"] = r.precision_bits;
  out["max_err_ulps"] = r.max_err_ulps;
  return out;
}

/// The certified LayerNorm or RMSNorm JVP (du) at a point along tangents, on exact inputs of the dtype.
py::dict reference_jvp(bool rms, const py::handle& x, const py::handle& gamma, const py::object& beta, double eps, const std::string& dtype,
                       const py::handle& dx, const py::handle& dgamma, const py::object& dbeta) {
  LayerNormCase c = rows_case(x, gamma, eps, dtype);
  const std::vector<double> zeros(static_cast<size_t>(c.n), 0.0);  // RMSNorm: no beta, no dbeta
  c.beta = rms ? zeros : vector_of(beta, "beta");
  const LayerNormTangents t{vector_of(dx, "dx"), vector_of(dgamma, "dgamma"), rms ? zeros : vector_of(dbeta, "dbeta")};
  if (auto err = validate_case(c, false)) throw py::value_error(*err);
  if (auto err = validate_tangents(c, t)) throw py::value_error(*err);
  const oracle::CertifiedLayerNormJvp r = rms ? oracle::certified_rmsnorm_jvp(c, t) : oracle::certified_layernorm_jvp(c, t);
  py::dict out;
  out["du"] = certificates(r.du, {c.rows, c.n});
  out["precision_bits"] = r.precision_bits;
  out["max_err_ulps"] = r.max_err_ulps;
  return out;
}

/// The certified grouped norm (docs/plugins.md, the grouped_norm request) of a tensor in memory
/// order; with dy its backward, for batch norm the running-statistic update and inference mode.
py::dict reference_grouped(const std::string& kind, const std::string& layout, const py::handle& x, const py::handle& gamma,
                           const py::object& beta, double eps, const std::string& dtype, const py::object& dy, int64_t groups,
                           int normalized_dims, const py::object& running_mean, const py::object& running_var, double momentum) {
  GroupedNormCase c;
  c.dtype = dtype_named(dtype);
  const auto k = audit::parse_kind(kind);
  const auto l = audit::parse_layout(layout);
  if (!k) throw py::value_error("unknown kind '" + kind + "' (batch_norm, group_norm, instance_norm, layer_norm, channel_layer_norm, rms_norm)");
  if (!l) throw py::value_error("unknown layout '" + layout + "' (dense, nchw, nhwc, sequence)");
  const auto xa = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(x);
  if (!xa) throw py::value_error("x must be an array of numbers");
  c.tensor = {*l, std::vector<int64_t>(xa.shape(), xa.shape() + xa.ndim())};
  c.spec.kind = *k;
  c.spec.groups = groups;
  c.spec.normalized_dims = normalized_dims;
  c.eps = eps;
  c.momentum = momentum;
  c.x = vector_of(x, "x");
  c.gamma = vector_of(gamma, "gamma");
  if (!beta.is_none()) c.beta = vector_of(beta, "beta");
  const bool with_vjp = !dy.is_none();
  c.dy = with_vjp ? vector_of(dy, "dy") : std::vector<double>(c.x.size(), 0.0);
  if (auto err = audit::validate(c.tensor, c.spec)) throw py::value_error(*err);
  const auto channels = static_cast<size_t>(case_channel_count(c));
  c.running_mean = running_mean.is_none() ? std::vector<double>(channels, 0.0) : vector_of(running_mean, "running_mean");
  c.running_var = running_var.is_none() ? std::vector<double>(channels, 1.0) : vector_of(running_var, "running_var");
  if (auto err = validate_grouped_case(c)) throw py::value_error(*err);
  const oracle::CertifiedGroupedNorm r = oracle::certified_grouped_norm(c, grouped_layout(c), with_vjp);
  const std::vector<int64_t> params = case_param_shape(c), per_channel{static_cast<int64_t>(channels)};
  py::dict out;
  out["y"] = certificates(r.y, c.tensor.shape);
  if (with_vjp) {
    out["dx"] = certificates(r.dx, c.tensor.shape);
    out["dgamma"] = certificates(r.dgamma, params);
    if (case_centred(c)) out["dbeta"] = certificates(r.dbeta, params);
  }
  if (c.spec.kind == audit::NormKind::batch_norm) {
    out["running_mean"] = certificates(r.running_mean, per_channel);
    out["running_var"] = certificates(r.running_var, per_channel);
    out["y_inference"] = certificates(r.y_inference, c.tensor.shape);
  }
  out["precision_bits"] = r.precision_bits;
  out["max_err_ulps"] = r.max_err_ulps;
  return out;
}

}  // namespace

py::dict case_dict(const LayerNormCase& c) {
  py::dict d;
  d["dtype"] = std::string(dtype_info(c.dtype).name);
  d["rows"] = c.rows;
  d["n"] = c.n;
  d["eps"] = c.eps;
  d["x"] = array_shaped(c.x, {c.rows, c.n});
  d["gamma"] = array_shaped(c.gamma, {c.n});
  d["beta"] = array_shaped(c.beta, {c.n});
  d["dy"] = array_shaped(c.dy, {c.rows, c.n});
  d["generator"] = c.generator;
  d["seed"] = c.seed;
  d["digest"] = std::to_string(case_digest(c));
  return d;
}

void bind_reference(py::module_& m) {
  m.def("generate", &generate, py::arg("generator"), py::arg("dtype"), py::arg("seed"), py::arg("rows") = 0, py::arg("n") = 0,
        py::arg("max_elements") = 65536);
  m.def("row_generators", [] { return gen::row_generator_names(); });
  m.def("reference", &reference, py::arg("rms"), py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("eps"), py::arg("dtype"),
        py::arg("dy"));
  m.def("reference_jvp", &reference_jvp, py::arg("rms"), py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("eps"), py::arg("dtype"), py::arg("dx"),
        py::arg("dgamma"), py::arg("dbeta"));
  m.def("reference_grouped", &reference_grouped, py::arg("kind"), py::arg("layout"), py::arg("x"), py::arg("gamma"), py::arg("beta"),
        py::arg("eps"), py::arg("dtype"), py::arg("dy"), py::arg("groups"), py::arg("normalized_dims"), py::arg("running_mean"),
        py::arg("running_var"), py::arg("momentum"));
}

}  // namespace normcheck::python
