#pragma once
/// The built-in sections (one file each), listed once in sections/registry.cpp.
#include "sections/section.hpp"

namespace normcheck::sections {

const Section& per_op_section();       ///< LayerNorm/RMSNorm forward and backward records (top level)
const Section& block_section();        ///< the Linear o RMSNorm block ("rms_block")
const Section& contraction_section();  ///< the QR contraction ("qr_contraction")
const Section& grouped_section();      ///< the grouped norms ("grouped_norm")
const Section& jvp_section();          ///< the LayerNorm JVP ("layernorm_jvp")
const Section& rmsnorm_jvp_section();  ///< the RMSNorm JVP ("rmsnorm_jvp")
const Section& budget_section();       ///< the port-Hamiltonian norm budget ("port_hamiltonian")
const Section& audit_section();        ///< the normalization-axis audits ("axis_audit")
const Section& invariance_section();   ///< batch invariance and determinism ("batch_invariance")

/// The batch_invariance section of `kernels` alone (the Python module's check(..., invariance=True)):
/// runs the checks in this thread and writes report["batch_invariance"] as `run` would; returns
/// whether it passed (always true when `report_only`).
bool run_invariance_of(std::vector<KernelEntry> kernels, uint64_t seed, bool report_only, nlohmann::json& report,
                       const std::string& report_path);

}  // namespace normcheck::sections
