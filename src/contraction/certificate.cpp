#include "contraction/certificate.hpp"

#include "bounds/bounds_contraction.hpp"
#include "core/rng.hpp"
#include "kernels/contraction_registry.hpp"
#include "io/case_json.hpp"
#include "report/report.hpp"
#include "suite/contraction_judge.hpp"

namespace normcheck {
namespace {

nlohmann::json output_json(const OutputJudgement& j) {
  nlohmann::json o = accumulator_json(j.acc);
  o["worst_index"] = j.worst.index;
  return o;
}

/// The case of the inputs in dtype `dt`, with random cotangents k/16.
ContractionCase case_in(const AffineLnAffine& blk, DType dt, const std::vector<double>& x, int64_t rows, uint64_t seed) {
  ContractionCase c;
  c.dtype = dt;
  c.block = blk;
  c.rows = rows;
  c.x = x;
  Rng rng(seed ^ 0xd1);
  for (int64_t i = 0; i < rows * blk.m; ++i) c.dy.push_back(static_cast<double>(rng.range(-64, 64)) / 16);
  c.generator = "certificate";
  c.seed = seed;
  return c;
}

}  // namespace

std::vector<double> certificate_inputs(int64_t d, const CertificateOptions& o, int64_t& rows) {
  Rng rng(o.seed);
  std::vector<double> x;
  const auto grid_row = [&](double scale) {
    for (int64_t i = 0; i < d; ++i) x.push_back(static_cast<double>(rng.range(-64, 64)) / 16 * scale);
  };
  for (int r = 0; r < o.random_inputs; ++r) grid_row(1);
  x.insert(x.end(), static_cast<size_t>(d), 0.0);  // xbar = e_{d+1}: only the bias column
  grid_row(256);                                   // large: |x| up to 1024
  grid_row(0x1p-6);                                // tiny: the eps term dominates the denominator
  for (int64_t i = 0; i < d; ++i) x.push_back(i == 0 ? 4.0 : 0.0);
  for (int64_t i = 0; i < d; ++i) x.push_back(i % 2 ? -2.0 : 2.0);
  rows = o.random_inputs + 5;
  return x;
}

nlohmann::json contraction_certificate(const AffineLnAffine& blk, DType source, const ContractedBlock& k,
                                       const CertificateOptions& o, bool& passed) {
  int64_t rows = 0;
  const std::vector<double> x = certificate_inputs(blk.d, o, rows);
  const ContractionCase stored = case_in(blk, k.storage, x, rows, o.seed), orig = case_in(blk, source, x, rows, o.seed);
  const oracle::StoredContraction view = stored_view(k);
  const oracle::CoefficientError err = oracle::coefficient_error(blk, view);
  const oracle::CertifiedAffineLn ref = oracle::certified_affine_ln(stored, true);
  const oracle::CertifiedAffineLn ref_orig = source == k.storage ? ref : oracle::certified_affine_ln(orig, true);
  const ContractionBound bound = contracted_bound(stored, view, err, ref, contraction_accum(k.storage));
  const AffineLnOutputs got = run_contracted(k, stored), original = run_original(orig);
  const ContractionBound envelope = original_envelope(orig, contraction_accum(source));  // no a priori bound
  const OutputJudgement f = judge_tensor("f", got.f, ref.f, bound.f, nullptr, k.storage, 1.0);
  const OutputJudgement dx = judge_tensor("dx", got.dx, ref.dx, bound.dx, nullptr, k.storage, 1.0);
  const OutputJudgement of = judge_tensor("f", original.f, ref_orig.f, envelope.f, nullptr, source, 1.0);
  const OutputJudgement odx = judge_tensor("dx", original.dx, ref_orig.dx, envelope.dx, nullptr, source, 1.0);
  passed = !f.failed && !dx.failed && ref.certified && ref_orig.certified;
  const ParameterCounts pc = parameter_counts(blk, o.retained);
  return {
      {"format", "normcheck-contraction-certificate-v1"},
      {"passed", passed},
      {"shape", {{"d", blk.d}, {"n", blk.n}, {"m", blk.m}, {"k", k.k}, {"consumers", k.consumer_rows}}},
      {"eps", hexfloat(blk.eps)},
      {"parameters",
       {{"n_old", pc.n_old},
        {"n_new", pc.n_new},
        {"n_new_separate_r", pc.n_new_separate_r},
        {"n_retained", pc.n_retained},
        {"reduction", pc.reduction()},
        {"growth", pc.n_new > pc.n_old},
        {"formulas", "N_old = n d + n + 2 n + m n + m (present parameters only); N_new = m (d+1) + k (d+1) + m + the retained "
                     "modules' parameters (producer n d + n, LayerNorm 2 n, when other consumers still read them)"}}},
      {"chain", o.chain},
      {"storage",
       {{"dtype", std::string(dtype_info(k.storage).name)},
        {"accumulator", std::string(dtype_info(contraction_accum(k.storage)).name)},
        {"max_abs_coefficient", k.max_abs_coefficient},
        {"max_finite", dtype_info(k.storage).max_finite},
        {"overflow_margin", k.overflow_margin()}}},
      {"coefficient_error",
       {{"max_abs_dD_over_max_abs_D", err.max_rel_D},
        {"max_abs_dG_over_max_abs_TtT", err.max_rel_G},
        {"meaning", "certified max |D_hat - D| / max |D| (float64 conversion and storage rounding) and max |R64^T R64 - T^T T| / max |T^T T| (the float64 QR before storage; the storage rounding of R is bounded exactly)"}}},
      {"inputs",
       {{"random", o.random_inputs},
        {"adversarial", 5},
        {"seed", std::to_string(o.seed)},
        {"description", "random rows k/16 (|k| <= 64); zero; large (16 k); tiny (2^-10 k); one-hot 4; alternating +-2"}}},
      {"oracle",
       {{"precision_bits", std::max(ref.precision_bits, ref_orig.precision_bits)},
        {"certified_max_err_ulps", std::max(ref.max_err_ulps, ref_orig.max_err_ulps)},
        {"certified", ref.certified && ref_orig.certified}}},
      {"contracted", {{"dtype", std::string(dtype_info(k.storage).name)}, {"f", output_json(f)}, {"dx", output_json(dx)}}},
      {"original", {{"dtype", std::string(dtype_info(source).name)}, {"f", output_json(of)}, {"dx", output_json(odx)},
                    {"note", "the original block's own kernel in its source dtype: measured against the oracle, no verdict"}}}};
}

}  // namespace normcheck
