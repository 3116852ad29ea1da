// normcheck bench-audit: the axis audit's cost against the tensor's size, measured (issue 20): group
// inference and affine inference on NCHW tensors growing 4x per step, side by side with one call of
// the kernel they probe, with probes, seconds and the log-log slope of the time against the entries
// (docs/axis-audit.md, "Cost").
#include <cstdio>

#include <fmt/format.h>

#include "audit/audit_kernels.hpp"
#include "audit/infer.hpp"
#include "cli/bench_timing.hpp"
#include "cli/commands.hpp"
#include "cli/parse_names.hpp"
#include "core/rng.hpp"
#include "io/output_files.hpp"

namespace normcheck::cli {
namespace {

struct Kind {
  const char* name;
  audit::NormSpec spec;
};

std::vector<Kind> kinds() {
  audit::NormSpec gn{audit::NormKind::group_norm};
  gn.groups = 4;
  return {{"batch_norm", {audit::NormKind::batch_norm}},
          {"layer_norm (C, H, W)", {audit::NormKind::layer_norm, 3}},
          {"instance_norm", {audit::NormKind::instance_norm}},
          {"group_norm (G = 4)", gn},
          {"channel_layer_norm", {audit::NormKind::channel_layer_norm}}};
}

struct Timed {
  double kernel_s = 0, groups_s = 0, affine_s = 0;
  int64_t group_probes = 0, affine_probes = 0;
};

Timed time_once(const audit::TensorSpec& t, const audit::NormSpec& n, DType dt) {
  Timed r;
  const audit::AuditKernel k = audit::make_audit_kernel("declared", t, n, dt);
  Rng rng(1);
  std::vector<double> x(static_cast<size_t>(audit::account(t, n).elements));
  for (double& v : x) v = round_to_dtype(rng.normal(), dt);
  double start = now_s();
  (void)k(x);
  r.kernel_s = now_s() - start;
  start = now_s();
  r.group_probes = audit::infer_groups(k, t, dt, 1).probes;
  r.groups_s = now_s() - start;
  start = now_s();
  r.affine_probes = audit::infer_affine(audit::make_affine_audit_kernel("declared", t, n, dt), t, audit::affine_parameter_count(t, n),
                                        true, dt, 1).probes;
  r.affine_s = now_s() - start;
  return r;
}

}  // namespace

int bench_audit_command(const BenchAuditOptions& o) {
  const auto dt = parse_dtype(o.dtype);
  if (!dt) {
    print_error(fmt::format("unknown dtype '{}' (f16, bf16, f32, f64)", o.dtype));
    return kExitBadInput;
  }
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-22s %8s %7s %12s %13s %12s %13s %12s %14s\n", "kind", "entries", "groups", "kernel call s", "group probes",
              "groups s", "affine probes", "affine s", "groups / call");
  for (const Kind& kind : kinds()) {
    std::vector<std::pair<double, double>> group_series, affine_series;
    for (int64_t side = 2; side <= o.max_side; side *= 2) {
      const audit::TensorSpec t{audit::Layout::nchw, {2, 8, side, side}};
      std::vector<Timed> runs;
      for (int r = 0; r < o.repeats; ++r) runs.push_back(time_once(t, kind.spec, *dt));
      const auto median = [&](double Timed::*field) {
        std::vector<double> v;
        for (const Timed& r : runs) v.push_back(r.*field);
        return median_of(v);
      };
      const Timed& first = runs.front();
      const int64_t entries = 2 * 8 * side * side, groups = audit::account(t, kind.spec).groups;
      const double kernel_s = median(&Timed::kernel_s), groups_s = median(&Timed::groups_s), affine_s = median(&Timed::affine_s);
      std::printf("%-22s %8lld %7lld %12.3g %13lld %12.3g %13lld %12.3g %14.0f\n", kind.name, static_cast<long long>(entries),
                  static_cast<long long>(groups), kernel_s, static_cast<long long>(first.group_probes), groups_s,
                  static_cast<long long>(first.affine_probes), affine_s, groups_s / kernel_s);
      group_series.push_back({static_cast<double>(entries), groups_s});
      affine_series.push_back({static_cast<double>(entries), affine_s});
      rows.push_back({{"kind", kind.name}, {"entries", entries}, {"groups", groups}, {"kernel_call_s", kernel_s},
                      {"group_probes", first.group_probes}, {"group_inference_s", groups_s}, {"affine_probes", first.affine_probes},
                      {"affine_inference_s", affine_s}});
    }
    std::printf("%-22s slope of seconds against entries (log-log; 1 = linear): group inference %+.2f, affine inference %+.2f\n", kind.name,
                log_log_slope(group_series), log_log_slope(affine_series));
  }
  if (!o.json.empty()) {
    write_json_atomically(o.json, {{"format", "normcheck-bench-audit-v1"}, {"dtype", o.dtype}, {"repeats", o.repeats}, {"rows", rows}});
    std::printf("written: %s\n", o.json.c_str());
  }
  return kExitOk;
}

}  // namespace normcheck::cli
