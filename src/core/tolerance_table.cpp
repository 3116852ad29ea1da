#include "core/tolerance_table.hpp"

#include <stdexcept>
#include <string>

namespace normcheck {

// clang-format off
const std::vector<ToleranceEntry>& tolerance_table() {
  static const std::vector<ToleranceEntry> table = {
    {"*", "two_pass", "*", "abs_error/bound", "LN-TWOPASS", StatsModel::two_pass, false, 1.0,
     Expectation::must_pass,
     "sequential two-pass statistics; componentwise bound of docs/bounds.md sections 2-3 with "
     "second-order terms kept, evaluated per element"},
    {"*", "welford", "*", "abs_error/bound", "LN-WELFORD", StatsModel::welford, false, 1.0,
     Expectation::must_pass,
     "Welford running mean/M2; the mean error enters the variance at first order "
     "(docs/bounds.md section 2.2)"},
    {"*", "one_pass", "*", "abs_error/bound", "LN-TWOPASS", StatsModel::two_pass, true, 1.0,
     Expectation::report_only,
     "known weak (E[x^2]-E[x]^2 cancels, error ~ n u kappa^2): judged by the sound two-pass "
     "contract of its dtype so that the harness flags it (docs/bounds.md section 4)"},
    {"*", "two_pass_storage_accum", "*", "abs_error/bound", "LN-TWOPASS", StatsModel::two_pass, true,
     1.0, Expectation::report_only,
     "known weak (f16/bf16 accumulation, u = 2^-11 or 2^-8 times n): judged by the f32-accumulation "
     "contract of its storage dtype so that the harness flags it (docs/bounds.md section 4)"},
  };
  return table;
}

const std::vector<FlagExpectation>& flag_expectations() {
  static const std::vector<FlagExpectation> table = {
    {"one_pass", "*", "large_mean",
     "E[x^2]-E[x]^2 loses all digits when |mean| >> spread (pytorch/pytorch#51102)"},
    {"one_pass", "bf16", "overflow_prone",
     "sum(x^2) overflows the f32 accumulator while sum((x-mean)^2) does not (tenstorrent/tt-metal#55159)"},
    {"one_pass", "f32", "overflow_prone",
     "sum(x^2) overflows the accumulator while sum((x-mean)^2) does not (tenstorrent/tt-metal#55159)"},
    {"one_pass", "f64", "overflow_prone",
     "sum(x^2) overflows the accumulator while sum((x-mean)^2) does not"},
    {"two_pass_storage_accum", "f16", "*",
     "sums in f16 lose ~n*2^-11 relative and overflow beyond 65504 (onnxruntime#29034)"},
    {"two_pass_storage_accum", "bf16", "*",
     "sums in bf16 lose ~n*2^-8 relative (karpathy/llm.c#428)"},
  };
  return table;
}
// clang-format on

namespace {
bool matches(std::string_view pattern, std::string_view value) { return pattern == "*" || pattern == value; }
}  // namespace

const ToleranceEntry& tolerance_for(const KernelEntry& k) {
  for (const auto& t : tolerance_table())
    if (matches(t.op, op_name(k.op)) && t.variant == k.variant &&
        matches(t.storage, dtype_info(k.storage).name))
      return t;
  throw std::logic_error("tolerance table has no entry for variant " + k.variant);
}

BoundModel bound_model_for(const ToleranceEntry& t, const KernelEntry& k) {
  const DType accum = t.bound_uses_default_accum ? dtype_info(k.storage).default_accum : k.accum;
  return BoundModel{t.stats, k.storage, accum};
}

}  // namespace normcheck
