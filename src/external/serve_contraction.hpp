#pragma once
/// The contracted affine -> LayerNorm -> affine block (the QR-contraction suite) as an external
/// kernel: op "contracted_block" in serve mode, NC_CONTRACTED_BLOCK in the plugin ABI v2. The kernel
/// gets the converter's stored coefficients D (m x (d+1)), R (k x (d+1)), c (m), the original divisor
/// n and eps, and the rows of x (rows x d) and dy (rows x m); it returns f (rows x m) and dx (rows x d).
#include <memory>

#include "kernels/contraction_converter.hpp"
#include "external/serve.hpp"
#include "suite/contraction_judge.hpp"

namespace normcheck::external {

/// A case's call: inputs x, D, R, c and dy (when the case has one), outputs f and dx (with dy).
FileCall contraction_file_call(const ContractedBlock& k, const ContractionCase& c);

/// The outputs of a finished call (plugin or serve), with its failure or skip.
AffineLnOutputs contraction_outputs_of(FileCallResult r);

/// The contracted kernel of a serve-mode command.
ContractedKernel serve_contraction_kernel(const std::shared_ptr<ServePool>& pool);

}  // namespace normcheck::external
