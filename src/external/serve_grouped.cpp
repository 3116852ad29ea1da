#include "external/serve_grouped.hpp"

#include <memory>

#include <fmt/format.h>

#include "core/axes.hpp"
#include "external/serve.hpp"

namespace normcheck::external {
FileCall grouped_file_call(const GroupedNormCase& c) {
  const std::vector<int64_t>& shape = c.tensor.shape;
  const std::vector<int64_t> per_channel{case_channel_count(c)}, params = case_param_shape(c);
  FileCall call;
  call.dtype = c.dtype;
  call.manifest = {{"op", "grouped_norm"},
                   {"kind", std::string(audit::kind_name(c.spec.kind))},
                   {"layout", std::string(audit::layout_name(c.tensor.layout))},
                   {"shape", shape},
                   {"axes", audit::axis_names(c.tensor.layout)},
                   {"channel_axis", audit::channel_axis(c.tensor.layout)},
                   {"groups", c.spec.groups},
                   {"normalized_dims", c.spec.normalized_dims},
                   {"eps", c.eps},
                   {"eps_hex", fmt::format("{:a}", c.eps)},
                   {"momentum", c.momentum},
                   {"momentum_hex", fmt::format("{:a}", c.momentum)}};
  call.inputs = {{"x", shape, &c.x}, {"dy", shape, &c.dy}, {"gamma", params, &c.gamma}};
  call.outputs = {{"y", shape}, {"dx", shape}, {"dgamma", params}};
  if (case_centred(c)) {  // RMSNorm has no beta
    call.inputs.push_back({"beta", params, &c.beta});
    call.outputs.push_back({"dbeta", params});
  }
  if (c.spec.kind == audit::NormKind::batch_norm) {
    call.inputs.push_back({"running_mean", per_channel, &c.running_mean});
    call.inputs.push_back({"running_var", per_channel, &c.running_var});
    call.outputs.insert(call.outputs.end(), {{"running_mean", per_channel}, {"running_var", per_channel}, {"y_inference", shape}});
  }
  return call;
}

GroupedOutputs grouped_outputs_of(const FileCall& call, FileCallResult r) {
  GroupedOutputs out;
  out.failure = std::move(r.failure);
  out.skipped = r.skipped;
  if (out.failure.empty() && !out.skipped)
    for (const auto& [name, shape] : call.outputs) {
      out.names.push_back(name);
      out.values.push_back(std::move(r.outputs[name]));
    }
  return out;
}

std::function<GroupedOutputs(const GroupedNormCase&)> serve_grouped_kernel(const std::shared_ptr<ServePool>& pool) {
  return [pool](const GroupedNormCase& c) {
    const FileCall call = grouped_file_call(c);
    return grouped_outputs_of(call, pool->call(call));
  };
}

}  // namespace normcheck::external
