#include "bounds/tolerance_table.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace normcheck {

// clang-format off
const std::vector<ToleranceEntry>& tolerance_table() {
  static const std::vector<ToleranceEntry> table = {
    {"two_pass", "abs_error/bound", StatsModel::two_pass, SumOrder::sequential, false, 1.0,
     Expectation::must_pass,
     "sequential two-pass statistics; componentwise bound LN-TWOPASS-SEQ of docs/bounds.md sections 2-3, "
     "second-order terms kept, evaluated per element"},
    {"two_pass_pairwise", "abs_error/bound", StatsModel::two_pass, SumOrder::pairwise, false, 1.0,
     Expectation::must_pass,
     "pairwise row sums: gamma_{ceil(log2 n)} replaces gamma_{n-1} (LN-TWOPASS-PAIRWISE, section 2.1)"},
    {"welford", "abs_error/bound", StatsModel::welford, SumOrder::sequential, false, 1.0,
     Expectation::must_pass,
     "Welford running mean/M2; the mean error enters the variance at first order (LN-WELFORD-SEQ, "
     "section 2.2)"},
    {"two_pass_blocked", "abs_error/bound", StatsModel::two_pass, SumOrder::blocked, false, 1.0,
     Expectation::must_pass,
     "two-pass statistics, every row sum in blocks of 32 summed sequentially and a pairwise tree over the blocks, as a GPU "
     "thread block reduces: gamma_D with D = min(n, 32) - 1 + ceil(log2 ceil(n / 32)) (LN-TWOPASS-BLOCKED, section 2.7.1)"},
    {"welford_chunked", "abs_error/bound", StatsModel::welford_merge, SumOrder::blocked, false, 1.0,
     Expectation::must_pass,
     "Welford over chunks of 32, the chunks merged by Chan's formula in a pairwise tree (PyTorch's WelfordOps::combine): "
     "LN-WELFORDMERGE-BLOCKED, the Welford-merge class bound at the tree's depth (section 2.7)"},
    {"one_pass", "abs_error/bound", StatsModel::one_pass, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak (E[x^2]-E[x]^2 cancels, error ~ n u kappa^2): must satisfy its own LN-ONEPASS-SEQ "
     "bound, judged by the sound two-pass contract of its dtype so that the harness flags it (section 4)"},
    {"two_pass_storage_accum", "abs_error/bound", StatsModel::two_pass, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak (f16/bf16 accumulation): must satisfy LN-TWOPASS-SEQ with u_acc = u_storage, judged "
     "by the f32-accumulation contract of its storage dtype so that the harness flags it (section 4)"},
    {"op_by_op", "abs_error/bound", StatsModel::op_by_op, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak: LayerNorm as an eager autograd engine runs it, every primitive's result (mean, x - mean, squares, "
     "variance, rsqrt, r^3, each gradient) stored in the storage dtype; must satisfy its own LN-OPBYOP-SEQ bound, "
     "judged by the fused two-pass contract of its dtype so that the harness flags it (section 4.5)"},
    {"rms", "abs_error/bound", StatsModel::rms, SumOrder::sequential, false, 1.0, Expectation::must_pass,
     "RMSNorm, sum of squares, rsqrt and products in the accumulator: RMS-SEQ (section 10)"},
    {"rms_sumsq_storage", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak: sum of squares in f16/bf16 (onnxruntime#29034); own bound RMS-SEQ+SUMSQ-STORAGE",
     kRmsSumsqStorage},
    {"rms_invrms_bf16", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0,
     Expectation::report_only, "known weak: r rounded to bf16 (amd/IRON PR #139); own bound RMS-SEQ+RSTD-BF16",
     kRmsRstdBf16},
    {"rms_xr_bf16", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak: x r rounded to bf16 before the gain multiply (vllm-xpu-kernels PR #536); own bound "
     "RMS-SEQ+XR-BF16", kRmsXrBf16},
    {"rms_dg_bf16", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0,
     Expectation::report_only,
     "known weak: dg accumulated in bf16 (karpathy/llm.c#428, Liger-Kernel PR #950); own bound RMS-SEQ+DG-BF16",
     kRmsDgBf16},
    {"external_layernorm", "abs_error/bound", StatsModel::two_pass, SumOrder::sequential, false, 1.0,
     Expectation::must_pass,
     "a plugin kernel (include/normcheck/plugin.h): judged by the sound contract of its dtype, LN-TWOPASS-SEQ "
     "with the default accumulator (f32 for f16/bf16); its own arithmetic is unknown, so own = verdict"},
    {"external_layernorm_welford", "abs_error/bound", StatsModel::welford_merge, SumOrder::sequential, false, 1.0,
     Expectation::must_pass,
     "an external kernel declaring the Welford class (its own declaration or --contract welford): judged by "
     "LN-WELFORDMERGE-ANY, any tree of Welford partials merged by Chan's formula, FMA allowed (section 2.7)"},
    {"gemma_rms", "abs_error/bound", StatsModel::rms, SumOrder::sequential, false, 1.0, Expectation::must_pass,
     "Gemma's RMSNorm, y = x r (1 + w): RMSNorm in the accumulator with the gain 1 + w formed there: RMS-SEQ+GAIN-OFFSET "
     "(section 10.6)",
     kRmsGainOffset},
    {"gemma_gain_storage", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0, Expectation::report_only,
     "known weak: Gemma's gain 1 + w rounded to the storage dtype (f16/bf16), the low bits of w lost; own bound "
     "RMS-SEQ+GAIN-OFFSET-STORAGE, judged by RMS-SEQ+GAIN-OFFSET so that the harness flags it (section 10.6)",
     kRmsGainOffset | kRmsGainStorage},
    {"external_gemma_rmsnorm", "abs_error/bound", StatsModel::rms, SumOrder::sequential, false, 1.0, Expectation::must_pass,
     "an external Gemma RMSNorm kernel (serve, exec, Python): judged by RMS-SEQ+GAIN-OFFSET with the default accumulator "
     "of its dtype",
     kRmsGainOffset},
    {"external_rmsnorm", "abs_error/bound", StatsModel::rms, SumOrder::sequential, false, 1.0, Expectation::must_pass,
     "a plugin kernel: judged by RMS-SEQ with the default accumulator of its dtype"},
    {"ln_truncate", "abs_error/bound", StatsModel::two_pass, SumOrder::sequential, true, 1.0, Expectation::report_only,
     "planted: LayerNorm in a wider type, outputs truncated toward zero; judged by the sound contract of its dtype and "
     "the bias statistic (section 16), which must flag it"},
    {"ln_round_away", "abs_error/bound", StatsModel::two_pass, SumOrder::sequential, true, 1.0, Expectation::report_only,
     "planted: LayerNorm in a wider type, outputs rounded away from zero; judged like ln_truncate (section 16)"},
    {"rms_truncate", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0, Expectation::report_only,
     "planted: RMSNorm in a wider type, outputs truncated toward zero; judged by RMS-SEQ and the bias statistic (section 16)"},
    {"rms_round_away", "abs_error/bound", StatsModel::rms, SumOrder::sequential, true, 1.0, Expectation::report_only,
     "planted: RMSNorm in a wider type, outputs rounded away from zero; judged like rms_truncate (section 16)"},
  };
  return table;
}

const std::vector<BlockToleranceEntry>& block_tolerance_table() {
  static const std::vector<BlockToleranceEntry> table = {
    {"composed", BlockForm::composed, 1.0, Expectation::must_pass,
     "RMSNorm kernel storing u, GEMM, GEMM storing du, RMSNorm backward: BLOCK-COMPOSED (section 11.2)"},
    {"deferred", BlockForm::deferred, 1.0, Expectation::must_pass,
     "W_g stored, r in the GEMM epilogue, dx from the stored y with the correction scalar; the "
     "cancellation factor (|t1| + |t2|) / |t1 - t2| enters through the magnitudes: BLOCK-DEFERRED (section 11.3)"},
    {"deferred_bias_in_correction", BlockForm::deferred, 1.0, Expectation::report_only,
     "planted defect: <dy, y> instead of <dy, y - b> in the correction; judged by BLOCK-DEFERRED so that "
     "the harness flags it (section 11.4)"},
  };
  return table;
}

const std::vector<BudgetToleranceEntry>& budget_tolerance_table() {
  static const std::vector<BudgetToleranceEntry> table = {
    {"cayley_solve", "orthogonality_defect", 1.0, Expectation::must_pass,
     "certified ||C^T C - I||_F of the stored C <= 2e + e^2, e the a priori ||C^ - C||_F of LU with partial "
     "pivoting (PH-CAYLEY-SOLVE, docs/bounds.md section 14.2); entries |C^_ij - C_ij| <= e"},
    {"cayley_explicit_inverse", "orthogonality_defect", 1.0, Expectation::must_pass,
     "explicit inverse X = M^-1 then C = X N: e adds gamma_n ||X^||_F ||N^||_F and ||X^ - M^-1|| ||N^|| "
     "(PH-CAYLEY-INVERSE, section 14.2)"},
    {"cayley_half_step", "orthogonality_defect", 1.0, Expectation::report_only,
     "planted defect (I - hS/2)^-1 (I + hS): judged by PH-CAYLEY-SOLVE so that the harness flags it (section 14.6)"},
    {"dissipation", "entrywise_error", 1.0, Expectation::must_pass,
     "Lambda = H diag(tanh theta) H entrywise, (magnitude, error) pairs with tanh within 8 u (PH-DISSIPATION, "
     "section 14.3)"},
    {"dissipation_hardtanh", "entrywise_error", 1.0, Expectation::report_only,
     "planted defect clamp(theta, -1, 1): judged by PH-DISSIPATION so that the harness flags it (section 14.6)"},
    {"stream", "forward_error", 1.0, Expectation::must_pass,
     "||x^_L - x_L||_2 <= e_L, e_{t+1} = lambda e_t + (eps_Lambda c2 + lambda eps_C) ||x^_t|| + r_t "
     "(PH-STREAM-FORWARD, section 14.5)"},
    {"stream", "fp_budget", 1.0, Expectation::must_pass,
     "||x^_t|| <= B^_t, B^_{t+1} = a_t B^_t + b_t: the floating-point port budget (PH-BUDGET-FP, section 14.4)"},
    {"ph_step_residual_leak", "fp_budget", 1.0, Expectation::report_only,
     "planted defect x + Lambda C x + h B u (residual connection left in): its stream is judged by the "
     "'stream' rows PH-BUDGET-FP and PH-STREAM-FORWARD of ph_step so that the harness flags it (section 14.6)"},
    {"oracle", "exact_budget", 1.0, Expectation::must_pass,
     "certified ||x_t|| <= ||x_0|| + sum_s h ||B_s u_s|| (the theorem, section 14.1)"},
    {"oracle", "exact_grad_budget", 1.0, Expectation::must_pass,
     "certified backward decay ||g_t|| <= ||g_L|| and port gradients ||h B_t^T g_{t+1}|| <= h ||B_t||_F ||g_L|| "
     "(the seed's backward claim, section 14.7)"},
    {"stream_vjp", "fp_grad_budget", 1.0, Expectation::must_pass,
     "||g^_t|| <= G^_t, G^_t = a'_t G^_{t+1} + b'_t: the floating-point gradient budget of ph_step_vjp (PH-GRAD-FP, "
     "section 14.7)"},
    {"stream_vjp", "port_grad_budget", 1.0, Expectation::must_pass,
     "||g^u_t|| <= (1+u_s)(1+u_a)(1+gamma_n) h ||B_t||_F G^_{t+1} + underflow: port gradients of ph_step_vjp (PH-GRAD-FP, "
     "section 14.7)"},
    {"stream_vjp", "backward_error", 1.0, Expectation::must_pass,
     "||g^_0 - g_0||_2 <= e_0, e_t = lambda e_{t+1} + (eps_Lambda c2 + lambda eps_C) ||g^_{t+1}|| + r_t "
     "(PH-STREAM-BACKWARD, section 14.7)"},
    {"ph_step_vjp_untransposed", "backward_error", 1.0, Expectation::report_only,
     "planted defect C instead of C^T (norm-preserving, invisible to every budget): judged by the 'stream_vjp' row "
     "PH-STREAM-BACKWARD of ph_step_vjp so that the harness flags it (section 14.7)"},
    {"ph_step_vjp_residual_leak", "fp_grad_budget", 1.0, Expectation::report_only,
     "planted defect g + C^T Lambda g (the residual's identity Jacobian left in): judged by the 'stream_vjp' rows "
     "PH-GRAD-FP and PH-STREAM-BACKWARD of ph_step_vjp so that the harness flags it (section 14.7)"},
    {"stream", "slack", 0.01, Expectation::report_only,
     "the depth at which B^_t / B_t - 1 first exceeds 1 % is reported per dtype (section 14.4); not a verdict"},
  };
  return table;
}

const BudgetToleranceEntry& budget_tolerance_for(std::string_view variant, std::string_view property) {
  for (const auto& t : budget_tolerance_table())
    if (t.variant == variant && t.property == property) return t;
  throw std::logic_error("tolerance table has no port-Hamiltonian entry for " + std::string(variant) + "/" +
                         std::string(property));
}

const std::vector<FlagExpectation>& flag_expectations() {
  // The last field is the per-case catch rate over the witness generators, measured on the nightly suite
  // (50 cases per generator, rounded down to 0.05; docs/bounds.md section 4.4): a miss is required to be
  // impossible only with enough witness cases (required_witness_cases).
  static const std::vector<FlagExpectation> table = {
    {"one_pass", "*", "large_mean",
     "E[x^2]-E[x]^2 loses all digits when |mean| >> spread (pytorch/pytorch#51102)", "*", "", 0.75},
    {"one_pass", "bf16", "overflow_prone",
     "sum(x^2) overflows the f32 accumulator while sum((x-mean)^2) does not (tenstorrent/tt-metal#55159)", "*", "", 0.95},
    {"one_pass", "f32", "overflow_prone",
     "sum(x^2) overflows the accumulator while sum((x-mean)^2) does not (tenstorrent/tt-metal#55159)", "*", "", 0.95},
    {"one_pass", "f64", "overflow_prone",
     "sum(x^2) overflows the accumulator while sum((x-mean)^2) does not", "*", "", 0.95},
    {"two_pass_storage_accum", "f16", "*",
     "sums in f16 lose ~n*2^-11 relative and overflow beyond 65504 (onnxruntime#29034)", "*", "n_equals_1", 0.8},
    {"two_pass_storage_accum", "bf16", "*",
     "sums in bf16 lose ~n*2^-8 relative (karpathy/llm.c#428)", "*", "n_equals_1", 0.8},
    {"op_by_op", "f16", "*",
     "every intermediate stored in f16: r^3 overflows for variance below ~6e-4, dd1 + dd2 and dd + dmu/n cancel after "
     "11-bit stores (seed layernorm-derivatives; docs/layernorm-op-by-op.md)", "*", "", 0.7},
    {"op_by_op", "bf16", "*", "every intermediate stored in bf16: 8-bit stores before the cancelling sums of dx and the "
     "products dy z before the dgamma sum (docs/layernorm-op-by-op.md)", "*", "n_equals_1", 0.6},
    {"op_by_op", "f32", "overflow_prone", "r^3 = (v + eps)^-1.5, an intermediate the fused backward never forms, leaves "
     "the f32 range (docs/layernorm-op-by-op.md)", "layernorm_backward", "", 0.85},
    {"op_by_op", "f64", "overflow_prone", "r^3 leaves the f64 range (docs/layernorm-op-by-op.md)", "layernorm_backward", "",
     0.95},
    {"rms_sumsq_storage", "f16", "overflow_prone", "x^2 overflows f16 beyond |x| ~ 256 (onnxruntime#29034)", "*", "", 0.95},
    {"rms_sumsq_storage", "bf16", "*", "sum of squares in bf16 loses ~n*2^-8 relative", "*",
     "constant overflow_prone subnormal", 0.85},
    {"rms_invrms_bf16", "f16", "*", "r in bf16 (2^-8) is 8x coarser than f16 output rounding (amd/IRON PR #139)", "*", "",
     0.6},
    {"rms_invrms_bf16", "f32", "*", "r in bf16 (2^-8) against f32 output rounding", "*", "overflow_prone", 0.75},
    {"rms_invrms_bf16", "f64", "*", "r in bf16 (2^-8) against f64 output rounding", "*", "overflow_prone", 0.75},
    {"rms_xr_bf16", "f16", "*", "x r in bf16 before the gain multiply (vllm-xpu-kernels PR #536)", "*",
     "constant eps_dominant n_equals_1", 0.9},
    {"rms_xr_bf16", "f32", "*", "x r in bf16 before the gain multiply", "*",
     "constant large_mean_extreme n_equals_1 overflow_prone", 0.7},
    {"rms_xr_bf16", "f64", "*", "x r in bf16 before the gain multiply", "*", "constant overflow_prone", 0.85},
    {"rms_dg_bf16", "*", "*", "dg accumulated in bf16 over rows (karpathy/llm.c#428)", "rmsnorm_backward",
     "constant n_equals_1 overflow_prone", 0.75},
    {"deferred_bias_in_correction", "bf16", "*",
     "the correction scalar must use the pre-bias output y - b (seed: deferred-rmsnorm-backward); the defect, "
     "(r^2/n) <dy, b> x, is caught on about half the biased bf16 cases", "*", "no_bias wide", 0.5},
    {"deferred_bias_in_correction", "f16", "*", "the correction scalar must use the pre-bias output y - b; caught on "
     "85-97 % of biased f16 cases", "*", "no_bias", 0.85},
    {"deferred_bias_in_correction", "f32", "*", "the correction scalar must use the pre-bias output y - b; caught on all "
     "biased f32 cases", "*", "no_bias", 0.95},
    {"deferred_bias_in_correction", "f64", "*", "the correction scalar must use the pre-bias output y - b; caught on all "
     "biased f64 cases", "*", "no_bias", 0.95},
  };
  return table;
}
// clang-format on

bool is_contract_name(std::string_view name) { return name == "auto" || name == "two_pass" || name == "welford"; }

std::optional<BoundModel> looser_contract_model(const KernelEntry& k) {
  if (!is_external_kernel(k) || family_spec(op_family(k.op)).contracts.empty() || !(k.contract.empty() || k.contract == "auto"))
    return std::nullopt;
  return BoundModel{StatsModel::welford_merge, k.storage, dtype_info(k.storage).default_accum, SumOrder::sequential, -1, 0};
}

const ToleranceEntry& tolerance_for(const KernelEntry& k) {
  const FamilySpec& family = family_spec(op_family(k.op));
  std::string variant = k.variant;
  if (is_external_kernel(k)) {  // the family's row; a declared contract other than its first has its own
    variant = family.external_tolerance;
    const bool first_contract = k.contract.empty() || k.contract == "auto" || family.contracts.empty() || k.contract == family.contracts.front();
    if (!first_contract) variant += "_" + k.contract;
  }
  for (const auto& t : tolerance_table())
    if (t.variant == variant) return t;
  throw std::logic_error("tolerance table has no entry for variant " + k.variant);
}

const BlockToleranceEntry& block_tolerance_for(std::string_view variant) {
  for (const auto& t : block_tolerance_table())
    if (t.variant == variant) return t;
  throw std::logic_error("tolerance table has no entry for block variant " + std::string(variant));
}

int64_t required_witness_cases(const FlagExpectation& f) {
  const double rate = std::min(f.catch_rate, 0.95);
  return static_cast<int64_t>(std::ceil(std::log(kFlagMissProbability) / std::log1p(-rate)));
}

BoundModel own_bound_model(const ToleranceEntry& t, const KernelEntry& k) {
  return BoundModel{t.stats, k.storage, k.accum, t.order, -1, t.rms_flags};
}

BoundModel verdict_bound_model(const ToleranceEntry& t, const KernelEntry& k) {
  if (!t.judged_by_contract) return own_bound_model(t, k);
  const StatsModel sound = t.stats == StatsModel::rms ? StatsModel::rms : StatsModel::two_pass;
  // The contract keeps what the op is (the gain offset), not the variant's deviations.
  return BoundModel{sound, k.storage, dtype_info(k.storage).default_accum, SumOrder::sequential, -1,
                    static_cast<uint8_t>(t.rms_flags & kRmsGainOffset)};
}

}  // namespace normcheck
