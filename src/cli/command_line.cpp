// The normcheck command line: every subcommand and option.
#include "cli/command_line.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "core/op_spec.hpp"
#include "core/suggest.hpp"


namespace normcheck::cli {
namespace {

/// A seed is a decimal integer in [0, 2^64 - 1]: CLI11 alone saturated "-1" and
/// "99999999999999999999999" to 2^64 - 1, so three command lines ran one seed.
const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return "a seed is a decimal integer in [0, 18446744073709551615], got '" + text + "'";
      return "";
    },
    "SEED");

void add_run_options(CLI::App& run, RunOptions& o) {
  run.add_option("--suite", o.suite, "named suite: default, quick, nightly, llm (see normcheck suites)");
  run.add_option("--ops", o.ops,
                 "ops: " + op_names_joined() + ", linear_rmsnorm "
                 "(the Linear o RMSNorm block suite), qr_contraction (the QR-contraction suite), grouped_norm (batch, group, instance norm), layernorm_jvp, rmsnorm_jvp (the JVPs), axis_audit, port_hamiltonian (the port budget, issue 9)")
      ->delimiter(',');
  run.add_option("--kernels", o.variants, "kernel variants (see normcheck list), block variants included")
      ->delimiter(',');
  run.add_option("--dtypes", o.dtypes, "storage dtypes: f16, bf16, f32, f64")->delimiter(',');
  run.add_option("--generators", o.generators, "row generators (see 'normcheck list')")->delimiter(',');
  run.add_option("--block-generators", o.block_generators, "block generators: normal, no_bias, cancel, wide")
      ->delimiter(',');
  run.add_option("--block-cases", o.block_cases, "block cases per block generator and dtype")
      ->check(CLI::Range(1, 100000));
  run.add_option("--contraction-generators", o.contraction_generators,
                 "QR-contraction generators (the seed's categories, see normcheck list)")
      ->delimiter(',');
  run.add_option("--contraction-cases", o.contraction_cases, "QR-contraction cases per generator and dtype")
      ->check(CLI::Range(1, 100000));
  run.add_option("--grouped-cases", o.grouped_cases, "grouped-norm cases per kind, layout and dtype")
      ->check(CLI::Range(1, 100000));
  run.add_option("--jvp-cases", o.jvp_cases, "LayerNorm JVP cases per row generator and dtype")->check(CLI::Range(1, 100000));
  run.add_option("--kernel", o.plugins, "a kernel plugin (.so, include/normcheck/plugin.h) to judge instead of the built-ins");
  run.add_option("--exec", o.exec, "a command implementing the exec protocol ({dir}: the case directory), judged instead of the built-ins");
  run.add_flag("--report-only", o.report_only,
               "external kernels are measured and reported, their failures do not fail the run (third-party code)");
  run.add_option("--invariance", o.invariance,
                 "the batch-invariance and determinism checks (docs/invariance.md): on (default; they fail the run), "
                 "report_only (reported, not failing) or off")
      ->check(CLI::IsMember({"on", "report_only", "off"}));
  run.add_option("--serve", o.serve,
                 "a long-running command speaking the serve protocol (one per thread; docs/plugins.md), judged instead of the built-ins");
  run.add_option("--serve-startup-timeout", o.serve_startup_timeout,
                 "seconds a serve command has to print its ready line, and a plugin worker to load its library (default 120)");
  run.add_option("--block-form", o.block_form,
                 "with --serve and --ops linear_rmsnorm: the form the served block kernel computes, composed or deferred "
                 "(chooses its bound, docs/bounds.md section 11)");
  run.add_option("--contract", o.contract,
                 "the contract external LayerNorm kernels are judged by: auto (default: two-pass, and where a kernel fails it "
                 "the Welford class, reported as such), two_pass or welford (docs/bounds.md section 2.7); overrides a plugin's declaration")
      ->check(CLI::IsMember({"auto", "two_pass", "welford"}));
  run.add_option("--exec-name", o.exec_name, "name of the exec or serve kernel in the report (default exec)");
  run.add_option("--kernel-timeout", o.kernel_timeout, "seconds per plugin or exec call before it counts as hung (default 10)");
  run.add_option("--seed", o.seed, "run seed (default: the suite's)")->check(kSeed);
  run.add_option("--cases", o.cases, "cases per generator and dtype")->check(CLI::Range(1, 1000000));
  run.add_option("--threads", o.threads, "worker threads")->check(CLI::Range(1, 256));
  run.add_option("--progress-every", o.progress_every,
                 "seconds between progress lines (cases done/planned, failing, elapsed, ETA) when stderr is not a terminal, "
                 "as in CI logs; 0 for none (default 30; a terminal gets a live line instead)")
      ->check(CLI::Range(0.0, 86400.0));
  run.add_option("--out", o.out, "report path");
  run.add_option("--shard", o.shard, "i/N: run the deterministic slice i (0-based) of N; combine with normcheck merge");
  run.add_option("--balance-from", o.balance_from,
                 "with --shard: balance the shards by the unit seconds a report of the same suite measured (e.g. last night's "
                 "or the committed baseline; the same file on every shard)");
  run.add_option("--rows", o.rows, "fix the number of rows");
  run.add_option("--n", o.n, "fix the row length");
  run.add_option("--max-elements", o.max_elements, "cap on rows*n for generated shapes");
  run.add_option("--eps", o.eps, "override eps for every case (must be > 0)");
  run.add_option("--junit", o.junit, "also write JUnit XML: one testcase per record, failures with their worst element (CI test views)");
  run.add_flag("--summary-json", o.summary_json, "end with one JSON line on stdout: passed, cases, records, failing, flagged, report");
  run.add_option("--diff", o.diff, "compare the finished report with this base report (as normcheck diff): the exit status, "
                 "--junit and --summary-json then follow the nightly verdict");
  run.add_flag("--allow-removed", o.allow_removed, "with --diff: records of the base not judged in this run do not fail it");
}

