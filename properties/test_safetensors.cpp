// Issue 5, real weights: safetensors reading (malformed files rejected with one line), the
// shipped fixture's round trip, and `normcheck contract` with its certificate recomputed here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "contraction/block_io.hpp"
#include "contraction/certificate.hpp"
#include "properties/cli_harness.hpp"
#include "generators/contraction_generators.hpp"

using namespace normcheck;

namespace {

const std::string kFixture = std::string(NORMCHECK_SOURCE_DIR) + "/properties/fixtures/linear_ln_linear.safetensors";
/// Its module list, as `example-block --modules` writes it.
const std::string kFixtureModules = std::string(NORMCHECK_SOURCE_DIR) + "/properties/fixtures/linear_ln_linear.modules.json";

std::string fixture_bytes() { return slurp(kFixture); }

/// A file with header `json` and `data` bytes.
std::string with_header(const std::string& json, const std::string& data) {
  std::string out;
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((json.size() >> (8 * b)) & 0xffu));
  return out + json + data;
}

void expect_rejected(const std::string& bytes, const char* needle) {
  try {
    parse_safetensors(bytes, "test");
    ADD_FAILURE() << "accepted, expected: " << needle;
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

}  // namespace

TEST(Safetensors, FixtureIsMadeByTheProjectAndRoundTripsBitForBit) {
  // The fixture is `normcheck example-block --d 12 --n 48 --m 8 --seed 2026`: regenerate and compare.
  const fs::path again = scratch() / "again.safetensors";
  ASSERT_EQ(run_cli("example-block --d 12 --n 48 --m 8 --seed 2026 --out " + again.string()).exit_code, 0);
  EXPECT_EQ(slurp(again), fixture_bytes());
  const SafetensorsFile f = read_safetensors(kFixture);
  EXPECT_EQ(serialize_safetensors(f), fixture_bytes());
  ASSERT_EQ(f.tensors.size(), 6u);
  EXPECT_EQ(f.tensors.at("0.weight").shape, (std::vector<int64_t>{48, 12}));
  DType source;
  const AffineLnAffine blk = block_from_safetensors(f, {}, 1e-5, source);
  EXPECT_EQ(source, DType::f32);
  EXPECT_EQ(blk.d, 12);
  EXPECT_EQ(blk.n, 48);
  EXPECT_EQ(blk.m, 8);
}

TEST(Safetensors, MalformedFilesAreRejectedWithOneLine) {
  const std::string good = fixture_bytes();
  expect_rejected("", "shorter than 8 bytes");
  expect_rejected(good.substr(0, good.size() - 4), "outside");
  std::string huge = good;
  huge[6] = 1;  // header length ~ 2^48
  expect_rejected(huge, "header length");
  expect_rejected(with_header("{not json", ""), "not valid JSON");
  expect_rejected(with_header("[1,2]", ""), "not a JSON object");
  expect_rejected(with_header(R"({"w":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}})", "x"), "dtype 'I8'");
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), "4 bytes");
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"), "dimension");
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcdefgh"), "trailing");
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"v":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                              "abcd"),
                  "overlaps");
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[1]}})", ""), "lacks");
  const float nan = NAN;
  std::string nan_bytes(4, '\0');
  std::memcpy(nan_bytes.data(), &nan, 4);
  expect_rejected(with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", nan_bytes), "not finite");
}

