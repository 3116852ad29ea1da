// Fused vs op-by-op LayerNorm backward (issue 20, seed layernorm-derivatives): the op-by-op graph an
// eager autograd engine runs (src/kernels/layernorm_op_by_op.hpp: every primitive's result stored
// in the storage dtype) and the fused two-pass backward, on the default suite's per-op cases (every
// row generator and the worst-case corpus) in f16, bf16, f32 and f64, measured against the
// certified oracle and judged by the dtype's contract bound (LN-TWOPASS-SEQ with the default
// accumulator: the bound a sound fused backward meets). Prints the table docs/layernorm-op-by-op.md
// quotes. The fused kernel never violates it; the op-by-op graph must be flagged where its stored
// intermediates lose more than the contract allows.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "kernels/layernorm_op_by_op.hpp"
#include "kernels/storage_io.hpp"
#include "suite/judge.hpp"
#include "suite/runner.hpp"
#include "suite/suites.hpp"

using namespace normcheck;

namespace {

/// The op-by-op backward as a kernel entry judged exactly as the fused two_pass entry is (its
/// tolerance row: verdict by the dtype's contract).
KernelEntry op_by_op_entry(DType dt) {
  KernelEntry k = *find_kernel(Op::layernorm_backward, "two_pass", dt);
  for_each_dtype([&](auto tag) {
    using S = decltype(tag);
    if (dtype_traits<S>::id != dt) return;
    k.run = [](const LayerNormCase& c) {
      const auto x = to_storage<S>(c.x), g = to_storage<S>(c.gamma), dy = to_storage<S>(c.dy);
      std::vector<S> dx(x.size()), dg(g.size()), db(g.size());
      kernels::layernorm_backward_op_by_op<S>(x.data(), g.data(), dy.data(), c.rows, c.n, c.eps, dx.data(), dg.data(), db.data());
      KernelOutputs out;
      out.dx = to_double(dx);
      out.dgamma = to_double(dg);
      out.dbeta = to_double(db);
      return out;
    };
  });
  return k;
}

struct Tally {
  ErrorAccumulator acc;
  int64_t cases = 0, failed = 0;
  int64_t failed_r3_out_of_range = 0;  ///< failing cases where some row's stored r^3 is inf, 0 or subnormal
  std::map<std::string, int64_t> failed_by_generator;
};

/// Whether some row's r^3, as the op-by-op backward stores it, left the dtype's normal range.
bool r_cubed_out_of_range(const LayerNormCase& c) {
  bool out = false;
  for_each_dtype([&](auto tag) {
    using S = decltype(tag);
    using A = default_accum_t<S>;
    if (dtype_traits<S>::id != c.dtype) return;
    const auto x = to_storage<S>(c.x);
    for (int64_t i = 0; i < c.rows && !out; ++i) {
      const auto row = kernels::op_by_op_detail::forward_row<S, A>(x.data() + i * c.n, c.n, c.eps);
      const A r = num::convert<A>(row.r);
      const double r3 = dtype_traits<S>::to_double(num::convert<S>(r * r * r));
      out = !std::isfinite(r3) || std::fabs(r3) < dtype_info(c.dtype).min_normal;
    }
  });
  return out;
}

}  // namespace

TEST(OpByOp, TheEagerAutogradBackwardAgainstTheFusedOneInEveryDtype) {
  const RunConfig cfg = *suite_config("default");
  std::map<std::tuple<DType, std::string, bool>, Tally> t;  // (dtype, output, op by op)
  for (DType dt : cfg.dtypes) {
    const KernelEntry fused = *find_kernel(Op::layernorm_backward, "two_pass", dt), eager = op_by_op_entry(dt);
    for (size_t g = 0; g < cfg.generators.size(); ++g) {
      const int64_t cases = gen::generator_case_count(cfg.generators[g], dt, cfg.cases_per_generator);
      for (int64_t k = 0; k < cases; ++k) {
        const LayerNormCase c = suite_case(cfg, {dt, g, k});
        const oracle::CertifiedLayerNorm ref = certified_reference(Op::layernorm_forward, c, true);
        for (const bool op_by_op : {false, true})
          for (const OutputJudgement& j : judge_case(op_by_op ? eager : fused, c, ref)) {
            Tally& tally = t[{dt, j.output, op_by_op}];
            tally.acc.merge(j.acc);
            ++tally.cases;
            if (j.failed) {
              ++tally.failed;
              ++tally.failed_by_generator[cfg.generators[g]];
              if (r_cubed_out_of_range(c)) ++tally.failed_r3_out_of_range;
            }
          }
      }
    }
  }
  std::printf("| dtype | output | fused: max ULP (normal) / RMS ULP / max err/bound / failing cases | op-by-op: max ULP (normal) / RMS ULP / max err/bound / failing cases | of which r^3 out of range | op-by-op fails on |\n|---|---|---|---|---|---|\n");
  for (DType dt : cfg.dtypes)
    for (const char* out : {"dx", "dgamma", "dbeta"}) {
      const Tally &f = t[{dt, out, false}], &e = t[{dt, out, true}];
      std::string where;
      for (const auto& [gen, n] : e.failed_by_generator) where += fmt::format("{}{} ({})", where.empty() ? "" : ", ", gen, n);
      std::printf("| %s | %s | %.3g / %.3g / %.3g / %lld of %lld | %.3g / %.3g / %.3g / %lld of %lld | %lld | %s |\n", dtype_info(dt).name.data(),
                  out, f.acc.max_ulp_normal(), f.acc.rms_ulp(), f.acc.max_bound_ratio(), static_cast<long long>(f.failed),
                  static_cast<long long>(f.cases), e.acc.max_ulp_normal(), e.acc.rms_ulp(), e.acc.max_bound_ratio(),
                  static_cast<long long>(e.failed), static_cast<long long>(e.cases), static_cast<long long>(e.failed_r3_out_of_range),
                  where.empty() ? "-" : where.c_str());
      EXPECT_EQ(f.failed, 0) << dtype_info(dt).name << " " << out;  // the fused kernel is the contract's own arithmetic
      EXPECT_EQ(e.cases, f.cases);
    }
  // The harness flags the op-by-op graph: its dx in every dtype (the stored r^3 of rsqrt's derivative
  // and the stored intermediates), its dgamma where the per-element products dy z are stored in a
  // narrower type than the fused kernel accumulates them (f16, bf16); dbeta is the same sum in both.
  for (DType dt : cfg.dtypes) {
    EXPECT_GT((t[{dt, "dx", true}].failed), 0) << dtype_info(dt).name;
    EXPECT_EQ((t[{dt, "dbeta", true}].failed), 0) << dtype_info(dt).name;
    if (dt == DType::f16 || dt == DType::bf16) {
      EXPECT_GT((t[{dt, "dgamma", true}].failed), 0) << dtype_info(dt).name;
    }
  }
}
