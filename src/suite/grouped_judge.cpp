#include "suite/grouped_judge.hpp"

#include <stdexcept>

#include "bounds/bounds_grouped.hpp"
#include "kernels/grouped_norm.hpp"
#include "kernels/storage_io.hpp"

namespace normcheck {
namespace {

template <class S>
GroupedOutputs run_as(const GroupedNormCase& c, const oracle::GroupedNormLayout& l, bool unbiased) {
  using A = default_accum_t<S>;
  const kernels::GroupPlan plan = kernels::plan_of(l.group_of, l.param_of);
  const auto x = to_storage<S>(c.x), dy = to_storage<S>(c.dy), g = to_storage<S>(c.gamma), b = to_storage<S>(c.beta);
  if (!l.centred) {
    std::vector<S> y(x.size()), dx(x.size()), dg(g.size());
    kernels::grouped_rms_forward<S, A>(plan, x.data(), g.data(), c.eps, y.data());
    kernels::grouped_rms_backward<S, A>(plan, x.data(), g.data(), dy.data(), c.eps, l.params, dx.data(), dg.data());
    GroupedOutputs out;
    out.names = {"y", "dx", "dgamma"};
    out.values = {to_double(y), to_double(dx), to_double(dg)};
    return out;
  }
  auto rm = to_storage<S>(c.running_mean), rv = to_storage<S>(c.running_var);
  std::vector<S> y(x.size()), dx(x.size()), dg(g.size()), db(g.size()), yi(x.size());
  std::vector<A> means, vars;
  kernels::grouped_norm_forward<S, A>(plan, x.data(), g.data(), b.data(), c.eps, y.data(), &means, &vars);
  kernels::grouped_norm_backward<S, A>(plan, x.data(), g.data(), dy.data(), c.eps, l.params, dx.data(), dg.data(), db.data());
  GroupedOutputs out;
  out.names = {"y", "dx", "dgamma", "dbeta"};
  out.values = {to_double(y), to_double(dx), to_double(dg), to_double(db)};
  if (!l.batch_norm) return out;
  const int64_t n = static_cast<int64_t>(x.size()) / l.params;  // entries per channel (batch norm: params are channels)
  const auto inference_rm = rm, inference_rv = rv;  // inference uses the statistics before the step
  kernels::update_running_stats<S, A>(means, vars, unbiased ? n : 1, c.momentum, rm.data(), rv.data());
  kernels::batch_norm_inference<S, A>(l.param_of, x.data(), g.data(), b.data(), inference_rm.data(), inference_rv.data(),
                                      c.eps, yi.data());
  for (auto [name, v] : {std::pair{"running_mean", &rm}, {"running_var", &rv}, {"y_inference", &yi}}) {
    out.names.push_back(name);
    out.values.push_back(to_double(*v));
  }
  return out;
}

const std::vector<CertifiedValue>& reference_named(const oracle::CertifiedGroupedNorm& r, const std::string& name) {
  if (name == "y") return r.y;
  if (name == "dx") return r.dx;
  if (name == "dgamma") return r.dgamma;
  if (name == "dbeta") return r.dbeta;
  if (name == "running_mean") return r.running_mean;
  if (name == "running_var") return r.running_var;
  return r.y_inference;
}

const TensorBound& bound_named(const GroupedBound& b, const std::string& name) {
  if (name == "y") return b.y;
  if (name == "dx") return b.dx;
  if (name == "dgamma") return b.dgamma;
  if (name == "dbeta") return b.dbeta;
  if (name == "running_mean") return b.running_mean;
  if (name == "running_var") return b.running_var;
  return b.y_inference;
}

}  // namespace

oracle::GroupedNormLayout grouped_layout(const GroupedNormCase& c) {
  oracle::GroupedNormLayout l;
  l.group_of = case_groups(c);
  l.param_of = case_params(c);
  l.params = case_param_count(c);
  l.centred = case_centred(c);
  for (int64_t g : l.group_of) l.groups = std::max(l.groups, g + 1);
  l.batch_norm = c.spec.kind == audit::NormKind::batch_norm;
  if (l.batch_norm)  // groups must be numbered like channels for the running statistics
    for (size_t e = 0; e < l.group_of.size(); ++e)
      if (l.group_of[e] != l.param_of[e]) throw std::logic_error("batch norm groups not in channel order");
  return l;
}

GroupedOutputs run_grouped_kernel(const GroupedNormCase& c, bool unbiased_running_var) {
  if (auto err = validate_grouped_case(c)) throw std::invalid_argument(*err);
  const oracle::GroupedNormLayout l = grouped_layout(c);
  GroupedOutputs out;
  for_each_dtype([&](auto tag) {
    if (dtype_traits<decltype(tag)>::id == c.dtype) out = run_as<decltype(tag)>(c, l, unbiased_running_var);
  });
  return out;
}

std::vector<std::string> grouped_output_names(const GroupedNormCase& c) {
  std::vector<std::string> names = {"y", "dx", "dgamma"};
  if (case_centred(c)) names.push_back("dbeta");
  if (c.spec.kind == audit::NormKind::batch_norm) names.insert(names.end(), {"running_mean", "running_var", "y_inference"});
  return names;
}

GroupedJudgement judge_grouped(const GroupedNormCase& c, const GroupedOutputs& got) {
  const oracle::GroupedNormLayout l = grouped_layout(c);
  GroupedJudgement j;
  if (got.skipped) return j;
  j.reference = oracle::certified_grouped_norm(c, l, true);
  if (!got.failure.empty()) {  // every output of the case fails, with the reason
    for (const std::string& name : grouped_output_names(c)) {
      OutputJudgement o;
      o.output = name;
      o.failed = true;
      o.kernel_failure = got.failure;
      j.outputs.push_back(std::move(o));
    }
    return j;
  }
  const GroupedBound b = grouped_norm_bound(c, l, j.reference, dtype_info(c.dtype).default_accum, true);
  for (size_t i = 0; i < got.names.size(); ++i)
    j.outputs.push_back(judge_tensor(got.names[i], got.values[i], reference_named(j.reference, got.names[i]),
                                     bound_named(b, got.names[i]), nullptr, c.dtype, 1.0));
  return j;
}

}  // namespace normcheck