TEST(Safetensors, BlockExtractionChecksNamesAndShapes) {
  SafetensorsFile f = read_safetensors(kFixture);
  DType source;
  SafetensorsFile missing = f;
  missing.tensors.erase("0.weight");
  EXPECT_THROW(block_from_safetensors(missing, {}, 1e-5, source), SafetensorsError);
  SafetensorsFile wrong = f;
  wrong.tensors["1.weight"].shape = {47};
  wrong.tensors["1.weight"].values.pop_back();
  EXPECT_THROW(block_from_safetensors(wrong, {}, 1e-5, source), SafetensorsError);
  SafetensorsFile mismatched = f;
  mismatched.tensors["2.weight"].shape = {16, 24};
  EXPECT_THROW(block_from_safetensors(mismatched, {}, 1e-5, source), SafetensorsError);
  EXPECT_THROW(block_from_safetensors(f, {}, 0.0, source), SafetensorsError);  // eps <= 0
  // Absent biases and LayerNorm parameters are allowed.
  SafetensorsFile bare = f;
  for (const char* n : {"0.bias", "1.weight", "1.bias", "2.bias"}) bare.tensors.erase(n);
  const AffineLnAffine blk = block_from_safetensors(bare, {}, 1e-5, source);
  EXPECT_TRUE(blk.a.empty() && blk.gamma.empty() && blk.beta.empty() && blk.b.empty());
}

TEST(Safetensors, ContractWritesCoefficientsAndACertificateWhoseNumbersRecompute) {
  const fs::path out = scratch() / "contracted_f16.safetensors", cert = scratch() / "cert.json";
  const Outcome o = run_cli("contract --in " + kFixture + " --graph " + kFixtureModules + " --out " + out.string() +
                            " --dtype f16 --samples 16 --certificate " + cert.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const SafetensorsFile f = read_safetensors(out.string());
  const auto& R = f.tensors.at("R");
  EXPECT_EQ(R.dtype, DType::f16);
  EXPECT_EQ(R.shape, (std::vector<int64_t>{13, 13}));  // k = min(48, 13)
  EXPECT_EQ(f.tensors.at("D.2").shape, (std::vector<int64_t>{8, 13}));
  EXPECT_EQ(f.tensors.at("c.2").shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(f.metadata.at("n"), "48");
  EXPECT_EQ(std::stod(f.metadata.at("eps")), 1e-5);
  for (int64_t l = 0; l < 13; ++l)
    for (int64_t q = 0; q < l; ++q) EXPECT_EQ(R.values[l * 13 + q], 0.0);  // upper triangular
  const auto j = nlohmann::json::parse(slurp(cert));
  EXPECT_TRUE(j.at("passed").get<bool>());
  // Parameter counts, recomputed from the shapes: N_old = n (d + m + 3) + m, N_new = m (d+1) + k (d+1) + m.
  EXPECT_EQ(j.at("parameters").at("n_old").get<int64_t>(), 48 * (12 + 8 + 3) + 8);
  EXPECT_EQ(j.at("parameters").at("n_new").get<int64_t>(), 8 * 13 + 13 * 13 + 8);
  // The overflow margin: max |coefficient| / 65504, within f16 rounding of the stored values.
  double max_stored = 0;
  for (const auto& [name, t] : f.tensors)
    for (double v : t.values) max_stored = std::max(max_stored, std::fabs(v));
  EXPECT_NEAR(j.at("storage").at("overflow_margin").get<double>(), max_stored / 65504, max_stored / 65504 * 0x1p-10);
  EXPECT_EQ(j.at("inputs").at("random").get<int>(), 16);
  EXPECT_EQ(j.at("contracted").at("f").at("elements").get<int64_t>(), (16 + 5) * 8);
  EXPECT_EQ(j.at("contracted").at("f").at("bound_violations").get<int64_t>(), 0);
  EXPECT_GT(j.at("original").at("f").at("elements").get<int64_t>(), 0);
}

TEST(Safetensors, ContractRejectsOverflowAndMalformedInputWithoutWriting) {
  // W scaled by 2^20: D = W diag(gamma) T overflows f16 but not f32.
  SafetensorsFile f = read_safetensors(kFixture);
  for (double& w : f.tensors.at("2.weight").values) w = std::ldexp(w, 20);
  const fs::path big = scratch() / "big.safetensors", out = scratch() / "never.safetensors";
  write_safetensors(big.string(), f);
  fs::remove(out);
  Outcome o = run_cli("contract --in " + big.string() + " --out " + out.string() + " --dtype f16 --assume-chain");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("overflows f16"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".certificate.json"));
  EXPECT_EQ(run_cli("contract --in " + big.string() + " --out " + out.string() + " --dtype f32 --samples 4 --assume-chain").exit_code, 0);
  const fs::path garbage = scratch() / "garbage.safetensors";
  std::ofstream(garbage) << "not a safetensors file at all";
  fs::remove(out);
  o = run_cli("contract --in " + garbage.string() + " --out " + out.string() + " --assume-chain");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(run_cli("contract --in " + kFixture + " --out " + out.string() + " --dtype f8 --assume-chain").exit_code, 2);
  EXPECT_EQ(run_cli("contract --in " + kFixture + " --out " + out.string() + " --eps 0 --assume-chain").exit_code, 2);
  EXPECT_EQ(run_cli("contract --in " + kFixture + " --out " + out.string() + " --consumers 7 --assume-chain").exit_code, 2);
  EXPECT_FALSE(fs::exists(out));
}

TEST(Safetensors, SharedConsumersGetOneRAndTheirOwnDAndC) {
  ContractionCase c = gen::make_contraction_case("shared_consumers", DType::f32, 3, {5, 9, 6, 1, true});
  ASSERT_EQ(c.block.consumer_rows.size(), 2u);
  BlockNames names;
  names.consumers = {"q", "kv"};
  const fs::path in = scratch() / "shared.safetensors", out = scratch() / "shared_c.safetensors";
  write_safetensors(in.string(), block_to_safetensors(c.block, DType::f32, names));
  const Outcome o = run_cli("contract --in " + in.string() + " --out " + out.string() + " --consumers q,kv --samples 4 --assume-chain");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const SafetensorsFile f = read_safetensors(out.string());
  EXPECT_EQ(f.tensors.count("R"), 1u);
  EXPECT_EQ(f.tensors.at("D.q").shape[0] + f.tensors.at("D.kv").shape[0], 6);
  EXPECT_EQ(f.tensors.count("c.kv"), 1u);
}

// --- The module list (issue 20): what a state dict cannot show ---------------------------------

namespace {

/// A module list file of `modules` (JSON array text).
std::string module_list(const std::string& name, const std::string& modules) {
  const fs::path p = scratch() / (name + ".modules.json");
  std::ofstream(p) << R"({"format": "normcheck-modules-v1", "modules": )" << modules << "}";
  return p.string();
}

void expect_refused(const std::string& args, const std::string& says) {
  const fs::path out = scratch() / "refused.safetensors";
  fs::remove(out);
  const Outcome o = run_cli("contract --in " + kFixture + " --out " + out.string() + " " + args);
  EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out)) << args;
  EXPECT_FALSE(fs::exists(out.string() + ".certificate.json")) << args;
}

}  // namespace

