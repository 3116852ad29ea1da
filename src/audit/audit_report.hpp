#pragma once
/// Axis-audit records as JSON (for `normcheck audit-axes --out` and the run report's
/// "axis_audit" section) and the run's standard audit set.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/infer.hpp"

namespace normcheck::audit {

/// The accounting of a declared normalization.
nlohmann::json accounting_json(const TensorSpec& t, const NormSpec& n, const Accounting& a);

/// One audit: the declared accounting and, when a kernel was probed, what it does and the verdict.
struct AuditRecord {
  TensorSpec tensor;
  NormSpec declared;
  Accounting accounting;
  std::string kernel;  ///< empty: accounting only
  bool planted = false;
  DType dtype = DType::f32;
  std::optional<InferredGroups> inferred;
  std::optional<AuditVerdict> verdict;
  /// Along which axes gamma and beta are applied (built-in kernels with learned parameters declared).
  std::optional<InferredAffine> affine;
  std::optional<AffineVerdict> affine_verdict;
  std::string failure;  ///< an external kernel's call failed while probing: no verdict, not as expected
  /// A planted kernel must mismatch (its groups, unless the shape makes them coincide, or its
  /// affine axes), a correct one match (groups and affine axes).
  bool as_expected() const;
  /// Groups and (where probed) affine axes as declared.
  bool matches() const { return verdict && verdict->match && (!affine_verdict || affine_verdict->match); }
};

AuditRecord run_audit(const TensorSpec& t, const NormSpec& declared, const std::string& kernel, DType dtype, uint64_t seed);

/// Infers along which axes `kernel` applies gamma and beta (the record's declared normalization,
/// tensor and dtype) and compares them with the declared ones (record fields affine, affine_verdict).
void add_affine_audit(AuditRecord& r, const AffineAuditKernel& kernel, uint64_t seed);

/// The same with a kernel given as a function (an external kernel through the exec protocol).
AuditRecord run_audit_with(const TensorSpec& t, const NormSpec& declared, const AuditKernel& kernel, const std::string& name,
                           DType dtype, uint64_t seed);

nlohmann::json audit_record_json(const AuditRecord& r);

/// The run's audit cases: the seed's dense (2,3) and image (2,3,4,4) cases and an NHWC, a sequence
/// and a group-norm case, each a tensor and a declared normalization.
std::vector<std::pair<TensorSpec, NormSpec>> standard_audit_cases();
/// The dtypes the run probes in.
std::vector<DType> standard_audit_dtypes();

/// The run's audit set: every standard case with its correct kernel and every applicable planted
/// kernel, in every standard dtype.
std::vector<AuditRecord> standard_audits(uint64_t seed);

/// Every record as expected.
bool audits_passed(const std::vector<AuditRecord>& records);

}  // namespace normcheck::audit
