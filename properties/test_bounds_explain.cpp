// The auditor's view of a bound (`normcheck bounds --input/--element`, issue 19): the explained terms
// are the bound's own (recomposing the forward bound from them gives the element's bound), the split
// into arithmetic and store rounding adds up, and a report record's worst case evaluated by `bounds`
// gets exactly the record's bound under the same identifier.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ops/op_kernels.hpp"
#include "cli_harness.hpp"
#include "bounds/bounds_explain.hpp"
#include "oracles/gain_split.hpp"
#include "bounds/bounds_model.hpp"
#include "bounds/tolerance_table.hpp"
#include "kernels/registry.hpp"
#include "generators/generators.hpp"
#include "suite/judge.hpp"

namespace {

using namespace normcheck;

double term(const std::vector<BoundTerm>& terms, const std::string& name) {
  for (const BoundTerm& t : terms)
    if (t.name == name) return t.value;
  ADD_FAILURE() << "no term " << name;
  return NAN;
}

TEST(BoundsExplain, TheForwardBoundRecomposesFromTheExplainedTermsAndTheSplitAddsUp) {
  int64_t explained = 0;
  for (DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64})
    for (const char* generator : {"normal", "large_mean", "subnormal", "log_uniform", "eps_dominant", "near_max"})
      for (const char* variant : {"two_pass", "welford", "one_pass"}) {
        const KernelEntry* k = find_kernel(Op::layernorm_forward, variant, dt);
        if (!k) continue;
        const LayerNormCase c = gen::make_layernorm_case(generator, dt, 7, {3, 40, 120});
        const auto ref = certified_reference(k->op, c, false);
        const BoundModel m = own_bound_model(tolerance_for(*k), *k);
        const TensorBound b = layernorm_forward_bound(c, ref, m);
        const bounds_detail::Units u = bounds_detail::units_of(m);
        for (size_t i = 0; i < b.bound.size(); i += 7) {
          const BoundExplanation e = explain_bound(c, ref, m, "y", b, i);
          if (e.void_bound) continue;
          ++explained;
          // bound = arithmetic + store + slack
          EXPECT_NEAR(e.arithmetic + e.store + e.evaluation_slack, e.bound, 1e-12 * e.bound) << generator << " " << variant;
          // The forward bound of section 2.4/2.5 recomposed from the printed terms.
          // gamma_j as printed (issue 46: the auditor's recomputation needs only the printed terms)
          const double ga = std::fabs(term(e.element_terms, "gamma_j")), g2 = gamma_k(2, u.ua);
          EXPECT_EQ(term(e.element_terms, "gamma_j"), c.gamma[static_cast<size_t>(e.col)]);
          EXPECT_EQ(term(e.element_terms, "beta_j"), c.beta[static_cast<size_t>(e.col)]);
          const double r = term(e.row_terms, "r"), dr = term(e.row_terms, "delta_r");
          const double d = term(e.element_terms, "|d_j|"), ed = term(e.element_terms, "e_d_j");
          const double e_t = ga * r * (d * dr + ed * (1 + dr)) * (1 + g2) + g2 * ga * d * r + u.eta_a * (1 + ga * (1 + g2));
          const double e_s = e_t * (1 + u.ua) + u.ua * e.exact_abs + u.eta_a;
          EXPECT_NEAR(e.arithmetic, e_s, 1e-9 * e_s + 1e-300) << generator << " " << variant << " element " << i;
          if (dt == DType::f64) {
            EXPECT_EQ(e.store, 0.0);  // f64 storage with f64 accumulation: no store rounding
          }
        }
      }
  EXPECT_GT(explained, 500);
}

TEST(BoundsExplain, BackwardAndRmsNormSplitsAddUpAndBf16IsDominatedByTheOutputRounding) {
  for (Op op : {Op::layernorm_backward, Op::rmsnorm_forward, Op::rmsnorm_backward}) {
    const KernelEntry* k = find_kernel(op, op_family(op) == OpFamily::rmsnorm ? "rms" : "two_pass", DType::bf16);
    ASSERT_NE(k, nullptr);
    const LayerNormCase c = gen::make_layernorm_case("normal", DType::bf16, 3, {4, 64, 256});
    const auto ref = certified_reference(op, c, is_backward(op));
    const BoundModel m = own_bound_model(tolerance_for(*k), *k);
    const TensorBound b = is_backward(op) ? (op_family(op) == OpFamily::rmsnorm ? rmsnorm_backward_bound(c, ref, m).dx : layernorm_backward_bound(c, ref, m).dx)
                                          : rmsnorm_forward_bound(c, ref, m);
    const std::string output = is_backward(op) ? "dx" : "y";
    double store = 0, total = 0;
    for (size_t i = 0; i < b.bound.size(); ++i) {
      const BoundExplanation e = explain_bound(c, ref, m, output, b, i);
      ASSERT_FALSE(e.void_bound);
      EXPECT_NEAR(e.arithmetic + e.store + e.evaluation_slack, e.bound, 1e-12 * e.bound);
      EXPECT_GE(e.arithmetic, 0);
      store += e.store;
      total += e.bound;
    }
    EXPECT_GT(store / total, 0.95) << op_name(op);  // bf16 storage: the final rounding is most of every bound
  }
}