TEST(ContractGraph, AnOpBetweenTheModulesIsRefusedByName) {
  // The issue's case: Linear -> GELU -> LayerNorm -> Linear (modules 0, 2, 3 in the state dict).
  expect_refused("--graph " + module_list("gelu", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "GELU"},
      {"name": "2", "op": "LayerNorm"}, {"name": "3", "op": "Linear"}])"),
                 "module '1' (GELU) lies between Linear '0' and LayerNorm '2'");
  expect_refused("--graph " + module_list("dropout", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm"},
      {"name": "d", "op": "Dropout"}, {"name": "2", "op": "Linear"}])") + " --consumers 2",
                 "module 'd' (Dropout) lies between LayerNorm '1' and consumer '2'");
  expect_refused("--graph " + module_list("dropout_any", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm"},
      {"name": "d", "op": "Dropout"}, {"name": "2", "op": "Linear"}])"),
                 "module 'd' (Dropout) lies between LayerNorm '1' and any Linear");
  expect_refused("--graph " + module_list("hooked", R"([{"name": "0", "op": "Linear", "hooks": true}, {"name": "1", "op": "LayerNorm"},
      {"name": "2", "op": "Linear"}])"),
                 "module '0' (Linear) has hooks");
  expect_refused("--graph " + module_list("two_axes", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm", "normalized_dims": 2},
      {"name": "2", "op": "Linear"}])"),
                 "normalizes over 2 axes");
  // Issue 48 (low): 4294967297 (2^32 + 1) used to be read as 1 and the contraction certified PASSED.
  for (const char* dims : {"4294967297", "18446744073709551615", "65", "0", "1.5"})
    expect_refused("--graph " + module_list("huge_dims", std::string(R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm", "normalized_dims": )") +
                                                             dims + R"(}, {"name": "2", "op": "Linear"}])"),
                   "\"normalized_dims\" must be an integer from 1 to 64");
  // No module list: the state dict is not trusted unless the user says so; not both.
  expect_refused("", "give the model's module list with --graph FILE");
  expect_refused("--assume-chain --graph " + kFixtureModules, "exclude each other");
  // Malformed lists: one line naming the file and the problem.
  expect_refused("--graph " + module_list("later", R"([{"name": "0", "op": "Linear", "inputs": ["1"]}, {"name": "1", "op": "LayerNorm"}])"),
                 "reads '1', which is not an earlier module");
  expect_refused("--graph " + module_list("twice", R"([{"name": "0", "op": "Linear"}, {"name": "0", "op": "LayerNorm"}])"), "listed twice");
  const fs::path not_json = scratch() / "not_json.modules.json";
  std::ofstream(not_json) << "{\"format\": ";
  expect_refused("--graph " + not_json.string(), not_json.string());
  expect_refused("--graph " + (scratch() / "absent.json").string(), "absent.json");
  // Found by fuzz_module_graph: a non-string "format" was nlohmann's "type must be string, but is number".
  const fs::path numeric_format = scratch() / "numeric_format.modules.json";
  std::ofstream(numeric_format) << R"({"format": 5, "modules": [{"name": "0", "op": "Linear"}]})";
  expect_refused("--graph " + numeric_format.string(), "\"format\" must be \"normcheck-modules-v1\"");
  // The module list's eps is the LayerNorm's; a different --eps is a contradiction, not an override.
  expect_refused("--graph " + kFixtureModules + " --eps 1e-6", "differs from LayerNorm '1''s eps");
}