void add_search_options(CLI::App& s, SearchOptions& o) {
  s.add_option("--ops", o.ops, "ops to search")->delimiter(',');
  s.add_option("--kernels", o.variants, "kernel variants")->delimiter(',');
  s.add_option("--dtypes", o.dtypes, "storage dtypes")->delimiter(',');
  s.add_option("--rows", o.rows, "rows of the searched shape");
  s.add_option("--n", o.n, "row length of the searched shape");
  s.add_option("--seed", o.seed, "search seed")->check(kSeed);
  s.add_option("--restarts", o.restarts, "random restarts")->check(CLI::Range(1, 10000));
  s.add_option("--iterations", o.iterations, "hill-climbing steps per restart")->check(CLI::Range(0, 1000000));
  s.add_option("--out", o.out, "corpus file to merge the worst cases into (a case replaces one of the same op, output, kernel, "
               "dtype and shape only when its ratio is higher)");
  s.add_flag("--replace", o.replace, "with --out: found cases replace those of the same key even when their ratio is lower "
             "(after a bound changed: the ratios written before are no longer comparable)");
  s.add_flag("--structured", o.structured,
             "write the structured adversarial cases and tracker inputs to --out (properties/corpus/structured.txt)");
}

void add_bounds_options(CLI::App& b, BoundsOptions& o) {
  b.add_option("--op", o.op, "per-op op: " + op_names_joined());
  b.add_option("--kernel", o.variant, "kernel variant");
  b.add_option("--dtype", o.dtype, "storage dtype");
  b.add_option("--n", o.n, "row length")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  b.add_option("--rows", o.rows, "rows of the sample")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  b.add_option("--generator", o.generator, "row generator of the sample input");
  b.add_option("--seed", o.seed, "seed of the sample input")->check(kSeed);
  b.add_flag("--json", o.json, "JSON instead of text (with every element's bound)");
  b.add_option("--input", o.input,
               "evaluate on your own case: hexfloat JSON (a report record's worst_case, or an object with dtype, rows, n, eps, "
               "x, gamma, beta[, dy]) or x as .npy (rows x n; gamma 1, beta 0, dy 1)");
  b.add_option("--eps", o.eps, "eps of a .npy input (default 1e-5)");
  b.add_option("--element", o.element, "flat index of the element to explain in each output (default: its largest bound)");
  b.add_option("--output", o.output, "the one output to show and explain (y; dx, dgamma, dbeta): --element is its index");
  b.add_option("--record", o.record,
               "record K of the report given with --input: its op, kernel, dtype, output and worst element, the case "
               "regenerated from its seed when the report does not hold it (as replay does)")
      ->check(CLI::NonNegativeNumber);
}

