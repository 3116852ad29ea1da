// normcheck audit-axes: the declared normalization's groups, entries, parameters and running
// statistics for a shape and layout, and (with --kernel) what the kernel actually reduces over.
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/audit_report.hpp"
#include "cli/commands.hpp"
#include "external/exec.hpp"
#include "report/report.hpp"

namespace normcheck::cli {
namespace {

audit::TensorSpec tensor_of(const AuditOptions& o) {
  const auto layout = audit::parse_layout(o.layout);
  if (!layout) throw std::invalid_argument(fmt::format("unknown layout '{}' (dense, nchw, nhwc, sequence)", o.layout));
  return {*layout, o.shape};
}

audit::NormSpec spec_of(const AuditOptions& o) {
  const auto kind = audit::parse_kind(o.kind);
  if (!kind)
    throw std::invalid_argument(fmt::format(
        "unknown kind '{}' (batch_norm, layer_norm, channel_layer_norm, instance_norm, group_norm, rms_norm)", o.kind));
  audit::NormSpec n{*kind, o.normalized_dims, o.groups};
  n.affine = !o.no_affine;
  n.tied_affine = o.tied_affine;
  n.track_running_stats = !o.no_running_stats;
  return n;
}

void print_record(const audit::AuditRecord& r) {
  const audit::Accounting& a = r.accounting;
  std::printf("tensor %s [%s] = (%s): %lld entries\n", std::string(audit::layout_name(r.tensor.layout)).c_str(),
              fmt::format("{}", fmt::join(audit::axis_names(r.tensor.layout), ", ")).c_str(),
              fmt::format("{}", fmt::join(r.tensor.shape, ", ")).c_str(), static_cast<long long>(a.elements));
  std::printf("declared %s: %s\n", std::string(audit::kind_name(r.declared.kind)).c_str(), a.description.c_str());
  std::printf("  %-34s %lld\n", "reduction groups", static_cast<long long>(a.groups));
  std::printf("  %-34s %lld\n", "entries per group", static_cast<long long>(a.entries_per_group));
  std::printf("  %-34s %lld x %lld = %lld (%s)\n", "groups x entries", static_cast<long long>(a.groups),
              static_cast<long long>(a.entries_per_group), static_cast<long long>(a.groups * a.entries_per_group),
              a.groups * a.entries_per_group == a.elements ? "= entries, ok" : "MISMATCH");
  std::printf("  %-34s %lld\n", "learned parameters (gamma, beta)", static_cast<long long>(a.learned_parameters));
  std::printf("  %-34s %lld\n", "running-statistic scalars", static_cast<long long>(a.running_statistics));
  std::printf("  %-34s (%s)\n", "statistics broadcast shape", fmt::format("{}", fmt::join(a.stats_shape, ", ")).c_str());
  std::printf("  %-34s (%s)\n", "gamma/beta broadcast shape", fmt::format("{}", fmt::join(a.affine_shape, ", ")).c_str());
  if (!r.verdict) return;
  std::printf("kernel %s (%s, %lld probes): %s\n", r.kernel.c_str(), dtype_info(r.dtype).name.data(),
              static_cast<long long>(r.inferred->probes), r.verdict->inferred_words.c_str());
  std::printf("verdict: %s\n", r.verdict->verdict.c_str());
  if (r.affine_verdict)
    std::printf("affine (%lld probes): %s\n", static_cast<long long>(r.affine->probes), r.affine_verdict->verdict.c_str());
  if (!r.verdict->coincidences.empty())
    std::printf("on this shape the kernel's groups are also those of: %s\n",
                fmt::format("{}", fmt::join(r.verdict->coincidences, "; ")).c_str());
}

}  // namespace

int audit_axes_command(const AuditOptions& o) {
  audit::AuditRecord r;
  try {
    const auto dt = parse_dtype(o.dtype);
    if (!dt) throw std::invalid_argument(fmt::format("unknown dtype '{}'", o.dtype));
    const audit::TensorSpec t = tensor_of(o);
    const audit::NormSpec n = spec_of(o);
    if (!(o.exec_timeout > 0) || !std::isfinite(o.exec_timeout))
      throw std::invalid_argument(fmt::format("--exec-timeout must be a finite number > 0, got {}", o.exec_timeout));
    if (!o.exec.empty() || !o.serve.empty()) {
      if (!o.kernel.empty() || (!o.exec.empty() && !o.serve.empty()))
        throw std::invalid_argument("--kernel, --exec and --serve are exclusive");
      if (auto err = audit::validate(t, n)) throw std::invalid_argument(*err);
      const std::vector<std::string> axes = audit::axis_names(t.layout);
      const std::string layout(audit::layout_name(t.layout)), kind(audit::kind_name(n.kind));
      const DType dtype = *dt;
      const external::ExecSpec spec{o.exec.empty() ? o.serve : o.exec, o.exec.empty() ? "serve" : "exec", o.exec_timeout};
      audit::AuditKernel k;
      if (o.exec.empty()) {
        k = external::serve_normalize(spec, t.shape, layout, axes, kind, dtype);
      } else {
        k = [spec, t, layout, axes, kind, dtype](const std::vector<double>& x) {
          return external::exec_normalize(spec, t.shape, layout, axes, kind, dtype, x);
        };
      }
      r = audit::run_audit_with(t, n, k, spec.name, dtype, o.seed);
    } else {
      r = audit::run_audit(t, n, o.kernel, *dt, o.seed);
    }
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitBadInput;
  }
  print_record(r);
  if (!o.out.empty()) {
    write_json_atomically(o.out, {{"format", "normcheck-axis-audit-v1"}, {"record", audit::audit_record_json(r)}});
    std::printf("written: %s\n", o.out.c_str());
  }
  return !r.verdict || r.matches() ? kExitOk : kExitCheckFailed;
}

}  // namespace normcheck::cli
