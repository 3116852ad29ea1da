#pragma once
/// Black-box axis inference: which entries does a kernel normalize together? Move one entry up
/// and down, record which outputs move; one probe pair per group plus one confirmation pair per
/// group. The move is large next to the data (8 sqrt(entries) + 8 spreads), so that every output
/// in the entry's group moves by far more than a rounding step of the dtype even in bf16, and the
/// two directions cover groups of two entries (normalized to +-1, only a change of order moves
/// them); outputs are compared bit for bit (NaN-aware).
#include <cstdint>
#include <string>
#include <vector>

#include "audit/audit_kernels.hpp"

namespace normcheck::audit {

struct InferredGroups {
  std::vector<int64_t> group_of;  ///< canonical group per entry (valid when `partition`)
  bool partition = true;          ///< every probe moved exactly its group (groups are disjoint)
  int64_t probes = 0;             ///< kernel evaluations
  std::vector<std::string> notes; ///< e.g. "entry 7 moves no output", overlaps
};

/// Throws std::invalid_argument when the tensor exceeds 65536 entries (cost: groups x entries).
InferredGroups infer_groups(const AuditKernel& kernel, const TensorSpec& t, DType dtype, uint64_t seed);

/// How a partition uses each memory axis.
struct AxisUse {
  std::vector<std::string> reduced;    ///< every group spans the whole axis
  std::vector<std::string> kept;       ///< every group has one coordinate on the axis
  std::vector<std::string> partial;    ///< in between (group norm's channel blocks, or irregular)
  std::vector<int64_t> partial_block;  ///< per partial axis: coordinates per group when constant, else 0
  std::vector<std::string> size_one;   ///< size-1 axes: reducing over them or not is the same
  int64_t groups = 0, min_entries = 0, max_entries = 0;
};
AxisUse axis_use(const std::vector<int64_t>& group_of, const TensorSpec& t);

/// Words for a partition, e.g. "normalizes over W (24 groups of 4 entries)".
std::string describe(const AxisUse& u);

struct AuditVerdict {
  bool match = false;
  std::string declared_words, inferred_words, verdict;  ///< verdict: one line a user understands
  std::vector<std::string> coincidences;  ///< standard normalizations with the same groups on this shape
  std::vector<std::string> size_one_axes;
};

/// Compares the declared groups with the inferred ones.
AuditVerdict compare_groups(const TensorSpec& t, const NormSpec& declared, const InferredGroups& inferred);

/// Per-entry parameter index of an inferred affine map: >= 0 the index, kNotApplied when no
/// parameter touches the entry, kUndetermined when the probes cannot tell (gamma where the
/// normalized value is 0, or an output that is neither scaled nor shifted as an affine map would).
inline constexpr int64_t kNotApplied = -1, kUndetermined = -2;

/// Black-box inference of which gamma and which beta each entry's output uses: beta by shifting
/// the parameters whose index has bit k set by a power of two B well above the outputs (one probe
/// per bit, plus all of them), gamma by doubling them (y doubles exactly where gamma applies).
/// 3 + 2 ceil(log2 P) probes: the base call, then for gamma and for beta one with all and one per bit (2 + ceil(log2 P) without beta).
struct InferredAffine {
  std::vector<int64_t> gamma_of, beta_of;  ///< per entry (beta_of empty when not probed)
  int64_t probes = 0;
  std::vector<std::string> notes;
};
InferredAffine infer_affine(const AffineAuditKernel& kernel, const TensorSpec& t, int64_t params, bool with_beta, DType dtype,
                            uint64_t seed);

struct AffineVerdict {
  bool match = false;
  std::string declared_words, gamma_words, beta_words;  ///< e.g. "along C (3 values, shared over N, H, W)"
  std::string verdict;  ///< one line: "match: ..." or "MISMATCH: gamma applied along W, declared along C"
};
/// Compares the inferred affine maps with the declared affine index (affine_index_of_entries).
AffineVerdict compare_affine(const TensorSpec& t, const NormSpec& declared, const InferredAffine& inferred);

}  // namespace normcheck::audit
