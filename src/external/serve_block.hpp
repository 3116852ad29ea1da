#pragma once
/// The Linear∘RMSNorm block (the block suite) through serve mode: op "linear_rmsnorm".
#include <string>
#include <vector>

#include "external/exec.hpp"
#include "external/serve.hpp"
#include "kernels/block_registry.hpp"

namespace normcheck::external {

/// One block kernel per dtype calling a serve-mode command (kernel "serve:<name>"), judged by the
/// bound of `form` ("composed" or "deferred": what the kernel computes, docs/bounds.md section 11).
std::vector<BlockKernelEntry> serve_block_kernels(const std::shared_ptr<ServePool>& pool, const std::string& form,
                                                  const std::vector<DType>& dtypes);

/// A block case's call: inputs x, g, w, dy and b (when the block has a bias), outputs y, dx, dw, dg.
FileCall block_file_call(const RmsBlockCase& c, const std::string& form);

/// The block outputs of a finished call (plugin or serve), with its failure or skip.
BlockOutputs block_outputs_of(FileCallResult r);

}  // namespace normcheck::external
