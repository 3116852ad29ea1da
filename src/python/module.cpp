// The Python module's native part (`normcheck._normcheck`, pybind11): in-process judging of a
// Python callable through the same runner, sections, bounds, contracts and report as `normcheck
// run` (the callable is an external kernel "python:<name>": a per-op kernel entry, or for the other
// sections an in-process serve command), plus the bindings of src/python/reference.cpp. The Python
// package (python/normcheck) wraps it: framework conversions, result objects, pytest helpers.
#include <memory>
#include <optional>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "core/allocator.hpp"
#include "external/plugin.hpp"
#include "external/serve.hpp"
#include "python/convert.hpp"
#include "report/report.hpp"
#include "report/verdicts.hpp"
#include "sections/options.hpp"
#include "sections/section.hpp"
#include "sections/sections.hpp"
#include "suite/judge.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"
#include "suite/work_items.hpp"

using namespace normcheck;
using namespace normcheck::python;

namespace {

Op op_named(const std::string& name) {
  if (const std::optional<Op> op = parse_op(name)) return *op;
  throw py::value_error("unknown op '" + name + "' (" + op_names_joined() + ")");
}

/// A KeyboardInterrupt or SystemExit raised inside the kernel (Ctrl-C, sys.exit): not the kernel's
/// failure but the user's wish to stop. The first one is kept, the run stops (stop_requested), the
/// call in flight is left unjudged, and `check` raises it again once the run has ended (issue 48 M6).
struct PendingExit {
  std::optional<py::error_already_set> error;
};
using PendingExitPtr = std::shared_ptr<PendingExit>;

/// Whether `e` asks to stop the program; if so it is kept in `pending` and the run is stopped.
bool keep_if_exit_request(py::error_already_set& e, PendingExit& pending) {
  if (!e.matches(PyExc_KeyboardInterrupt) && !e.matches(PyExc_SystemExit)) return false;
  if (!pending.error) pending.error = e;
  stop_requested() = true;
  return true;
}

/// After a run: clears the stop request and raises what the kernel raised to stop it, if anything.
void raise_pending_exit(PendingExit& pending) {
  stop_requested() = false;
  if (pending.error) {
    py::error_already_set e = *pending.error;
    pending.error.reset();
    throw e;
  }
}

/// The Python kernel as an external kernel entry: `adapter(op, dtype, case)` returns the op's outputs
/// as float64 arrays (the package converts from and to the framework); an exception, a wrong size
/// or a value the dtype cannot hold is a kernel failure of that case.
KernelEntry python_kernel(const py::function& adapter, const std::string& name, Op op, DType dt, PendingExitPtr pending) {
  KernelEntry k{"python:" + name, name, op, dt, dtype_info(dt).default_accum, false, {}};
  k.run = [adapter, op, dt, pending](const LayerNormCase& c) {
    py::gil_scoped_acquire gil;
    KernelOutputs out;
    if (pending->error) {  // stopping: nothing more is called
      out.skipped = true;
      return out;
    }
    try {
      const py::object got = adapter(std::string(op_name(op)), std::string(dtype_info(dt).name), case_dict(c));
      if (got.is_none()) {  // the kernel declines the op or dtype: counted, never judged
        out.skipped = true;
        return out;
      }
      const py::list outputs = got.cast<py::list>();
      const std::vector<OpSlot>& slots = op_spec(op).outputs;
      if (outputs.size() != slots.size())
        throw std::runtime_error("returned " + std::to_string(outputs.size()) + " outputs, expected " + std::to_string(slots.size()));
      for (size_t i = 0; i < slots.size(); ++i) {
        const auto want = static_cast<size_t>(output_elements(slots[i], c.rows, c.n));
        output_of(out, slots[i].name) = checked_output(outputs[i], slots[i].name, want, dt);
      }
    } catch (py::error_already_set& e) {
      if (keep_if_exit_request(e, *pending)) {
        out = KernelOutputs{};
        out.skipped = true;
        return out;
      }
      out = KernelOutputs{};
      std::string msg = e.what();
      out.failure = "python kernel raised: " + msg.substr(0, msg.find('\n'));
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
                         const std::vector<std::string>& generators, bool report_only, int64_t max_elements,
                         const std::string& contract, bool invariance) {
  if (!is_contract_name(contract)) throw py::value_error("contract is 'auto', 'two_pass' or 'welford', not '" + contract + "'");
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
  const auto pending = std::make_shared<PendingExit>();
  for (DType dt : cfg->dtypes) {
    cfg->extra_kernels.push_back(python_kernel(adapter, name, the_op, dt, pending));
    cfg->extra_kernels.back().contract = contract;  // docs/bounds.md section 2.7.5
  }
  cfg->external.contract = contract == "auto" ? "" : contract;
  RunMetadata meta{utc_now(), "", "normcheck.check(" + name + ", op=" + op + ", suite=" + suite + ")"};
  stop_requested() = false;
  const RunResult result = run_suite(*cfg);
  raise_pending_exit(*pending);
  meta.end_time = utc_now();
  nlohmann::json report = report_header(*cfg, meta);
  for (const sections::Section* s : sections::registry())  // only the per-op section runs here
    if (s->key() != "records") report[std::string(s->key())] = nullptr;
  write_per_op_section(report, *cfg, result, "normcheck-python-report.json");
  int64_t judged = 0;
  for (const Record& r : result.records) judged += r.acc.count();
  // invariance=True: the same kernels' determinism and batch invariance (docs/invariance.md), as `run`
  // checks an external kernel's
  bool invariant = true;
  if (invariance && !stop_requested()) {
    invariant = sections::run_invariance_of(cfg->extra_kernels, cfg->seed, report_only, report, "normcheck-python-report.json");
    raise_pending_exit(*pending);
  }
  report["run"]["passed"] = run_passed(result) && judged > 0 && invariant;
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// The Python kernel as an in-process serve command: `adapter(op, dtype, manifest_json, inputs,
/// outputs)` gets the serve request (docs/plugins.md, "Serve mode": its manifest as JSON text, its
/// input tensors as float64 arrays of their shapes, the (name, shape) of each output) and returns a
/// dict of the outputs, or None to decline the call ("unsupported"). An exception, a missing or
/// wrongly sized output or a value the dtype cannot hold fails the call (a kernel failure).
external::InProcessServer python_server(const py::function& adapter, PendingExitPtr pending) {
  return [adapter, pending](const external::FileCall& call) {
    py::gil_scoped_acquire gil;
    external::FileCallResult r;
    if (pending->error) {  // stopping: nothing more is called
      r.skipped = true;
      return r;
    }
    try {
      py::dict inputs;
      for (const external::NamedTensor& t : call.inputs) {
        inputs[py::str(t.name)] = array_shaped(*t.values, t.shape);
      }
      py::list outputs;
      for (const auto& [name, shape] : call.outputs) outputs.append(py::make_tuple(name, py::tuple(py::cast(shape))));
      const std::string dtype(dtype_info(call.dtype).name);
      const py::object got = adapter(call.manifest.value("op", std::string()), dtype, call.manifest.dump(), inputs, outputs);
      if (got.is_none()) {
        r.skipped = true;
        return r;
      }
      const auto dict = got.cast<py::dict>();
      for (const auto& [name, shape] : call.outputs) {
        if (!dict.contains(name)) throw std::runtime_error("returned no output '" + name + "'");
        size_t want = 1;
        for (int64_t d : shape) want *= static_cast<size_t>(d);
        r.outputs[name] = checked_output(dict[py::str(name)], name, want, call.dtype);
      }
    } catch (py::error_already_set& e) {
      r = external::FileCallResult{};
      if (keep_if_exit_request(e, *pending)) {
        r.skipped = true;
        return r;
      }
      const std::string msg = e.what();
      r.failure = "python kernel raised: " + msg.substr(0, msg.find('\n'));
    } catch (const std::exception& e) {
      r = external::FileCallResult{};
      const std::string msg = e.what();
      r.failure = "python kernel raised: " + msg.substr(0, msg.find('\n'));
    }
    return r;
  };
}

/// The options of a section run of `check`: the suite's cases of `op` in `dtypes`.
RunOptions section_options(const std::string& name, const std::string& op, const std::vector<std::string>& dtypes, const std::string& suite,
                           std::optional<int> cases, std::optional<uint64_t> seed, const std::vector<std::string>& generators,
                           bool report_only, const std::string& block_form) {
  RunOptions o;
  o.suite = suite;
  o.ops = {op};
  o.dtypes = dtypes;
  o.seed = seed;
  o.threads = 1;
  o.report_only = report_only;
  o.exec_name = name;
  o.block_form = block_form;
  if (cases && *cases < 1) throw py::value_error("cases must be at least 1");
  if (op == "layernorm_jvp" || op == "rmsnorm_jvp") o.jvp_cases = cases;
  if (op == "grouped_norm") o.grouped_cases = cases;
  if (op == "linear_rmsnorm") o.block_cases = cases, o.block_generators = generators;
  if (op == "qr_contraction") o.contraction_cases = cases, o.contraction_generators = generators;
  if (!generators.empty() && op != "linear_rmsnorm" && op != "qr_contraction")
    throw py::value_error("generators narrows the per-op, linear_rmsnorm and qr_contraction cases only");
  return o;
}

/// Judges a Python kernel on a suite's cases of one section op (layernorm_jvp, rmsnorm_jvp,
/// grouped_norm, axis_audit, linear_rmsnorm, qr_contraction) through that section, as `normcheck run --serve ... --ops OP`
/// would judge a serve command; returns the report as JSON text.
std::string check_section(const py::function& adapter, const std::string& name, const std::string& op, const std::vector<std::string>& dtypes,
                          const std::string& suite, std::optional<int> cases, std::optional<uint64_t> seed,
                          const std::vector<std::string>& generators, bool report_only, const std::string& block_form) {
  auto cfg = suite_config(suite);
  if (!cfg) throw py::value_error("unknown suite '" + suite + "' (quick, default, nightly, llm)");
  if (dtypes.empty()) throw py::value_error("dtypes is empty");
  RunConfig common = *cfg;
  common.dtypes.clear();
  for (const std::string& d : dtypes) common.dtypes.push_back(dtype_named(d));
  if (seed) common.seed = *seed;
  common.threads = 1;
  const RunOptions o = section_options(name, op, dtypes, suite, cases, seed, generators, report_only, block_form);
  sections::ExternalKernels ext;
  const auto pending = std::make_shared<PendingExit>();
  ext.serve = std::make_shared<external::ServePool>(external::ExecSpec{"", name}, python_server(adapter, pending), "python");
  ext.specs.name = name;
  ext.specs.block_form = block_form;
  const sections::PlanInputs in{o, common, &ext};
  const sections::Section* section = sections::section_by_op(op);
  if (section == nullptr || section->key() == "records") throw py::value_error("unknown op '" + op + "'");
  std::unique_ptr<sections::SectionRun> run;
  try {
    run = section->plan(in);
  } catch (const sections::PlanError& e) {
    throw py::value_error(e.what());
  }
  if (!run) throw py::value_error("op '" + op + "' plans no cases in suite '" + suite + "'");
  RunMetadata meta{utc_now(), "", "normcheck.check(" + name + ", op=" + op + ", suite=" + suite + ")"};
  stop_requested() = false;
  {
    py::gil_scoped_release release;  // the kernel calls take the GIL back (python_server)
    run->run("");
  }
  raise_pending_exit(*pending);
  meta.end_time = utc_now();
  common.external = ext.specs;
  nlohmann::json report = report_header(common, meta);
  for (const sections::Section* s : sections::registry())
    if (s->key() != "records") report[std::string(s->key())] = nullptr;
  run->write(report, "normcheck-python-report.json");
  report["run"]["passed"] = run->passed() && run->judged_external_elements() > 0;
  report["run"]["complete"] = true;
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

PYBIND11_MODULE(_normcheck, m) {
  m.doc() = "normcheck's native part: generators, the certified oracle, in-process judging (docs/python.md)";
  keep_freed_memory();  // as the CLI does (issue 47): the oracle's per-case vectors are reused, not page-faulted in again
  bind_reference(m);
  bind_judge(m);
  m.def("check_kernel", &check_kernel, py::arg("adapter"), py::arg("name"), py::arg("op"), py::arg("dtypes"), py::arg("suite"),
        py::arg("cases"), py::arg("seed"), py::arg("generators"), py::arg("report_only"), py::arg("max_elements"),
        py::arg("contract") = "auto", py::arg("invariance") = false);
  m.def("check_section", &check_section, py::arg("adapter"), py::arg("name"), py::arg("op"), py::arg("dtypes"), py::arg("suite"),
        py::arg("cases"), py::arg("seed"), py::arg("generators"), py::arg("report_only"), py::arg("block_form"));
  py::tuple failing(kFailingVerdicts.size());
  for (size_t i = 0; i < kFailingVerdicts.size(); ++i) failing[i] = std::string(kFailingVerdicts[i]);
  m.attr("FAILING_VERDICTS") = failing;  // report/verdicts.hpp, the one list
  m.attr("MAX_CASE_ELEMENTS") = kMaxCaseElements;  // core/layernorm_case.hpp: what --max-elements allows
  m.def("op_outputs", [](const std::string& op) { return op_outputs(op_named(op)); });
  m.def("op_names", [] { return op_name_list(); });  // the per-op ops, in the table's order
  m.def("op_inputs", [](const std::string& op) {  // (name, is a cotangent) in the spec's order
    std::vector<std::pair<std::string, bool>> out;
    for (const OpSlot& s : op_spec(op_named(op)).inputs) out.emplace_back(s.name, s.role == SlotRole::cotangent);
    return out;
  });
}
