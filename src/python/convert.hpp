#pragma once
/// Conversions between the Python module's arrays and the harness's exact doubles, shared by the
/// reference functions (src/python/reference.cpp) and in-process judging (src/python/module.cpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "core/float_format.hpp"
#include "core/layernorm_case.hpp"

namespace normcheck::python {

namespace py = pybind11;

inline DType dtype_named(const std::string& name) {
  const auto dt = parse_dtype(name);
  if (!dt) throw py::value_error("unknown dtype '" + name + "' (f16, bf16, f32, f64)");
  return *dt;
}

inline py::array_t<double> array_shaped(const std::vector<double>& v, const std::vector<int64_t>& shape) {
  py::array_t<double> a(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

inline std::vector<double> vector_of(const py::handle& h, const char* name) {
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(h);
  if (!a) throw py::type_error(std::string(name) + " must be an array of numbers");
  return std::vector<double>(a.data(), a.data() + a.size());
}

/// One output of a Python kernel as exact doubles: `want` values, each finite one a value of `dt`
/// (NaN and inf are judged: they fail where the exact value is finite); throws otherwise.
inline std::vector<double> checked_output(const py::handle& h, const std::string& name, size_t want, DType dt) {
  std::vector<double> v = vector_of(h, name.c_str());
  if (v.size() != want) throw std::runtime_error(name + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
  for (double e : v)
    if (std::isfinite(e) && round_to_dtype(e, dt) != e)
      throw std::runtime_error(name + " holds " + fmt::format("{:a}", e) + ", not a " + std::string(dtype_info(dt).name) + " value");
  return v;
}

/// A harness case as the dict the package hands to kernels and `normcheck.generate` returns.
py::dict case_dict(const LayerNormCase& c);

/// Registers generate, row_generators and the reference functions (src/python/reference.cpp).
void bind_reference(py::module_& m);

/// Registers judge: one case's outputs judged element by element (src/python/judge.cpp).
void bind_judge(py::module_& m);

}  // namespace normcheck::python
