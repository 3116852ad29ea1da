#pragma once
/// A Linear -> LayerNorm -> Linear block in a safetensors file (PyTorch state_dict names, e.g.
/// an nn.Sequential's "0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"), and the
/// contracted block D, R, c written back.
#include <string>
#include <vector>

#include "kernels/contraction_converter.hpp"
#include "contraction/safetensors.hpp"
#include "core/contraction_case.hpp"

namespace normcheck {

/// Module name prefixes of the block's parts.
struct BlockNames {
  std::string producer = "0", norm = "1";
  std::vector<std::string> consumers = {"2"};
};

/// The block and the dtype of its producer weight; throws SafetensorsError (missing tensors,
/// wrong shapes, mismatched n) with one clear line.
AffineLnAffine block_from_safetensors(const SafetensorsFile& f, const BlockNames& names, double eps, DType& source_dtype);

/// The block's parameters as tensors of `dtype` under `names` (values must be exact in it).
SafetensorsFile block_to_safetensors(const AffineLnAffine& blk, DType dtype, const BlockNames& names);

/// "R" (k x (d+1)), "D.<consumer>" and "c.<consumer>" in the storage dtype, with metadata n, eps
/// (hexfloat), d, k and the consumer names.
SafetensorsFile contracted_to_safetensors(const ContractedBlock& k, const BlockNames& names);

}  // namespace normcheck
