// normcheck.judge (docs/python.md): one case and a kernel's outputs on it judged as `run` judges
// them (the certified reference, the verdict bound of the op's external-kernel tolerance row and
// contract, the envelope where the bound is void), with every element's exact value, bound, error
// and verdict, so that a Hypothesis or pytest test can assert on normcheck's bound.
#include <pybind11/stl.h>

#include <cmath>

#include <fmt/ranges.h>

#include "bounds/tolerance_table.hpp"
#include "core/metrics.hpp"
#include "core/op_spec.hpp"
#include "python/convert.hpp"
#include "suite/judge.hpp"

namespace normcheck::python {
namespace {

/// The case of a `normcheck.generate` dict (or one a test builds with the same keys): x (rows, n),
/// gamma, beta (LayerNorm), dy (backward ops), eps and dtype; every value checked as `reference` does.
LayerNormCase case_of(const py::dict& d, Op op) {
  for (const char* key : {"x", "gamma", "eps", "dtype"})
    if (!d.contains(key)) throw py::value_error(std::string("the case has no '") + key + "' (normcheck.generate makes one)");
  LayerNormCase c;
  c.dtype = dtype_named(py::str(d["dtype"]));
  const auto xa = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(d["x"]);
  if (!xa || xa.ndim() != 2) throw py::value_error("the case's x must be a 2-D array (rows, n)");
  c.rows = xa.shape(0);
  c.n = xa.shape(1);
  c.eps = py::cast<double>(d["eps"]);
  c.x = vector_of(d["x"], "x");
  c.gamma = vector_of(d["gamma"], "gamma");
  c.beta = has_input(op, "beta") && d.contains("beta") ? vector_of(d["beta"], "beta") : std::vector<double>(static_cast<size_t>(c.n), 0.0);
  if (has_input(op, "beta") && !d.contains("beta")) throw py::value_error("the case has no 'beta' (" + std::string(op_name(op)) + " takes one)");
  const bool backward = is_backward(op);
  if (backward && !d.contains("dy")) throw py::value_error("the case has no 'dy' (" + std::string(op_name(op)) + " takes one)");
  c.dy = backward ? vector_of(d["dy"], "dy") : std::vector<double>{};
  if (d.contains("generator")) c.generator = py::str(d["generator"]);
  if (d.contains("seed")) c.seed = py::cast<uint64_t>(d["seed"]);
  if (auto err = validate_case(c, backward)) throw py::value_error(*err);
  return c;
}

/// Per element of one output: the verdict bound's judgement (measure_element, as judge_tensor).
py::dict elements(const std::vector<double>& got, const std::vector<CertifiedValue>& ref, const TensorBound& b, double max_ratio,
                  DType dt, const std::vector<int64_t>& shape) {
  std::vector<double> exact, bound, error, ratio, failing, by_envelope, admits_full;
  for (size_t i = 0; i < got.size(); ++i) {
    const ElementError e = measure_element(got[i], ref[i], dt, b.bound[i] * max_ratio, b.envelope(i));
    exact.push_back(ref[i].rounded);
    bound.push_back(b.bound[i] * max_ratio);
    error.push_back(e.abs_err);
    ratio.push_back(e.bound_ratio);
    failing.push_back(e.violation ? 1.0 : 0.0);
    by_envelope.push_back(e.bound_void ? 1.0 : 0.0);
    admits_full.push_back(e.admits_full_relative ? 1.0 : 0.0);
  }
  py::dict d;
  d["exact"] = array_shaped(exact, shape);
  d["bound"] = array_shaped(bound, shape);
  d["error"] = array_shaped(error, shape);
  d["error_over_bound"] = array_shaped(ratio, shape);
  d["failing"] = array_shaped(failing, shape).attr("astype")("bool");
  d["judged_by_envelope"] = array_shaped(by_envelope, shape).attr("astype")("bool");
  d["admits_full_relative_error"] = array_shaped(admits_full, shape).attr("astype")("bool");
  return d;
}

/// The verdict of one output as `run` gives it: pass, fail, or looser_contract (a LayerNorm kernel
/// judged with contract "auto" that fails the two-pass bound and holds the Welford class's).
std::string output_verdict(const OutputJudgement& j) {
  if (!j.failed) return "pass";
  return j.has_looser && !j.looser_failed ? "looser_contract" : "fail";
}

py::dict judge(const std::string& op_text, const py::dict& case_dict, const py::dict& outputs, const std::string& contract) {
  const std::optional<Op> parsed = parse_op(op_text);
  if (!parsed) throw py::value_error("unknown op '" + op_text + "' (" + op_names_joined() + ")");
  const Op op = *parsed;
  if (!is_contract_name(contract)) throw py::value_error("contract is 'auto', 'two_pass' or 'welford', not '" + contract + "'");
  const LayerNormCase c = case_of(case_dict, op);
  KernelEntry k{"python:judge", "judge", op, c.dtype, dtype_info(c.dtype).default_accum, false, {}, contract};
  KernelOutputs out;
  for (const OpSlot& slot : op_spec(op).outputs) {
    const std::string& name = slot.name;
    if (!outputs.contains(name)) throw py::value_error("no output '" + name + "' (" + op_text + " outputs " + fmt::format("{}", fmt::join(op_outputs(op), ", ")) + ")");
    const auto want = static_cast<size_t>(output_elements(slot, c.rows, c.n));
    try {
      output_of(out, name) = checked_output(outputs[name.c_str()], name, want, c.dtype);
    } catch (const std::runtime_error& e) {
      throw py::value_error(e.what());
    }
  }
  const oracle::CertifiedLayerNorm ref = certified_reference(op, c, is_backward(op));
  const ToleranceEntry& t = tolerance_for(k);
  const std::vector<TensorBound> bounds = bounds_for(op, c, ref, verdict_bound_model(t, k));
  const std::vector<OutputJudgement> judged = judge_outputs(k, c, ref, out);
  py::dict result;
  bool passed = true;
  for (size_t o = 0; o < judged.size(); ++o) {
    const std::string& name = judged[o].output;
    const bool per_row = op_spec(op).outputs[o].per_row();
    py::dict d = elements(output_of(out, name), reference_of(ref, name), bounds[o], t.max_ratio, c.dtype,
                          per_row ? std::vector<int64_t>{c.rows, c.n} : std::vector<int64_t>{c.n});
    d["verdict"] = output_verdict(judged[o]);
    d["worst_index"] = judged[o].acc.worst_index();
    d["max_error_over_bound"] = judged[o].acc.max_bound_ratio();
    passed = passed && d["verdict"].cast<std::string>() != "fail";
    result[name.c_str()] = d;
  }
  result["passed"] = passed;
  result["bound_id"] = bound_label(verdict_bound_model(t, k));
  result["precision_bits"] = ref.precision_bits;
  result["oracle_max_err_ulps"] = ref.max_err_ulps;
  return result;
}

}  // namespace

void bind_judge(py::module_& m) {
  m.def("judge", &judge, py::arg("op"), py::arg("case"), py::arg("outputs"), py::arg("contract"));
}

}  // namespace normcheck::python
