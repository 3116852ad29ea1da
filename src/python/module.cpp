// The Python module's native part (`normcheck._normcheck`, pybind11): the harness's generators, the
// certified oracle as a function, and `check_kernel`, which judges a Python callable in-process
// through the same runner, bounds, contracts and report as `normcheck run` (the callable is an
// external kernel "python:<name>", judged by its dtype's contract). The Python package
// (python/normcheck) wraps it: framework conversions, result objects, pytest helpers.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/float_format.hpp"
#include "core/layernorm_case.hpp"
#include "oracles/certified_layernorm.hpp"
#include "properties/generators.hpp"
#include "report/report.hpp"
#include "sections/section.hpp"
#include "suite/judge.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"

namespace py = pybind11;
using namespace normcheck;

namespace {

DType dtype_named(const std::string& name) {
  const auto dt = parse_dtype(name);
  if (!dt) throw py::value_error("unknown dtype '" + name + "' (f16, bf16, f32, f64)");
  return *dt;
}

Op op_named(const std::string& name) {
  for (Op op : {Op::layernorm_forward, Op::layernorm_backward, Op::rmsnorm_forward, Op::rmsnorm_backward})
    if (op_name(op) == name) return op;
  throw py::value_error("unknown op '" + name + "' (layernorm_forward, layernorm_backward, rmsnorm_forward, rmsnorm_backward)");
}

py::array_t<double> array_of(const std::vector<double>& v, int64_t rows, int64_t n) {
  py::array_t<double> a(rows > 0 ? std::vector<py::ssize_t>{rows, n} : std::vector<py::ssize_t>{n});
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

std::vector<double> vector_of(const py::handle& h, const char* name) {
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(h);
  if (!a) throw py::type_error(std::string(name) + " must be an array of numbers");
  return std::vector<double>(a.data(), a.data() + a.size());
}

py::dict case_dict(const LayerNormCase& c) {
  py::dict d;
  d["dtype"] = std::string(dtype_info(c.dtype).name);
  d["rows"] = c.rows;
  d["n"] = c.n;
  d["eps"] = c.eps;
  d["x"] = array_of(c.x, c.rows, c.n);
  d["gamma"] = array_of(c.gamma, 0, c.n);
  d["beta"] = array_of(c.beta, 0, c.n);
  d["dy"] = array_of(c.dy, c.rows, c.n);
  d["generator"] = c.generator;
  d["seed"] = c.seed;
  d["digest"] = std::to_string(case_digest(c));
  return d;
}

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

/// One output's certificates: the correctly rounded dtype values, the enclosure (hi + lo +- rad,
/// unscaled), whether each rounding is decided.
py::dict certificates(const std::vector<CertifiedValue>& v, int64_t rows, int64_t n) {
  std::vector<double> rounded, hi, lo, rad, decided;
  for (const CertifiedValue& cv : v) {
    rounded.push_back(cv.rounded);
    hi.push_back(std::ldexp(cv.hi, cv.scale));
    lo.push_back(std::ldexp(cv.lo, cv.scale));
    rad.push_back(std::ldexp(cv.rad, cv.scale));
    decided.push_back(cv.rounding_decided ? 1.0 : 0.0);
  }
  py::dict d;
  d["rounded"] = array_of(rounded, rows, n);
  d["hi"] = array_of(hi, rows, n);
  d["lo"] = array_of(lo, rows, n);
  d["rad"] = array_of(rad, rows, n);
  d["decided"] = array_of(decided, rows, n).attr("astype")("bool");
  return d;
}

/// The certified reference of LayerNorm or RMSNorm (and its VJP when dy is given) on exact inputs of
/// the dtype: refuses values the dtype cannot hold, eps <= 0 and mismatched shapes.
py::dict reference(bool rms, const py::handle& x, const py::handle& gamma, const py::object& beta, double eps, const std::string& dtype,
                   const py::object& dy) {
  LayerNormCase c;
  c.dtype = dtype_named(dtype);
  const auto xa = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(x);
  if (!xa || xa.ndim() != 2) throw py::value_error("x must be a 2-D array (rows, n)");
  c.rows = xa.shape(0);
  c.n = xa.shape(1);
  c.eps = eps;
  c.x = vector_of(x, "x");
  c.gamma = vector_of(gamma, "gamma");
  c.beta = beta.is_none() ? std::vector<double>(static_cast<size_t>(c.n), 0.0) : vector_of(beta, "beta");
  const bool with_vjp = !dy.is_none();
  if (with_vjp) c.dy = vector_of(dy, "dy");
  if (auto err = validate_case(c, with_vjp)) throw py::value_error(*err);
  const oracle::CertifiedLayerNorm r = rms ? oracle::certified_rmsnorm(c, with_vjp) : oracle::certified_layernorm(c, with_vjp);
  py::dict out;
  out["y"] = certificates(r.y, c.rows, c.n);
  if (with_vjp) {
    out["dx"] = certificates(r.dx, c.rows, c.n);
    out["dgamma"] = certificates(r.dgamma, 0, c.n);
    if (!rms) out["dbeta"] = certificates(r.dbeta, 0, c.n);
  }
  out["precision_bits"] = r.precision_bits;
  out["max_err_ulps"] = r.max_err_ulps;
  return out;
}

/// The Python kernel as an external kernel entry: `adapter(op, dtype, case)` returns the op's outputs
/// as float64 arrays (the package converts from and to the framework); an exception, a wrong size
/// or a value the dtype cannot hold is a kernel failure of that case.
KernelEntry python_kernel(const py::function& adapter, const std::string& name, Op op, DType dt) {
  KernelEntry k{"python:" + name, name, op, dt, dtype_info(dt).default_accum, false, {}};
  k.run = [adapter, op, dt](const LayerNormCase& c) {
    py::gil_scoped_acquire gil;
    KernelOutputs out;
    try {
      const py::list outputs = adapter(std::string(op_name(op)), std::string(dtype_info(dt).name), case_dict(c));
      const std::vector<std::string>& names = op_outputs(op);
      if (outputs.size() != names.size())
        throw std::runtime_error("returned " + std::to_string(outputs.size()) + " outputs, expected " + std::to_string(names.size()));
      for (size_t i = 0; i < names.size(); ++i) {
        std::vector<double> v = vector_of(outputs[i], names[i].c_str());
        const size_t want = names[i] == "dgamma" || names[i] == "dbeta" ? static_cast<size_t>(c.n) : c.x.size();
        if (v.size() != want)
          throw std::runtime_error(names[i] + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
        for (double e : v)  // NaN and inf are judged (they fail where the exact value is finite); others must be dtype values
          if (std::isfinite(e) && round_to_dtype(e, dt) != e)
            throw std::runtime_error(names[i] + " holds " + fmt::format("{:a}", e) + ", not a " + std::string(dtype_info(dt).name) + " value");
        std::vector<double>& slot = names[i] == "y" ? out.y : names[i] == "dx" ? out.dx : names[i] == "dgamma" ? out.dgamma : out.dbeta;
        slot = std::move(v);
      }
    } catch (const std::exception& e) {
      out = KernelOutputs{};
      std::string msg = e.what();
      out.failure = "python kernel raised: " + msg.substr(0, msg.find('\n'));
    }
    return out;
  };
  return k;
}

/// Judges a Python kernel on a suite's per-op cases; returns the report as JSON text.
std::string check_kernel(const py::function& adapter, const std::string& name, const std::string& op, const std::vector<std::string>& dtypes,
                         const std::string& suite, std::optional<int> cases, std::optional<uint64_t> seed,
                         const std::vector<std::string>& generators, bool report_only, int64_t max_elements) {
  auto cfg = suite_config(suite);
  if (!cfg) throw py::value_error("unknown suite '" + suite + "' (quick, default, nightly, llm)");
  const Op the_op = op_named(op);
  cfg->ops = {the_op};
  cfg->dtypes.clear();
  for (const std::string& d : dtypes) cfg->dtypes.push_back(dtype_named(d));
  if (cfg->dtypes.empty()) throw py::value_error("dtypes is empty");
  if (cases) {
    if (*cases < 1) throw py::value_error("cases must be at least 1");
    cfg->cases_per_generator = *cases;
  }
  if (seed) cfg->seed = *seed;
  if (!generators.empty()) {
    for (const std::string& g : generators)
      if (!gen::is_row_generator(g) && g != gen::kCorpusGenerator) throw py::value_error("unknown generator '" + g + "'");
    cfg->generators = generators;
  }
  if (max_elements > 0) cfg->shape.max_elements = max_elements;
  cfg->threads = 1;  // the interpreter's thread: the callable runs under the GIL
  cfg->builtin = false;
  cfg->external_report_only = report_only;
  cfg->external.name = name;
  for (DType dt : cfg->dtypes) cfg->extra_kernels.push_back(python_kernel(adapter, name, the_op, dt));
  RunMetadata meta{utc_now(), "", "normcheck.check(" + name + ", op=" + op + ", suite=" + suite + ")"};
  const RunResult result = run_suite(*cfg);
  meta.end_time = utc_now();
  nlohmann::json report = report_header(*cfg, meta);
  for (const sections::Section* s : sections::registry())  // only the per-op section runs here
    if (s->key() != "records") report[std::string(s->key())] = nullptr;
  write_per_op_section(report, *cfg, result, "normcheck-python-report.json");
  int64_t judged = 0;
  for (const Record& r : result.records) judged += r.acc.count();
  report["run"]["passed"] = run_passed(result) && judged > 0;
  return report.dump();
}

}  // namespace

PYBIND11_MODULE(_normcheck, m) {
  m.doc() = "normcheck's native part: generators, the certified oracle, in-process judging (docs/python.md)";
  m.def("generate", &generate, py::arg("generator"), py::arg("dtype"), py::arg("seed"), py::arg("rows") = 0, py::arg("n") = 0,
        py::arg("max_elements") = 65536);
  m.def("reference", &reference, py::arg("rms"), py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("eps"), py::arg("dtype"),
        py::arg("dy"));
  m.def("check_kernel", &check_kernel, py::arg("adapter"), py::arg("name"), py::arg("op"), py::arg("dtypes"), py::arg("suite"),
        py::arg("cases"), py::arg("seed"), py::arg("generators"), py::arg("report_only"), py::arg("max_elements"));
  py::tuple failing(kFailingVerdicts.size());
  for (size_t i = 0; i < kFailingVerdicts.size(); ++i) failing[i] = std::string(kFailingVerdicts[i]);
  m.attr("FAILING_VERDICTS") = failing;  // report/verdicts.hpp, the one list
  m.def("row_generators", [] { return gen::row_generator_names(); });
  m.def("op_outputs", [](const std::string& op) { return op_outputs(op_named(op)); });
}
