#include "external/serve_block.hpp"

#include <memory>

#include <fmt/format.h>

#include "external/serve.hpp"

namespace normcheck::external {
FileCall block_file_call(const RmsBlockCase& c, const std::string& form) {
  FileCall call;
  call.dtype = c.dtype;
  call.manifest = {{"op", "linear_rmsnorm"}, {"form", form},       {"rows", c.rows}, {"n", c.n},
                   {"m", c.m},               {"eps", c.eps},       {"eps_hex", fmt::format("{:a}", c.eps)},
                   {"bias", !c.b.empty()}};
  call.inputs = {{"x", {c.rows, c.n}, &c.x}, {"g", {c.n}, &c.g}, {"w", {c.m, c.n}, &c.w}, {"dy", {c.rows, c.m}, &c.dy}};
  if (!c.b.empty()) call.inputs.push_back({"b", {c.m}, &c.b});
  call.outputs = {{"y", {c.rows, c.m}}, {"dx", {c.rows, c.n}}, {"dw", {c.m, c.n}}, {"dg", {c.n}}};
  return call;
}

BlockOutputs block_outputs_of(FileCallResult r) {
  BlockOutputs o;
  o.failure = std::move(r.failure);
  o.skipped = r.skipped;
  o.y = std::move(r.outputs["y"]);
  o.dx = std::move(r.outputs["dx"]);
  o.dw = std::move(r.outputs["dw"]);
  o.dg = std::move(r.outputs["dg"]);
  return o;
}

std::vector<BlockKernelEntry> serve_block_kernels(const std::shared_ptr<ServePool>& pool, const std::string& form,
                                                  const std::vector<DType>& dtypes) {
  const ExecSpec& spec = pool->spec();
  std::vector<BlockKernelEntry> out;
  for (DType dt : dtypes)
    out.push_back({spec.name, dt, dtype_info(dt).default_accum, false,
                   [pool, form](const RmsBlockCase& c) { return block_outputs_of(pool->call(block_file_call(c, form))); },
                   pool->kernel_name(), form});
  return out;
}

}  // namespace normcheck::external