void add_contract_options(CLI::App& c, ContractOptions& o) {
  c.add_option("--in", o.in, "safetensors file with the Linear -> LayerNorm -> Linear block")->required();
  c.add_option("--out", o.out, "safetensors file for R, D.<consumer>, c.<consumer>")->required();
  c.add_option("--dtype", o.dtype, "storage dtype of D, R, c: f16, bf16, f32, f64");
  c.add_option("--graph", o.graph, "the model's module list (JSON, docs/qr-contraction.md): finds the chain and refuses an op between its modules");
  c.add_flag("--assume-chain", o.assume_chain, "no module list: trust that nothing runs between producer, norm and consumers (recorded in the certificate)");
  c.add_flag("--allow-growth", o.allow_growth, "write the contraction even when it has more parameters than the original");
  c.add_option("--eps", o.eps, "the LayerNorm's eps (state dicts do not store it; default: the module list's, else 1e-5)");
  c.add_option("--producer", o.producer, "module name of the first Linear (default: the LayerNorm's input, or 0 with --assume-chain)");
  c.add_option("--norm", o.norm, "module name of the LayerNorm (default: the module list's only LayerNorm, or 1)");
  c.add_option("--consumers", o.consumers, "module names of the downstream Linears sharing the norm (default: every Linear reading it, or 2)")
      ->delimiter(',');
  c.add_option("--certificate", o.certificate, "certificate path (default <out>.certificate.json)");
  c.add_option("--samples", o.samples, "random inputs of the certificate")->check(CLI::Range(1, 100000));
  c.add_option("--seed", o.seed, "seed of the certificate's inputs")->check(kSeed);
}

void add_example_block_options(CLI::App& c, ExampleBlockOptions& o) {
  c.add_option("--out", o.out, "safetensors file to write")->required();
  c.add_option("--dtype", o.dtype, "parameter dtype");
  c.add_option("--generator", o.generator, "contraction generator (random, no_bias, signed_gamma, no_affine, ...)");
  c.add_option("--modules", o.modules, "also write the block's module list (JSON) for contract --graph");
  c.add_option("--d", o.d, "inputs")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  c.add_option("--n", o.n, "LayerNorm features")->check(CLI::Range(int64_t{2}, int64_t{4096}));
  c.add_option("--m", o.m, "outputs")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  c.add_option("--seed", o.seed, "seed")->check(kSeed);
}

void add_audit_options(CLI::App& c, AuditOptions& o) {
  c.add_option("--shape", o.shape, "tensor shape in memory order, e.g. 2,3,4,4")->delimiter(',')->required();
  c.add_option("--layout", o.layout, "dense (N,D), nchw, nhwc, sequence (N,L,D)");
  c.add_option("--kind", o.kind, "batch_norm, layer_norm, channel_layer_norm, instance_norm, group_norm, rms_norm");
  c.add_option("--normalized-dims", o.normalized_dims, "layer_norm / rms_norm: trailing axes normalized");
  c.add_option("--groups", o.groups, "group_norm: G");
  c.add_flag("--tied-affine", o.tied_affine, "one gamma/beta per channel, shared over the other normalized axes");
  c.add_flag("--no-affine", o.no_affine, "no learned gamma/beta");
  c.add_flag("--no-running-stats", o.no_running_stats, "batch norm without running statistics");
  c.add_option("--kernel", o.kernel,
               "probe a kernel (its groups and, with learned parameters, along which axes gamma and beta apply): declared, "
               "batch_norm_eval, channel_layer_norm_recipe, or a planted one: last_axis_layer_norm, layout_swapped, "
               "batch_norm_per_sample, group_norm_wrong_groups, mean_over_all_axes, affine_along_last_axis");
  c.add_option("--exec", o.exec, "probe an external kernel: a command implementing the exec protocol's op normalize ({dir})");
  c.add_option("--serve", o.serve, "probe an external kernel through serve mode (op normalize; docs/plugins.md)");
  c.add_option("--exec-timeout", o.exec_timeout, "seconds per exec or serve call (default 10)");
  c.add_option("--dtype", o.dtype, "storage dtype of the probed kernel");
  c.add_option("--seed", o.seed, "seed of the probe input")->check(kSeed);
  c.add_option("--out", o.out, "JSON record");
}

}  // namespace