TEST(ContractGraph, ModulesOtherConsumersStillNeedCountInTheStorageComparison) {
  // A residual addition reads the LayerNorm's output: the LayerNorm stays, and so does its producer.
  const std::string graph = module_list("residual", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm"},
      {"name": "2", "op": "Linear"}, {"name": "add", "op": "Add", "inputs": ["1", "2"]}])");
  const fs::path out = scratch() / "residual_c.safetensors";
  const Outcome o = run_cli("contract --in " + kFixture + " --graph " + graph + " --out " + out.string() + " --samples 4");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto cert = nlohmann::json::parse(slurp(out.string() + ".certificate.json"));
  const auto& p = cert.at("parameters");
  const int64_t d = 12, n = 48, m = 8, k = 13;
  EXPECT_EQ(p.at("n_retained").get<int64_t>(), (n * d + n) + 2 * n);  // producer A, a; LayerNorm gamma, beta
  EXPECT_EQ(p.at("n_new").get<int64_t>(), m * (d + 1) + k * (d + 1) + m + (n * d + n) + 2 * n);
  EXPECT_FALSE(p.at("growth").get<bool>());
  const auto& retained = cert.at("chain").at("retained");
  ASSERT_EQ(retained.size(), 2u);
  EXPECT_EQ(retained[0].at("name"), "0");
  EXPECT_EQ(retained[0].at("needed_by"), "1");
  EXPECT_EQ(retained[1].at("name"), "1");
  EXPECT_EQ(retained[1].at("needed_by"), "add");
  EXPECT_NE(o.out.find("of them in retained modules"), std::string::npos) << o.out;
  // Only the producer is read elsewhere: it alone stays.
  const std::string side = module_list("producer_read", R"([{"name": "0", "op": "Linear"}, {"name": "1", "op": "LayerNorm"},
      {"name": "2", "op": "Linear"}, {"name": "skip", "op": "Add", "inputs": ["0", "2"]}])");
  ASSERT_EQ(run_cli("contract --in " + kFixture + " --graph " + side + " --out " + out.string() + " --samples 4").exit_code, 0);
  const auto cert2 = nlohmann::json::parse(slurp(out.string() + ".certificate.json"));
  EXPECT_EQ(cert2.at("parameters").at("n_retained").get<int64_t>(), n * d + n);
  // The plain chain keeps nothing, and records that it was checked; --assume-chain records that it was not.
  ASSERT_EQ(run_cli("contract --in " + kFixture + " --graph " + kFixtureModules + " --out " + out.string() + " --samples 4").exit_code, 0);
  const auto plain = nlohmann::json::parse(slurp(out.string() + ".certificate.json"));
  EXPECT_EQ(plain.at("parameters").at("n_retained").get<int64_t>(), 0);
  EXPECT_EQ(plain.at("chain").at("source"), "graph");
  ASSERT_EQ(run_cli("contract --in " + kFixture + " --assume-chain --out " + out.string() + " --samples 4").exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(slurp(out.string() + ".certificate.json")).at("chain").at("source"), "assumed");
}

