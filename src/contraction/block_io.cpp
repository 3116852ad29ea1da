#include "contraction/block_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace normcheck {
namespace {

const Tensor* find(const SafetensorsFile& f, const std::string& name) {
  const auto it = f.tensors.find(name);
  return it == f.tensors.end() ? nullptr : &it->second;
}

const Tensor& require(const SafetensorsFile& f, const std::string& name) {
  const Tensor* t = find(f, name);
  if (!t) throw SafetensorsError(fmt::format("tensor '{}' not found in the file", name));
  return *t;
}

void expect_shape(const Tensor& t, const std::string& name, std::vector<int64_t> shape) {
  if (t.shape != shape)
    throw SafetensorsError(fmt::format("tensor '{}' has shape [{}], expected [{}]", name, fmt::join(t.shape, ", "),
                                       fmt::join(shape, ", ")));
}

/// Values of an optional vector tensor of length len (empty when absent).
std::vector<double> optional_vector(const SafetensorsFile& f, const std::string& name, int64_t len) {
  const Tensor* t = find(f, name);
  if (!t) return {};
  expect_shape(*t, name, {len});
  return t->values;
}

Tensor tensor_of(DType dt, std::vector<int64_t> shape, std::vector<double> v) { return {dt, std::move(shape), std::move(v)}; }

}  // namespace

AffineLnAffine block_from_safetensors(const SafetensorsFile& f, const BlockNames& names, double eps, DType& source_dtype) {
  if (names.consumers.empty()) throw SafetensorsError("no consumer named");
  const Tensor& a = require(f, names.producer + ".weight");
  if (a.shape.size() != 2 || a.shape[0] < 1 || a.shape[1] < 1)
    throw SafetensorsError(fmt::format("tensor '{}.weight' must be a non-empty matrix", names.producer));
  AffineLnAffine blk;
  blk.n = a.shape[0];
  blk.d = a.shape[1];
  blk.eps = eps;
  blk.A = a.values;
  source_dtype = a.dtype;
  blk.a = optional_vector(f, names.producer + ".bias", blk.n);
  blk.gamma = optional_vector(f, names.norm + ".weight", blk.n);
  blk.beta = optional_vector(f, names.norm + ".bias", blk.n);
  for (const std::string& c : names.consumers) {
    const Tensor& w = require(f, c + ".weight");
    if (w.shape.size() != 2 || w.shape[1] != blk.n || w.shape[0] < 1)
      throw SafetensorsError(fmt::format("tensor '{}.weight' has shape [{}], expected [m, {}] (n of the LayerNorm)", c,
                                         fmt::join(w.shape, ", "), blk.n));
    blk.W.insert(blk.W.end(), w.values.begin(), w.values.end());
    blk.consumer_rows.push_back(w.shape[0]);
    blk.m += w.shape[0];
  }
  // Consumer biases: all present or all absent (a partial set is stored as zeros where absent).
  bool any_bias = false;
  for (const std::string& c : names.consumers) any_bias = any_bias || find(f, c + ".bias");
  if (any_bias)
    for (size_t i = 0; i < names.consumers.size(); ++i) {
      const auto b = optional_vector(f, names.consumers[i] + ".bias", blk.consumer_rows[i]);
      if (b.empty()) blk.b.insert(blk.b.end(), static_cast<size_t>(blk.consumer_rows[i]), 0.0);
      blk.b.insert(blk.b.end(), b.begin(), b.end());
    }
  if (auto err = validate_block(blk)) throw SafetensorsError(*err);
  return blk;
}

SafetensorsFile block_to_safetensors(const AffineLnAffine& blk, DType dtype, const BlockNames& names) {
  SafetensorsFile f;
  f.tensors[names.producer + ".weight"] = tensor_of(dtype, {blk.n, blk.d}, blk.A);
  if (!blk.a.empty()) f.tensors[names.producer + ".bias"] = tensor_of(dtype, {blk.n}, blk.a);
  if (!blk.gamma.empty()) f.tensors[names.norm + ".weight"] = tensor_of(dtype, {blk.n}, blk.gamma);
  if (!blk.beta.empty()) f.tensors[names.norm + ".bias"] = tensor_of(dtype, {blk.n}, blk.beta);
  const auto rows = blk.consumers();
  if (rows.size() != names.consumers.size()) throw SafetensorsError("consumer names and consumer sizes differ in number");
  int64_t start = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto w0 = blk.W.begin() + start * blk.n, w1 = w0 + rows[i] * blk.n;
    f.tensors[names.consumers[i] + ".weight"] = tensor_of(dtype, {rows[i], blk.n}, {w0, w1});
    if (!blk.b.empty())
      f.tensors[names.consumers[i] + ".bias"] = tensor_of(dtype, {rows[i]}, {blk.b.begin() + start, blk.b.begin() + start + rows[i]});
    start += rows[i];
  }
  return f;
}

SafetensorsFile contracted_to_safetensors(const ContractedBlock& k, const BlockNames& names) {
  SafetensorsFile f;
  const int64_t cols = k.d + 1;
  f.tensors["R"] = tensor_of(k.storage, {k.k, cols}, k.R);
  if (k.consumer_rows.size() != names.consumers.size()) throw SafetensorsError("consumer names and consumer sizes differ in number");
  int64_t start = 0;
  for (size_t i = 0; i < k.consumer_rows.size(); ++i) {
    const int64_t rows = k.consumer_rows[i];
    f.tensors["D." + names.consumers[i]] =
        tensor_of(k.storage, {rows, cols}, {k.D.begin() + start * cols, k.D.begin() + (start + rows) * cols});
    f.tensors["c." + names.consumers[i]] = tensor_of(k.storage, {rows}, {k.c.begin() + start, k.c.begin() + start + rows});
    start += rows;
  }
  f.metadata = {{"format", "normcheck-qr-contraction-v1"},
                {"formula", "f = D [x; 1] / sqrt(|R [x; 1]|^2 / n + eps) + c"},
                {"n", std::to_string(k.n)},
                {"eps", fmt::format("{:a}", k.eps)},
                {"d", std::to_string(k.d)},
                {"k", std::to_string(k.k)},
                {"consumers", fmt::format("{}", fmt::join(names.consumers, ","))}};
  return f;
}

}  // namespace normcheck