void declare_command_line(CommandLine& cl, const std::vector<std::pair<std::string, std::string>>& replay_records,
                          const std::function<std::string()>& version) {
  cl.app.require_subcommand(1);
  cl.run = cl.app.add_subcommand("run", "run a verification suite and write a JSON report");
  add_run_options(*cl.run, cl.run_opts);
  cl.replay = cl.app.add_subcommand("replay", "re-run one report record's worst case");
  cl.replay->add_option("--report", cl.replay_opts.report, "report file")->required();
  for (const auto& [option, key] : replay_records)  // --record, --block-record, ...
    cl.replay->add_option_function<int64_t>(
        "--" + option, [&records = cl.replay_opts.records, key = key](const int64_t& i) { records.emplace_back(key, i); },
        "index of a record in the report's '" + key + "' section");
  cl.replay->add_option("--kernel", cl.replay_opts.plugin, "an external record's plugin library (default: the one the report recorded)");
  cl.replay->add_option("--exec", cl.replay_opts.exec, "an external record's exec command (default: the report's)");
  cl.replay->add_option("--serve", cl.replay_opts.serve, "an external record's serve command (default: the report's)");
  cl.replay->add_option("--kernel-timeout", cl.replay_opts.kernel_timeout, "seconds per external call");
  cl.replay->add_option("--dump", cl.replay_opts.dump,
                     "write the case here: manifest.json, input .npy files, the exact outputs (expected_<output>.npy, exact.json)");
  cl.list = cl.app.add_subcommand("list", "list kernels, dtypes, ops, generators and suites");
  cl.list->add_flag("--json", cl.list_json, "as JSON");
  cl.search = cl.app.add_subcommand("search", "search for inputs maximizing |error| / own a priori bound");
  add_search_options(*cl.search, cl.search_opts);
  cl.contract = cl.app.add_subcommand("contract", "QR-contract a Linear -> LayerNorm -> Linear block (safetensors)");
  add_contract_options(*cl.contract, cl.contract_opts);
  cl.example = cl.app.add_subcommand("example-block", "write a random Linear -> LayerNorm -> Linear block (safetensors)");
  add_example_block_options(*cl.example, cl.example_opts);
  cl.audit = cl.app.add_subcommand("audit-axes", "count a normalization's groups and parameters; infer a kernel's axes");
  add_audit_options(*cl.audit, cl.audit_opts);
  cl.diff = cl.app.add_subcommand("diff", "compare two reports record by record (exit 1 on a regression)");
  cl.diff->add_option("base", cl.diff_opts.base, "baseline report")->required();
  cl.diff->add_option("new", cl.diff_opts.now, "new report")->required();
  cl.diff->add_option("--out", cl.diff_opts.out, "JSON diff");
  cl.diff->add_option("--max-ulp-factor", cl.diff_opts.max_ulp_factor, "regression: max ULP grew by more than this factor (default 2)");
  cl.diff->add_option("--rms-ulp-factor", cl.diff_opts.rms_ulp_factor, "regression: RMS ULP grew by more than this factor (default 1.5)");
  cl.diff->add_option("--bound-ratio-increase", cl.diff_opts.bound_ratio_increase,
                   "regression: max err/bound grew by more than this x max(1, base) (default 0.1)");
  cl.diff->add_flag("--force", cl.diff_opts.force, "compare reports of different suites or seeds anyway");
  cl.diff->add_flag("--allow-removed", cl.diff_opts.allow_removed,
                    "records judged in BASE but absent or not run in NEW do not fail the comparison (a deliberate subset)");
  cl.suites = cl.app.add_subcommand("suites", "list the named, versioned suites and what each contains");
  cl.suites->add_flag("--json", cl.suites_json, "as JSON");
  cl.merge = cl.app.add_subcommand("merge", "combine the reports of run --shard 0/N .. N-1/N into the unsharded run's report");
  cl.merge->add_option("shards", cl.merge_opts.shards, "shard reports (every shard of one run)")->required();
  cl.merge->add_option("--out", cl.merge_opts.out, "merged report path")->required();
  cl.render = cl.app.add_subcommand("render", "write a self-contained HTML report (charts, worst cases, --diff regressions)");
  cl.render->add_option("report", cl.render_opts.report, "report JSON")->required();
  cl.render->add_option("--diff", cl.render_opts.diff, "base report: show the regressions against it");
  cl.render->add_option("--out", cl.render_opts.out, "HTML file (default: REPORT with .json replaced by .html)");
  cl.render->add_flag("--allow-removed", cl.render_opts.allow_removed,
                      "with --diff: records of the base not judged in REPORT do not fail the banner's verdict (as diff's)");
  cl.render->add_option("--worst", cl.render_opts.worst, "records in the worst-case table (default 20)")->check(CLI::Range(1, 100000));
  cl.bench = cl.app.add_subcommand("bench-external", "calls per second of external kernels: per-call processes vs persistent workers");
  cl.bench->add_option("--kernel", cl.bench_opts.plugin, "plugin library: fork + dlopen per call vs a persistent worker");
  cl.bench->add_option("--exec", cl.bench_opts.exec, "exec-protocol command (a process per call), the baseline of --serve");
  cl.bench->add_option("--serve", cl.bench_opts.serve, "serve-protocol command (one long-running process)");
  cl.bench->add_option("--op", cl.bench_opts.op, "op (default layernorm_forward)");
  cl.bench->add_option("--dtype", cl.bench_opts.dtype, "storage dtype (default f32)");
  cl.bench->add_option("--rows", cl.bench_opts.rows, "rows (default 1)")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cl.bench->add_option("--n", cl.bench_opts.n, "row length (default 64)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cl.bench->add_option("--calls", cl.bench_opts.calls, "timed calls of the persistent path (default 2000)")->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cl.bench->add_option("--baseline-calls", cl.bench_opts.baseline_calls, "timed calls of the per-call path (default 100)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cl.bench->add_option("--kernel-timeout", cl.bench_opts.timeout, "seconds per call (default 10)");
  cl.bench_oracle = cl.app.add_subcommand("bench-oracle", "ns per element of the certified oracle's levels against the float64 kernel");
  cl.bench_oracle->add_option("--dtypes", cl.bench_oracle_opts.dtypes, "storage dtypes (default bf16,f32,f64)")->delimiter(',');
  cl.bench_oracle->add_option("--n", cl.bench_oracle_opts.ns, "row lengths (default 64,1024,4096)")->delimiter(',');
  cl.bench_oracle->add_option("--generator", cl.bench_oracle_opts.generator, "row generator, or all (default normal)");
  cl.bench_oracle->add_option("--elements", cl.bench_oracle_opts.elements, "rows x n per case (default 16384)")->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  cl.bench_oracle->add_option("--cases", cl.bench_oracle_opts.cases, "cases per (op, dtype, n) (default 2)")->check(CLI::Range(1, 1000));
  cl.bench_oracle->add_option("--repeats", cl.bench_oracle_opts.repeats, "interleaved repeats, median reported (default 3)")->check(CLI::Range(1, 100));
  cl.bench_oracle->add_option("--paths", cl.bench_oracle_opts.paths, "oracle paths: a_priori, ball, a_priori_dd (RMSNorm only), dd_ball, mpfi, boost_mpfi (the same formulas on Boost's mpfi_float_50), cascade (default all; the float64 kernel always runs)")->delimiter(',');
  cl.bench_oracle->add_option("--json", cl.bench_oracle_opts.json, "also write the table as JSON");
  cl.bench_audit = cl.app.add_subcommand("bench-audit", "the axis audit's cost against the tensor size, beside one kernel call");
  cl.bench_audit->add_option("--dtype", cl.bench_audit_opts.dtype, "storage dtype of the probed kernels (default f32)");
  cl.bench_audit->add_option("--max-side", cl.bench_audit_opts.max_side, "largest H = W of the (2, 8, H, W) tensors (default 32)")
      ->check(CLI::Range(int64_t{2}, int64_t{64}));
  cl.bench_audit->add_option("--repeats", cl.bench_audit_opts.repeats, "repeats, median reported (default 3)")->check(CLI::Range(1, 100));
  cl.bench_audit->add_option("--json", cl.bench_audit_opts.json, "also write the table as JSON");
  cl.bias = cl.app.add_subcommand("bias", "calibrate the directed-rounding statistic: sound kernels vs planted ones");
  cl.bias->add_option("--dtypes", cl.bias_opts.dtypes, "f32 and/or f64")->delimiter(',');
  cl.bias->add_option("--cases", cl.bias_opts.cases, "cases per dtype")->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  cl.bias->add_option("--max-elements", cl.bias_opts.max_elements, "rows * n cap")->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cl.bias->add_option("--record-cases", cl.bias_opts.record_cases, "cases per record (one test)")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cl.bias->add_option("--seed", cl.bias_opts.seed, "calibration seed")->check(kSeed);
  cl.bias->add_option("--threads", cl.bias_opts.threads, "worker threads")->check(CLI::Range(1, 256));
  cl.bias->add_flag("--sound-only", cl.bias_opts.sound_only, "only the sound built-in kernels (the false-alarm count)");
  cl.bounds = cl.app.add_subcommand("bounds", "print a bound's formula, constants and value on a sample");
  add_bounds_options(*cl.bounds, cl.bounds_opts);
  cl.budget = cl.app.add_subcommand("norm-budget", "port-Hamiltonian stream: floating-point budget check and growth table");
  cl.budget->add_option("--out", cl.budget_opts.out, "JSON report (default reports/norm_budget.json)");
  cl.budget->add_option("--dtypes", cl.budget_opts.dtypes, "storage dtypes (default all)")->delimiter(',');
  cl.budget->add_option("--width", cl.budget_opts.width, "growth-table width (default 32, in [2, 256])");
  cl.budget->add_option("--depths", cl.budget_opts.depths, "growth-table depths (default 24,48,120,240,300, each in [1, 300])")->delimiter(',');
  cl.budget->add_option("--h", cl.budget_opts.h, "port-Hamiltonian step size (default 0.25)");
  cl.budget->add_option("--gain", cl.budget_opts.gain, "residual branch gain: W2 ~ N(0, gain^2/n) (default 1)");
  cl.budget->add_option("--cases", cl.budget_opts.cases, "random budget cases per dtype (default 2)");
  cl.budget->add_option("--threads", cl.budget_opts.threads, "worker threads")->check(CLI::Range(1, 256));
  cl.budget->add_option("--seed", cl.budget_opts.seed, "seed")->check(kSeed);
  cl.budget_search = cl.app.add_subcommand("search-budget", "worst-case search of the norm budget over initial states and port signals");
  cl.budget_search->add_option("--dtypes", cl.budget_search_opts.dtypes, "storage dtypes (default f32,bf16)")->delimiter(',');
  cl.budget_search->add_option("--objectives", cl.budget_search_opts.objectives, "tightness (||x_t|| / fp budget) and/or slack (fp / exact budget - 1)")
      ->delimiter(',');
  cl.budget_search->add_option("--width", cl.budget_search_opts.width, "stream width (default 8, in [2, 256])");
  cl.budget_search->add_option("--depth", cl.budget_search_opts.depth, "stream depth (default 12, in [1, 300])");
  cl.budget_search->add_option("--h", cl.budget_search_opts.h, "port-Hamiltonian step size (default 0.25)");
  cl.budget_search->add_option("--restarts", cl.budget_search_opts.restarts, "random restarts (default 4)")->check(CLI::Range(1, 1000));
  cl.budget_search->add_option("--iterations", cl.budget_search_opts.iterations, "hill-climbing steps per restart (default 40)")
      ->check(CLI::Range(0, 100000));
  cl.budget_search->add_option("--seed", cl.budget_search_opts.seed, "search seed")->check(kSeed);
  cl.budget_search->add_option("--out", cl.budget_search_opts.out, "write the worst cases found as a corpus (JSON)");
  cl.history = cl.app.add_subcommand("history", "nightly history in SQLite: add a report, show a record's trend");
  cl.history->require_subcommand(1);
  cl.history->fallthrough();  // --quiet / --verbose after `history add`
  cl.history_add = cl.history->add_subcommand("add", "add a complete report's summary and per-record metrics (one transaction)");
  cl.history_add->add_option("report", cl.history_opts.report, "report JSON")->required();
  cl.history_add->add_option("--db", cl.history_opts.db, "SQLite database (created when absent)")->required();
  cl.history_show = cl.history->add_subcommand("show", "list the runs, or one record's metrics night by night (regressions marked)");
  cl.history_show->add_option("--db", cl.history_opts.db, "SQLite database")->required();
  cl.history_show->add_option("--record", cl.history_opts.record,
                              "the record's identity as normcheck diff prints it (or a unique part of it)");
  cl.render->add_option("--history", cl.render_opts.history, "SQLite history: add per-record trend lines, the night a record regressed marked");
  cl.version = cl.app.add_subcommand("version", "print the version, git revision and oracle backends");
  cl.completion = cl.app.add_subcommand("completion", "print a shell completion script, generated from this command line");
  cl.completion->add_option("shell", cl.completion_shell, "bash")->required()->check(CLI::IsMember({"bash"}));
  cl.manpage = cl.app.add_subcommand("manpage", "print the man page (groff), generated from this command line");
  if (version)
    cl.app.set_version_flag("--version", [version] {
      std::string v = version();
      if (!v.empty() && v.back() == '\n') v.pop_back();  // CLI11 adds the newline
      return v;
    }, "print the version, git revision and oracle backends and exit");
  const std::string exit_codes =
      "Exit codes: 0 success (run: every must-pass record passed); 1 a check failed (a failing record, a regression, "
      "a weak kernel not caught); 2 bad input, usage or an unreadable file.";
  cl.app.footer(exit_codes);
  for (CLI::App* sub : cl.app.get_subcommands({})) {
    sub->footer(exit_codes);
    sub->add_flag("--quiet,-q", cl.quiet, "print only what was asked for: no tables or progress (errors still on stderr; run keeps its result lines)");
    sub->add_flag("--verbose,-v", cl.verbose, "print more: run and merge explain every failing record (no cap), diff lists unchanged records too");
  }
}

std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || std::string_view(argv[1]) == "__plugin-worker") return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return "";
  return fmt::format("unknown command '{}'{} (see normcheck --help)", argv[1], did_you_mean(argv[1], names));
}

std::string unexpected_arguments(const CLI::App& app, const CLI::ExtrasError& e) {
  const CLI::App* where = &app;
  for (const CLI::App* sub : app.get_subcommands())  // the subcommand given (parsed)
    where = sub;
  std::vector<std::string> extras = where->remaining();
  if (extras.empty()) extras = app.remaining();
  if (extras.empty()) return std::string(e.what()) + " (see normcheck --help)";
  const std::string& first = extras.front();
  const std::string help = where == &app ? "normcheck --help" : "normcheck " + where->get_name() + " --help";
  if (first.rfind("-", 0) != 0) return fmt::format("unexpected argument '{}' (see {})", first, help);
  std::vector<std::string> options;
  for (const CLI::Option* opt : where->get_options())
    for (const std::string& name : opt->get_lnames()) options.push_back("--" + name);
  const std::string given = first.substr(0, first.find('='));
  return fmt::format("unknown option '{}'{} (see {})", given, did_you_mean(given, options), help);
}

}  // namespace normcheck::cli
