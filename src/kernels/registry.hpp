#pragma once
/// Type-erased table of the built-in kernels, so the runner and CLI can loop over them.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/layernorm_case.hpp"
#include "core/op_spec.hpp"

namespace normcheck {

/// Kernel results as exact doubles of storage-dtype values (empty vectors when not produced).
struct KernelOutputs {
  std::vector<double> y;
  std::vector<double> dx;
  std::vector<double> dgamma;
  std::vector<double> dbeta;
  std::string failure;   ///< an external kernel crashed, hung or reported an error (outputs empty)
  bool skipped = false;  ///< an external kernel declined the call (unsupported): not judged
};

/// The vector of KernelOutputs that holds the output named `name` (an OpSpec output name); throws
/// std::invalid_argument for another name.
std::vector<double>& output_of(KernelOutputs& out, std::string_view name);
const std::vector<double>& output_of(const KernelOutputs& out, std::string_view name);

struct KernelEntry {
  std::string kernel;   ///< provider: "builtin"
  std::string variant;  ///< "two_pass", "welford", "one_pass", "two_pass_storage_accum"
  Op op;
  DType storage;
  DType accum;
  bool known_weak;  ///< expected to be caught on hard inputs
  std::function<KernelOutputs(const LayerNormCase&)> run;
  /// External LayerNorm kernels: the contract they are judged by, "" or "auto" (two-pass, then the
  /// Welford class), "two_pass" or "welford" (declared by the plugin or chosen with --contract).
  std::string contract{};
};

/// True for kernels loaded through the plugin ABI ("plugin:<name>"), the exec protocol
/// ("exec:<name>"), its serve mode ("serve:<name>") or the Python module ("python:<name>").
inline bool is_external_kernel_name(std::string_view kernel) {
  return kernel.rfind("plugin:", 0) == 0 || kernel.rfind("exec:", 0) == 0 || kernel.rfind("serve:", 0) == 0 ||
         kernel.rfind("python:", 0) == 0;
}
inline bool is_external_kernel(const KernelEntry& k) { return is_external_kernel_name(k.kernel); }

/// The built-in LayerNorm kernels (two_pass, two_pass_pairwise, welford, one_pass, and the
/// storage-precision two_pass for f16/bf16) and RMSNorm kernels (rms and its tracker-bug variants),
/// each forward and backward, for the 4 dtypes, appended to `out`: their families' rows of the op
/// table (ops/family_math.cpp). Every op's built-in kernels: builtin_kernels() in ops/op_kernels.hpp.
void add_layernorm_kernels(std::vector<KernelEntry>& out);
void add_rmsnorm_kernels(std::vector<KernelEntry>& out);

/// Planted kernels that round their outputs toward zero or away from zero (kernels/planted.hpp),
/// variants ln_truncate, ln_round_away, rms_truncate, rms_round_away in f32 and f64: in no suite, judged
/// by the bias calibration (`normcheck bias`) and the tests.
const std::vector<KernelEntry>& planted_directed_kernels();

/// Planted kernels that are accurate but batch-variant or nondeterministic (kernels/planted_invariance.hpp):
/// ln_rowcount_block, ln_aligned_peel (forward and backward) and ln_atomic_dgamma (backward), f32 and f64;
/// in no accuracy suite, judged by the invariance checks (suite/invariance.hpp), which must catch them.
const std::vector<KernelEntry>& planted_invariance_kernels();


}  // namespace normcheck
