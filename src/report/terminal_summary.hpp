#pragma once
/// The terminal summary of a run, one table per section (the JSON report holds everything).
#include <vector>

#include "audit/audit_report.hpp"
#include "suite/block_suite.hpp"
#include "suite/contraction_suite.hpp"
#include "suite/grouped_suite.hpp"
#include "suite/jvp_suite.hpp"
#include "suite/runner.hpp"

namespace normcheck {

/// Prints the per-(op/output, variant, dtype) summary table of a run.
void print_summary(const RunResult& r);

/// Prints the block suite's composed-vs-deferred table per dtype and its verdicts.
void print_block_summary(const BlockSuiteResult& r);

/// Prints the QR-contraction suite: contracted (judged) vs original (measured) per dtype.
void print_contraction_summary(const ContractionSuiteResult& r);

/// Prints the axis audits of a run: correct kernels matched, planted ones caught.
void print_audit_summary(const std::vector<audit::AuditRecord>& records);

/// Prints the grouped-normalization suite per dtype, kind and output.
void print_grouped_summary(const GroupedSuiteResult& r);
void print_jvp_summary(const JvpSuiteResult& r, const char* title);

}  // namespace normcheck
