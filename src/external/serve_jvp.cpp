#include "external/serve_jvp.hpp"

#include <fmt/format.h>

namespace normcheck::external {

FileCall jvp_file_call(const LayerNormCase& c, const LayerNormTangents& t, const std::string& op) {
  FileCall call;
  call.dtype = c.dtype;
  call.manifest = {{"op", op}, {"rows", c.rows}, {"n", c.n}, {"eps", c.eps}, {"eps_hex", fmt::format("{:a}", c.eps)}};
  if (op == "rmsnorm_jvp")
    call.inputs = {{"x", {c.rows, c.n}, &c.x}, {"gamma", {c.n}, &c.gamma}, {"dx", {c.rows, c.n}, &t.dx}, {"dgamma", {c.n}, &t.dgamma}};
  else
    call.inputs = {{"x", {c.rows, c.n}, &c.x},       {"gamma", {c.n}, &c.gamma},      {"beta", {c.n}, &c.beta},
                   {"dx", {c.rows, c.n}, &t.dx}, {"dgamma", {c.n}, &t.dgamma}, {"dbeta", {c.n}, &t.dbeta}};
  call.outputs = {{"du", {c.rows, c.n}}};
  return call;
}

JvpOutputs jvp_outputs_of(FileCallResult r) {
  JvpOutputs o;
  o.failure = std::move(r.failure);
  o.skipped = r.skipped;
  o.du = std::move(r.outputs["du"]);
  return o;
}

JvpKernel serve_jvp_kernel(const std::shared_ptr<ServePool>& pool, const std::string& op) {
  return [pool, op](const LayerNormCase& c, const LayerNormTangents& t) { return jvp_outputs_of(pool->call(jvp_file_call(c, t, op))); };
}

}  // namespace normcheck::external