TEST(BoundsExplain, AReportRecordsWorstCaseGetsTheRecordsBoundUnderTheSameIdentifier) {
  const fs::path report = scratch() / "explain_run.json", record = scratch() / "explain_record.json";
  const std::string exec = "/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/exec_example.py --one-pass {dir}";
  ASSERT_EQ(run_cli("run --exec '" + exec + "' --ops layernorm_forward --dtypes f32 --generators large_mean --cases 2 -q --out " +
                    report.string()).exit_code, 1);
  const auto rec = nlohmann::json::parse(slurp(report)).at("records").at(0);
  ASSERT_TRUE(rec.at("worst_case").at("inputs_inline").get<bool>());
  std::ofstream(record) << rec.dump();
  const int64_t index = rec.at("worst_case").at("element").at("index").get<int64_t>();
  const Outcome o = run_cli("bounds --op layernorm_forward --kernel two_pass --dtype f32 --json --input " + record.string() +
                            " --element " + std::to_string(index));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j.at("bound_id"), rec.at("bound_id"));
  const auto& y = j.at("sample").at("outputs").at("y");
  EXPECT_EQ(y.at("explained").at("bound"), rec.at("worst_case").at("element").at("bound"));
  EXPECT_EQ(y.at("bounds").size(), rec.at("worst_case").at("x").size());  // every element's bound, not the first three
  // The text names the row statistics with their sections and the bound's shares.
  const Outcome text = run_cli("bounds --op layernorm_forward --kernel two_pass --dtype f32 --input " + record.string());
  for (const char* fact : {"e_mu", "e_v", "delta_r", "[2.3]", "e_d_j", "store_rounding", "arithmetic", "%"})
    EXPECT_NE(text.out.find(fact), std::string::npos) << fact;
}

TEST(BoundsExplain, ARecordOfAReportIsExplainedAtItsWorstElementEvenWhenPassingAndItsCaseIsNotInline) {
  // Issue 46: a passing record keeps only generator, seed and digest; `--input REPORT --record K`
  // regenerates its case as replay does, takes op, kernel, dtype and output from the record, explains
  // its worst element under its own bound identifier and says whose observed error is printed.
  const fs::path report = scratch() / "explain_record_run.json";
  ASSERT_EQ(run_cli("run --kernels two_pass,rms --dtypes bf16 --generators normal,large_mean --cases 2 --ops layernorm_backward,rmsnorm_backward -q --out " +
                    report.string()).exit_code, 0);
  const auto records = nlohmann::json::parse(slurp(report)).at("records");
  int explained = 0;
  for (size_t k = 0; k < records.size(); ++k) {
    const auto& rec = records.at(k);
    if (rec.at("worst_case").is_null()) continue;
    ASSERT_FALSE(rec.at("worst_case").at("inputs_inline").get<bool>()) << k;  // passing: nothing inline
    const Outcome o = run_cli("bounds --json --input " + report.string() + " --record " + std::to_string(k));
    ASSERT_EQ(o.exit_code, 0) << k << ": " << o.err;
    const auto j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j.at("verdict_bound_id"), rec.at("bound_id")) << k;
    EXPECT_EQ(j.at("op"), rec.at("op"));
    EXPECT_EQ(j.at("kernel"), rec.at("variant"));
    const auto& outputs = j.at("sample").at("outputs");
    ASSERT_EQ(outputs.size(), 1u) << k;  // the record's output only
    const auto& out = outputs.at(rec.at("output").get<std::string>());
    const auto& worst = rec.at("worst_case").at("element");
    EXPECT_EQ(out.at("explained").at("index"), worst.at("index")) << k;
    EXPECT_EQ(out.at("explained").at("bound"), worst.at("bound")) << k;  // the record's bound, bit for bit
    EXPECT_NE(j.at("observed_by").get<std::string>().find("the record's kernel"), std::string::npos);
    ++explained;
  }
  EXPECT_EQ(explained, 10);  // LayerNorm dx, dgamma, dbeta and RMSNorm dx, dgamma on two generators
  // The record fixes op, kernel and dtype: another one given is refused, as is a report without --record
  // and a record of its own file whose case is not inline.
  for (const std::string& args : {"bounds --input " + report.string() + " --record 0 --dtype f32",
                                  "bounds --input " + report.string() + " --record 0 --output y",
                                  "bounds --input " + report.string() + " --record 99999",
                                  "bounds --input " + report.string(), std::string("bounds --record 0")}) {
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
  }
  const fs::path single = scratch() / "explain_record_passing.json";
  std::ofstream(single) << records.at(0).dump();
  const Outcome o = run_cli("bounds --op " + records.at(0).at("op").get<std::string>() + " --dtype bf16 --input " + single.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--record K"), std::string::npos) << o.err;
}