TEST(ContractGraph, AContractionThatGrowsIsRefusedUnlessAllowed) {
  // The issue's wide block: d = 12, n = 8, m = 5 gives 165 -> 174 parameters.
  const fs::path block = scratch() / "wide.safetensors", modules = scratch() / "wide.modules.json", out = scratch() / "wide_c.safetensors";
  ASSERT_EQ(run_cli("example-block --d 12 --n 8 --m 5 --out " + block.string() + " --modules " + modules.string()).exit_code, 0);
  fs::remove(out);
  Outcome o = run_cli("contract --in " + block.string() + " --graph " + modules.string() + " --out " + out.string());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("165 -> 174 (5.5 % more); nothing written"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out));
  o = run_cli("contract --in " + block.string() + " --graph " + modules.string() + " --out " + out.string() + " --allow-growth --samples 4");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("warning: the contraction has more parameters than the block: 165 -> 174"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("165 -> 174 (5.5 % more)"), std::string::npos) << o.out;
  EXPECT_TRUE(nlohmann::json::parse(slurp(out.string() + ".certificate.json")).at("parameters").at("growth").get<bool>());
}

TEST(ContractGraph, TheStatusPageAndDocsContractCommandsRunAsPrinted) {
  // Every `example-block` and `contract` command line of docs/status.md and docs/qr-contraction.md, in
  // order, from a folder where build/ is this build and properties/ the source's.
  for (const std::string doc : {"docs/status.md", "docs/qr-contraction.md"}) {
    const fs::path root = scratch() / ("contract_doc_" + fs::path(doc).stem().string());
    fs::remove_all(root);
    fs::create_directories(root);
    fs::create_symlink(fs::path(NORMCHECK_BINARY).parent_path(), root / "build");
    fs::create_symlink(fs::path(NORMCHECK_SOURCE_DIR) / "properties", root / "properties");
    std::ifstream f(std::string(NORMCHECK_SOURCE_DIR) + "/" + doc);
    int ran = 0;
    for (std::string line; std::getline(f, line);) {
      if (line.rfind("    ./build/normcheck example-block", 0) != 0 && line.rfind("    ./build/normcheck contract", 0) != 0) continue;
      if (const size_t hash = line.find("  #"); hash != std::string::npos) line = line.substr(0, hash);
      const Outcome o = run_shell("cd " + root.string() + " && " + line.substr(4));
      EXPECT_EQ(o.exit_code, 0) << doc << ": " << line << "\n" << o.out << o.err;
      ++ran;
    }
    EXPECT_GE(ran, 2) << doc;
  }
}
