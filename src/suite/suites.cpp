#include "suite/suites.hpp"

#include <algorithm>

#include "core/layernorm_case.hpp"

#include "generators/block_generators.hpp"
#include "generators/contraction_generators.hpp"
#include "generators/jvp_generators.hpp"

namespace normcheck {

const std::vector<SuiteDef>& suites() {
  static const std::vector<SuiteDef> table = {
      {"default", 3,
       "the committed worst-case corpus for every kernel, then every LayerNorm and RMSNorm kernel x dtype x "
       "generator, 10 cases each, rows*n <= 65536 (eps as models set it, gamma/beta default, trained-like or mixed); every "
       "Linear o RMSNorm block variant x dtype x block generator, 10 cases each; the QR contraction on "
       "every dtype x seed category, 20 cases each; batch, group, instance, channel-layer norm and layer norm / RMSNorm over "
       "trailing axes on NCHW, NHWC and sequence tensors, 8 cases each; the axis audits; the port-Hamiltonian stream, 3 cases per dtype; the LayerNorm JVP kernels x dtype x row generator, 3 cases each (rows*n <= 4096)",
       10, 65536, 20261130, 10, 20, 8, 3, 3},
      {"quick", 3,
       "the committed worst-case corpus for every kernel, then every LayerNorm and RMSNorm kernel x dtype x "
       "generator, 2 cases each, rows*n <= 2048; block "
       "variants, 3 cases per block generator; the QR contraction, 2 cases per category; the six grouped norms, 1 case per layout; the axis audits; the port-Hamiltonian stream, 1 case per dtype; the LayerNorm JVP, 1 case per row generator",
       2, 2048, 20261130, 3, 2, 1, 1, 1},
      {"nightly", 3,
       "the corpus, then the default suite's kernels, dtypes and generators with more cases: 50 per LayerNorm/RMSNorm generator "
       "(rows*n <= 65536), 30 per block generator, 60 per QR-contraction category, 32 per grouped-norm kind "
       "and layout, the axis audits, 12 port-Hamiltonian cases per dtype, 8 LayerNorm JVP cases per row generator; sized for "
       "under 30 minutes on 2 cores",
       50, 65536, 20261130, 30, 60, 32, 12, 8},
      {"llm", 1,
       "production shapes (issue 17): LayerNorm and RMSNorm forward and backward, every kernel, on 2048 x 4096 "
       "activations (rows x hidden size) in bf16, f16 and f32, one case each of normal and large_mean rows; "
       "`--rows 1024 --n 16384` for the widest hidden size the case cap allows. about 6 minutes and 6 GB on 2 cores",
       1, kMaxCaseElements, 20261130, 0, 0, 0, 0, 0,
       op_name_views(),
       {DType::bf16, DType::f16, DType::f32},
       {"normal", "large_mean"},
       2048, 4096},
  };
  return table;
}

const SuiteDef* find_suite(std::string_view name) {
  for (const SuiteDef& s : suites())
    if (s.name == name) return &s;
  return nullptr;
}

namespace {

std::vector<DType> suite_dtypes(const SuiteDef& s) { return s.dtypes.empty() ? dtype_ids() : s.dtypes; }

}  // namespace

std::optional<RunConfig> suite_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  RunConfig cfg;
  cfg.suite = std::string(s->name);
  cfg.suite_version = s->version;
  for (const OpSpec& op : op_specs())
    if (op.in_suites) cfg.ops.push_back(op.op);
  cfg.dtypes = suite_dtypes(*s);
  cfg.generators = gen::row_generator_names();
  if (!s->generators.empty()) cfg.generators.assign(s->generators.begin(), s->generators.end());
  cfg.cases_per_generator = s->cases_per_generator;
  cfg.shape.max_elements = s->max_elements;
  cfg.shape.rows = s->rows;
  cfg.shape.n = s->n;
  cfg.seed = s->seed;
  return cfg;
}

std::optional<ContractionSuiteConfig> suite_contraction_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  ContractionSuiteConfig cfg;
  cfg.dtypes = suite_dtypes(*s);
  cfg.generators = gen::contraction_generator_names();
  cfg.cases_per_generator = s->contraction_cases_per_generator;
  cfg.seed = s->seed;
  return cfg;
}

std::optional<GroupedSuiteConfig> suite_grouped_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  GroupedSuiteConfig cfg;
  cfg.dtypes = suite_dtypes(*s);
  cfg.cases_per_layout = s->grouped_cases_per_layout;
  cfg.seed = s->seed;
  return cfg;
}

std::optional<JvpSuiteConfig> suite_jvp_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  JvpSuiteConfig cfg;
  cfg.dtypes = suite_dtypes(*s);
  cfg.generators = gen::jvp_generator_names();
  cfg.cases_per_generator = s->jvp_cases_per_generator;
  cfg.max_elements = std::min<int64_t>(s->max_elements, 4096);
  cfg.seed = s->seed;
  return cfg;
}

std::optional<BlockSuiteConfig> suite_block_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  BlockSuiteConfig cfg;
  cfg.dtypes = suite_dtypes(*s);
  cfg.generators = gen::block_generator_names();
  cfg.cases_per_generator = s->block_cases_per_generator;
  cfg.seed = s->seed;
  return cfg;
}

std::optional<BudgetSuiteConfig> suite_budget_config(std::string_view name) {
  const SuiteDef* s = find_suite(name);
  if (!s) return std::nullopt;
  BudgetSuiteConfig cfg;
  cfg.dtypes = suite_dtypes(*s);
  cfg.cases = s->budget_cases_per_dtype;
  cfg.seed = s->seed;
  return cfg;
}

}  // namespace normcheck