TEST(BoundsExplain, AnExternalKernelsRecordShowsItsRecordedErrorLabelledAsSuch) {
  const fs::path report = scratch() / "explain_external_run.json";
  const std::string exec = "/usr/bin/python3 " + std::string(NORMCHECK_SOURCE_DIR) + "/scripts/exec_example.py {dir}";
  ASSERT_EQ(run_cli("run --exec '" + exec + "' --ops layernorm_forward --dtypes f32 --generators large_mean --cases 2 --invariance off -q --out " +
                    report.string()).exit_code, 0);
  const auto rec = nlohmann::json::parse(slurp(report)).at("records").at(0);
  ASSERT_EQ(rec.at("kernel").get<std::string>().rfind("exec:", 0), 0u);
  const Outcome o = run_cli("bounds --json --input " + report.string() + " --record 0");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j.at("kernel"), rec.at("kernel"));
  EXPECT_EQ(j.at("verdict_bound_id"), rec.at("bound_id"));
  const auto& y = j.at("sample").at("outputs").at("y");
  EXPECT_EQ(y.at("observed_max_error_over_bound"), rec.at("worst_case").at("element").at("bound_ratio"));
  EXPECT_NE(j.at("observed_by").get<std::string>().find("as the report recorded it"), std::string::npos) << j.at("observed_by");
  EXPECT_EQ(y.at("explained").at("bound"), rec.at("worst_case").at("element").at("bound"));
  // The text says what the kernel is held to, in words.
  const Outcome text = run_cli("bounds --input " + report.string() + " --record 0");
  EXPECT_NE(text.out.find("accuracy target"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not a proof about its arithmetic"), std::string::npos) << text.out;
}

TEST(BoundsExplain, NpyInputAndBadInputGetOneLine) {
  const fs::path npy = scratch() / "x.npy";
  ASSERT_EQ(run_shell("/usr/bin/python3 -c \"import numpy as np; np.save('" + npy.string() +
                      "', np.linspace(-3, 5, 16, dtype=np.float32).reshape(2, 8))\"").exit_code, 0);
  const Outcome ok = run_cli("bounds --dtype f32 --rows 2 --n 8 --input " + npy.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("input (" + npy.string() + ")"), std::string::npos) << ok.out;
  for (const std::string& args : {"bounds --dtype f32 --rows 4 --n 8 --input " + npy.string(),  // wrong shape
                                  "bounds --dtype f16 --rows 2 --n 8 --input " + npy.string(),  // wrong dtype
                                  "bounds --dtype f32 --rows 2 --n 8 --eps 0 --input " + npy.string(),
                                  "bounds --dtype f32 --rows 2 --n 8 --element 99 --input " + npy.string(),
                                  std::string("bounds --input ") + NORMCHECK_SOURCE_DIR + "/README.md"}) {
    const Outcome o = run_cli(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
  }
}

}  // namespace

namespace {

TEST(BoundsExplain, TheBackwardBoundsOwnIntermediatesAreTracedAndItsErrorIsTheArithmeticTerm) {
  for (DType dt : {DType::bf16, DType::f32, DType::f64})
    for (const char* variant : {"two_pass", "welford"}) {
      const KernelEntry* k = find_kernel(Op::layernorm_backward, variant, dt);
      ASSERT_NE(k, nullptr);
      const LayerNormCase c = gen::make_layernorm_case("large_mean", dt, 11, {5, 24, 120});
      const auto ref = certified_reference(k->op, c, true);
      const BoundModel m = own_bound_model(tolerance_for(*k), *k);
      const BackwardBound b = layernorm_backward_bound(c, ref, m);
      for (const auto& [output, tb] : {std::pair<std::string, const TensorBound*>{"dx", &b.dx}, {"dgamma", &b.dgamma}, {"dbeta", &b.dbeta}})
        for (size_t i = 0; i < tb->bound.size(); i += 5) {
          const BoundExplanation e = explain_bound(c, ref, m, output, *tb, i);
          if (e.void_bound) continue;
          // "e" traced inside the bound function is the arithmetic share recovered from the bound.
          EXPECT_NEAR(term(e.element_terms, "e"), e.arithmetic, 1e-9 * e.arithmetic + 1e-300) << output << " " << i;
          if (output == "dx") {  // and section 3.3's last step recomposes from the printed e_c, c, r, delta_r
            const bounds_detail::Units u = bounds_detail::units_of(m);
            const double r = term(e.row_terms, "r"), dr = term(e.row_terms, "delta_r");
            const double recomposed = r * (term(e.element_terms, "|c_j|") * dr + term(e.element_terms, "e_c") * (1 + dr)) * (1 + u.ua) +
                                      u.ua * e.exact_abs + u.eta_a;
            EXPECT_NEAR(recomposed, e.arithmetic, 1e-9 * e.arithmetic);
          }
        }
    }
}

TEST(BoundsExplain, RmsNormBackwardsIntermediatesAreTracedToo) {
  // Issue 46: RMSNorm backward's intermediates were missing from `bounds` (section 10.2: v, e_v, B,
  // e_B, |c_j|, e_c; dgamma's column sum); they come from the bound function, and recompose.
  int explained = 0;
  // Gemma's RMSNorm too: its bound is RMSNorm's on the gain's double part hi (10.6), and so its terms.
  for (DType dt : {DType::bf16, DType::f32, DType::f64})
    for (const auto& [op, variant] : {std::pair<Op, const char*>{Op::rmsnorm_backward, "rms"}, {Op::rmsnorm_backward, "rms_dg_bf16"},
                                      {Op::gemma_rmsnorm_backward, "gemma_rms"}}) {
      const KernelEntry* k = find_kernel(op, variant, dt);
      if (!k) continue;
      const LayerNormCase c = gen::make_layernorm_case("normal", dt, 13, {5, 24, 120});
      const auto ref = certified_reference(k->op, c, true);
      const BoundModel m = own_bound_model(tolerance_for(*k), *k);
      const std::vector<TensorBound> b = bounds_for(k->op, c, ref, m);
      for (const auto& [output, tb] : {std::pair<std::string, const TensorBound*>{"dx", &b[0]}, {"dgamma", &b[1]}})
        for (size_t i = 0; i < tb->bound.size(); i += 5) {
          const BoundExplanation e = explain_bound(c, ref, m, output, *tb, i);
          if (e.void_bound) continue;
          ++explained;
          EXPECT_NEAR(term(e.element_terms, "e"), e.arithmetic, 1e-9 * e.arithmetic + 1e-300) << variant << " " << output << " " << i;
          if (output == "dx") {
            const bounds_detail::Units u = bounds_detail::units_of(m);
            const double r = term(e.row_terms, "r"), dr = term(e.row_terms, "delta_r");
            const double recomposed = r * (term(e.element_terms, "|c_j|") * dr + term(e.element_terms, "e_c") * (1 + dr)) * (1 + u.ua) +
                                      u.ua * e.exact_abs + u.eta_a;
            EXPECT_NEAR(recomposed, e.arithmetic, 1e-9 * e.arithmetic) << variant << " " << i;
            const double g = op == Op::gemma_rmsnorm_backward ? oracle::split_unit_offset_gain(c.gamma).hi[static_cast<size_t>(e.col)]
                                                               : c.gamma[static_cast<size_t>(e.col)];
            EXPECT_EQ(term(e.element_terms, "v_j"), g * c.dy[i]);
          }
        }
    }
  EXPECT_GT(explained, 100);
}

TEST(BoundsExplain, OutputPicksOneOutputOfABackwardOpAndElementIndexesIt) {
  // dgamma has n = 64 elements, dx rows * n = 256: --element 200 is dx's, and --output makes that unambiguous.
  const std::string base = "bounds --op layernorm_backward --kernel two_pass --dtype bf16 --rows 4 --n 64 --json ";
  const Outcome all = run_cli(base + "--element 200");
  EXPECT_EQ(all.exit_code, 2);  // shared by every output: outside dgamma
  EXPECT_NE(all.err.find("outside dgamma"), std::string::npos) << all.err;
  const Outcome dx = run_cli(base + "--output dx --element 200");
  ASSERT_EQ(dx.exit_code, 0) << dx.err;
  const auto outputs = nlohmann::json::parse(dx.out).at("sample").at("outputs");
  EXPECT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs.at("dx").at("explained").at("index"), 200);
  const Outcome bad = run_cli(base + "--output dy");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("its outputs: dx, dgamma, dbeta"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

}  // namespace
