#include "external/serve_contraction.hpp"

#include <fmt/format.h>

namespace normcheck::external {

FileCall contraction_file_call(const ContractedBlock& k, const ContractionCase& c) {
  FileCall call;
  call.dtype = c.dtype;
  call.manifest = {{"op", "contracted_block"}, {"rows", c.rows}, {"d", k.d}, {"n", k.n}, {"m", k.m}, {"k", k.k},
                   {"eps", k.eps},           {"eps_hex", fmt::format("{:a}", k.eps)},     {"vjp", !c.dy.empty()}};
  call.inputs = {{"x", {c.rows, k.d}, &c.x}, {"D", {k.m, k.d + 1}, &k.D}, {"R", {k.k, k.d + 1}, &k.R}, {"c", {k.m}, &k.c}};
  call.outputs = {{"f", {c.rows, k.m}}};
  if (!c.dy.empty()) {
    call.inputs.push_back({"dy", {c.rows, k.m}, &c.dy});
    call.outputs.push_back({"dx", {c.rows, k.d}});
  }
  return call;
}

AffineLnOutputs contraction_outputs_of(FileCallResult r) {
  AffineLnOutputs o;
  o.failure = std::move(r.failure);
  o.skipped = r.skipped;
  o.f = std::move(r.outputs["f"]);
  o.dx = std::move(r.outputs["dx"]);
  return o;
}

ContractedKernel serve_contraction_kernel(const std::shared_ptr<ServePool>& pool) {
  return [pool](const ContractedBlock& k, const ContractionCase& c) { return contraction_outputs_of(pool->call(contraction_file_call(k, c))); };
}

}  // namespace normcheck::external
