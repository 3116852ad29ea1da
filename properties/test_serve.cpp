// Issue 15: serve mode (one long-running command per worker thread, docs/plugins.md "Serve mode")
// and persistent plugin workers: a correct server passes, a planted one is caught, a server that
// crashes, hangs or breaks the protocol fails its call with the reason and is replaced, and the
// run goes on; PyTorch driven through serve mode is judged like any kernel.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "properties/cli_harness.hpp"

namespace {

const std::string kPython = "/usr/bin/python3";

std::string script(const char* name) { return std::string(NORMCHECK_SOURCE_DIR) + "/scripts/" + name; }

nlohmann::json load_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

bool python_has(const char* module) {
  return std::system(("/usr/bin/python3 -c 'import " + std::string(module) + "' 2>/dev/null").c_str()) == 0;
}

/// A Python server in the scratch folder: the NumPy example's kernel, with `misbehaviour` run on
/// every request before it (it sees `request`; it may exit, hang or print).
std::string write_server(const std::string& name, const std::string& misbehaviour) {
  const fs::path p = scratch() / (name + ".py");
  std::ofstream f(p);
  f << "import json, os, sys, time\n"
       "sys.path.insert(0, '" << NORMCHECK_SOURCE_DIR << "/scripts')\n"
       "import exec_example\n"
       "print(json.dumps({'ready': True}), flush=True)\n"
       "for line in sys.stdin:\n"
       "    request = json.loads(line)\n"
       "    " << misbehaviour << "\n"
       "    exec_example.compute(request['dir'], request)\n"
       "    print(json.dumps({'status': 'ok', 'call': request['call']}), flush=True)\n";
  return kPython + " " + p.string();
}

std::string serve_run(const std::string& command, const std::string& extra, const fs::path& out) {
  return "run --serve '" + command + "' --ops layernorm_forward --dtypes f32 --generators normal,large_mean --cases 3 " +
         extra + " --out " + out.string();
}

struct Failures {
  int64_t cases = 0, judged = 0;
  std::string first;
};

Failures failures(const nlohmann::json& report) {
  Failures f;
  for (const auto& r : report.at("records")) {
    f.cases += r.at("kernel_failures").at("cases").get<int64_t>();
    f.judged += r.at("elements").get<int64_t>();
    if (f.first.empty()) f.first = r.at("kernel_failures").at("first").get<std::string>();
  }
  return f;
}

}  // namespace

TEST(Serve, TheNumpyServerIsJudgedAndPasses) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_numpy.json";
  const Outcome o = run_cli("run --serve '" + kPython + " " + script("serve_numpy.py") +
                            "' --exec-name numpy --ops layernorm_forward,layernorm_backward,rmsnorm_backward "
                            "--dtypes bf16,f32,f64 --generators normal,large_mean --cases 2 --threads 2 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto j = load_json(out);
  ASSERT_EQ(j.at("records").size(), 3u * 2u * (1u + 3u + 2u));  // dtypes x generators x outputs
  for (const auto& r : j.at("records")) {
    EXPECT_EQ(r.at("kernel"), "serve:numpy");
    EXPECT_EQ(r.at("verdict"), "pass") << r.dump();
    EXPECT_EQ(r.at("kernel_failures").at("cases").get<int64_t>(), 0);
  }
}

TEST(Serve, APlantedOnePassVarianceIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_one_pass.json";
  const Outcome o = run_cli(serve_run(kPython + " " + script("serve_numpy.py") + " --one-pass", "", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  std::map<std::string, std::string> verdict;
  const auto j = load_json(out);
  for (const auto& r : j.at("records")) verdict[r.at("property").get<std::string>()] = r.at("verdict");
  EXPECT_EQ(verdict["accuracy/large_mean"], "fail");  // E[x^2] - E[x]^2 cancels
  EXPECT_EQ(verdict["accuracy/normal"], "pass");
}

TEST(Serve, ACrashingServerFailsItsCallIsReplacedAndTheRunGoesOn) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_crash.json";
  // every process dies on its second call: each crash fails one case, a new process takes the next
  const std::string server = write_server("crash_second", "if request['call'] == 2: os._exit(3)");
  const Outcome o = run_cli(serve_run(server, "", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const auto j = load_json(out);
  EXPECT_TRUE(j.at("run").at("complete").get<bool>());
  const Failures f = failures(j);
  EXPECT_GT(f.cases, 0);
  EXPECT_GT(f.judged, 0);
  EXPECT_NE(f.first.find("serve command exited with status 3"), std::string::npos) << f.first;
  EXPECT_NE(f.first.find("seed"), std::string::npos) << f.first;
  EXPECT_NE(slurp(out.string() + ".failures.jsonl").find("\"case\""), std::string::npos);
}

TEST(Serve, AHungServerIsKilledAtTheTimeLimitAndReplaced) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_hang.json";
  const std::string server = write_server("hang_second", "time.sleep(600) if request['call'] == 2 else None");
  const Outcome o = run_cli(serve_run(server, "--kernel-timeout 1", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const Failures f = failures(load_json(out));
  EXPECT_GT(f.judged, 0);
  EXPECT_NE(f.first.find("timed out after 1 s (killed)"), std::string::npos) << f.first;
}

TEST(Serve, ProtocolViolationsAreFailuresWithTheirReason) {
  const fs::path out = scratch() / "serve_protocol.json";
  Outcome o = run_cli(serve_run("echo hello", "", out));  // no ready line: every call fails, none hangs
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  Failures f = failures(load_json(out));
  EXPECT_EQ(f.judged, 0);
  EXPECT_NE(f.first.find("not a JSON object"), std::string::npos) << f.first;
  if (!python_has("numpy")) return;
  const std::string chatty = write_server("chatty", "print('debug output', flush=True)");
  o = run_cli(serve_run(chatty, "", out));
  EXPECT_EQ(o.exit_code, 1);
  f = failures(load_json(out));
  EXPECT_NE(f.first.find("print diagnostics to stderr"), std::string::npos) << f.first;
  const std::string erring =
      write_server("erring", "print(json.dumps({'status': 'error', 'message': 'no GPU', 'call': request['call']}), flush=True); continue");
  o = run_cli(serve_run(erring, "", out));
  EXPECT_EQ(o.exit_code, 1);
  f = failures(load_json(out));
  EXPECT_NE(f.first.find("serve command: no GPU"), std::string::npos) << f.first;
  // a reply that does not name its call, or an extra line, would credit one call's outputs to another
  const std::string extra = write_server("extra_line", "print(json.dumps({'note': 'extra'}), flush=True) if request['call'] == 2 else None");
  o = run_cli(serve_run(extra, "", out));
  EXPECT_EQ(o.exit_code, 1);
  f = failures(load_json(out));
  EXPECT_NE(f.first.find("broke the protocol"), std::string::npos) << f.first;
  EXPECT_GT(f.judged, 0);  // the replacement processes go on
  // Issue 49 item 3: a reply naming the previous call (its outputs written and correct) is another
  // call's answer: only the case of the first process's second call fails, and its reason says so.
  const std::string marker = (scratch() / "previous_call.marker").string();
  std::error_code ec;
  fs::remove(marker, ec);
  const std::string previous = write_server(
      "previous_call", "exec_example.compute(request['dir'], request) if request['call'] == 2 and not os.path.exists('" + marker +
                           "') else None\n    if request['call'] == 2 and not os.path.exists('" + marker + "'):\n        open('" + marker +
                           "', 'w').close(); print(json.dumps({'status': 'ok', 'call': 1}), flush=True); continue");
  o = run_cli(serve_run(previous, "--threads 1 --kernel-timeout 2", out));  // no reply to call 2 follows within 2 s
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  f = failures(load_json(out));
  EXPECT_EQ(f.cases, 1);
  EXPECT_NE(f.first.find("broke the protocol: the reply to call 2 must be one line with \"call\": 2"), std::string::npos) << f.first;
  EXPECT_NE(f.first.find("\"call\":1"), std::string::npos) << f.first;
  const std::string typed = write_server("typed", "print(json.dumps({'status': 1, 'call': request['call']}), flush=True); continue");
  o = run_cli(serve_run(typed, "", out));  // a wrongly typed field is a failure of the call, not of the run
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_TRUE(load_json(out).at("run").at("complete").get<bool>());
}

TEST(Serve, PyTorchThroughServeModeIsJudgedWithTheLibtorchFindings) {
  if (!python_has("torch")) GTEST_SKIP() << "python3-torch absent";
  const fs::path out = scratch() / "serve_torch.json";
  const auto run = [&](const std::string& what) {
    const Outcome o = run_cli("run --serve '" + kPython + " " + script("serve_torch.py") +
                              "' --exec-name torch --report-only --cases 2 " + what + " --out " + out.string());
    EXPECT_EQ(o.exit_code, 0) << o.out << o.err;  // report-only: third-party code
    return load_json(out).at("records");
  };
  // ATen's y = x*rstd + (-rstd*mean) misses beta on one-element rows (docs/findings-libtorch.md)
  const auto ln = run("--ops layernorm_forward --dtypes f32 --generators n_equals_1");
  ASSERT_EQ(ln.size(), 1u);
  EXPECT_EQ(ln[0].at("kernel"), "serve:torch");
  EXPECT_EQ(ln[0].at("verdict"), "fail");
  EXPECT_EQ(ln[0].at("expectation"), "report_only");
  const auto rms = run("--ops rmsnorm_forward --dtypes f16,f32 --generators normal");
  ASSERT_EQ(rms.size(), 2u);
  for (const auto& r : rms) {
    if (r.at("storage") == "f16") EXPECT_EQ(r.at("cases").get<int64_t>(), 0);  // unsupported by torch 1.13 on the CPU: skipped
    else EXPECT_EQ(r.at("verdict"), "pass") << r.dump();
  }
}

namespace {

/// Runs a record's printed replay command as printed, from `cwd` ("normcheck" is this build's binary).
Outcome run_printed_replay(const nlohmann::json& record, const fs::path& cwd, const std::string& extra = "") {
  std::string printed = record.at("worst_case").at("replay").get<std::string>();
  EXPECT_EQ(printed.rfind("normcheck ", 0), 0u) << printed;
  return run_shell("cd " + cwd.string() + " && " + std::string(NORMCHECK_BINARY) + printed.substr(9) + extra);
}

/// The first record with a worst case.
nlohmann::json record_with_case(const fs::path& report) {
  const auto j = load_json(report);
  for (const auto& r : j.at("records"))
    if (!r.at("worst_case").is_null()) return r;
  ADD_FAILURE() << "no record with a worst case in " << report;
  return nullptr;
}

}  // namespace

TEST(Replay, ExternalRecordsReplayAsPrintedForEveryKernelKind) {
  const fs::path dir = scratch() / "replay_external";
  fs::create_directories(dir);
  std::vector<std::string> kinds = {"--kernel " + std::string(NORMCHECK_PLUGIN_DIR) + "/libnc_plugin_one_pass.so"};
  if (python_has("numpy")) {
    kinds.push_back("--exec '" + kPython + " " + script("exec_example.py") + " {dir} --one-pass'");
    kinds.push_back("--serve '" + kPython + " " + script("serve_numpy.py") + " --one-pass'");
  }
  for (const std::string& kind : kinds) {
    const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run " + kind +
                                  " --ops layernorm_forward --dtypes f32 --generators large_mean --cases 2 --out r.json");
    ASSERT_EQ(run.exit_code, 1) << kind << run.out << run.err;  // the planted one-pass variance fails
    const nlohmann::json rec = record_with_case(dir / "r.json");
    const Outcome o = run_printed_replay(rec, dir);
    EXPECT_EQ(o.exit_code, 0) << kind << o.out << o.err;
    EXPECT_NE(o.out.find("replay reproduces the recorded worst element"), std::string::npos) << kind << o.out << o.err;
    EXPECT_NE(o.out.find("second call: every output bit-identical"), std::string::npos) << kind << o.out << o.err;
  }
  if (!python_has("numpy")) return;
  // a served block kernel's record, replayed through the recorded command and block form
  const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --serve '" + kPython + " " +
                                script("serve_numpy.py") + " --bias-in-correction' --ops linear_rmsnorm --block-form deferred "
                                "--dtypes f32 --block-generators normal --block-cases 2 --out b.json");
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  const auto j = load_json(dir / "b.json");
  for (const auto& r : j.at("rms_block").at("records"))
    if (r.at("output") == "dx") {
      const Outcome o = run_printed_replay(r, dir);
      EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
      EXPECT_NE(o.out.find("replay reproduces the recorded worst element"), std::string::npos) << o.out << o.err;
    }
}

TEST(Replay, AKernelThatChangesItsOutputsBetweenCallsReplaysAsNondeterministic) {
  // Accurate (one ULP on one element), but every second call differs from the first: replay calls
  // the kernel twice and names the differing element with both values.
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path dir = scratch() / "replay_nondeterministic";
  fs::create_directories(dir);
  const fs::path server = dir / "every_second_call.py";
  std::ofstream(server) << "import json, os, sys\n"
                           "import numpy as np\n"
                           "sys.path.insert(0, '" << NORMCHECK_SOURCE_DIR << "/scripts')\n"
                           "import exec_example\n"
                           "print(json.dumps({'ready': True}), flush=True)\n"
                           "for calls, line in enumerate(sys.stdin, 1):\n"
                           "    request = json.loads(line)\n"
                           "    exec_example.compute(request['dir'], request)\n"
                           "    if calls % 2 == 0:\n"
                           "        path = os.path.join(request['dir'], request['outputs']['y'])\n"
                           "        y = np.load(path)\n"
                           "        y[0, 0] = np.nextafter(y[0, 0], np.float32(np.inf))\n"
                           "        np.save(path, y)\n"
                           "    print(json.dumps({'status': 'ok', 'call': request['call']}), flush=True)\n";
  const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --serve '" + kPython + " " + server.string() +
                                "' --invariance off --threads 1 --ops layernorm_forward --dtypes f32 --generators normal --cases 1 --out r.json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;  // one call per case: accurate, passes
  const Outcome o = run_printed_replay(record_with_case(dir / "r.json"), dir);
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("NONDETERMINISTIC: output y row 0 col 0 differs between call 1 and call 2 (fresh buffers)"), std::string::npos)
      << o.out << o.err;
  EXPECT_NE(o.out.find("\n  call 1   "), std::string::npos) << o.out;  // both values, in hex and decimal
  EXPECT_NE(o.out.find("\n  call 2   "), std::string::npos) << o.out;
}

TEST(Replay, GroupedRecordsReplayAsPrintedForBuiltinPluginAndServedKernels) {
  const fs::path dir = scratch() / "replay_grouped";
  fs::create_directories(dir);
  std::vector<std::string> kinds = {"", "--kernel " + std::string(NORMCHECK_PLUGIN_DIR) + "/libnc_plugin_v2_wrong_groups.so"};
  if (python_has("numpy")) kinds.push_back("--serve '" + kPython + " " + script("serve_numpy.py") + " --wrong-groups'");
  for (const std::string& kind : kinds) {
    const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --suite quick " + kind +
                                  " --ops grouped_norm --dtypes f32 --grouped-cases 1 --out g.json");
    ASSERT_EQ(run.exit_code, kind.empty() ? 0 : 1) << kind << run.out << run.err;  // the planted wrong G fails group norm
    int replayed = 0;
    const nlohmann::json report = load_json(dir / "g.json");
    for (const auto& r : report.at("grouped_norm").at("records")) {
      if (r.at("kind") != "group_norm" || (r.at("output") != "y" && r.at("output") != "dx")) continue;
      EXPECT_EQ(r.at("verdict"), kind.empty() ? "pass" : "fail") << kind;
      const Outcome o = run_printed_replay(r, dir);
      EXPECT_EQ(o.exit_code, 0) << kind << o.out << o.err;
      EXPECT_NE(o.out.find("replay reproduces the recorded worst element"), std::string::npos) << kind << o.out << o.err;
      EXPECT_NE(o.out.find(r.value("kernel", std::string("builtin"))), std::string::npos) << kind << o.out;
      ++replayed;
    }
    EXPECT_EQ(replayed, 2) << kind;
  }
  // an edited seed no longer regenerates the recorded shape: one line, exit 2
  nlohmann::json j = load_json(dir / "g.json");
  j["grouped_norm"]["records"][0]["worst_case"]["shape"] = {1, 2, 3};
  std::ofstream(dir / "edited.json") << j.dump();
  const Outcome bad = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " replay --report edited.json --grouped-record 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("does not match the recorded shape"), std::string::npos) << bad.err;
}

TEST(Replay, DumpWritesTheCaseAndTheExactOutputsForTheUsersOwnDebugger) {
  const fs::path dir = scratch() / "replay_dump";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --kernel " + NORMCHECK_PLUGIN_DIR +
                                "/libnc_plugin_good.so --ops layernorm_backward --dtypes f64 --generators normal --cases 1 --out r.json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json rec = record_with_case(dir / "r.json");
  const Outcome o = run_printed_replay(rec, dir, " --dump case");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  for (const char* f : {"manifest.json", "x.npy", "gamma.npy", "beta.npy", "dy.npy", "expected_dx.npy", "expected_dgamma.npy",
                        "expected_dbeta.npy", "exact.json"})
    EXPECT_TRUE(fs::exists(dir / "case" / f)) << f;
  const auto manifest = load_json(dir / "case" / "manifest.json");
  EXPECT_EQ(manifest.at("record").at("kernel"), "plugin:nc_good");
  const auto exact = load_json(dir / "case" / "exact.json");
  const int64_t rows = manifest.at("rows").get<int64_t>(), n = manifest.at("n").get<int64_t>();
  EXPECT_EQ(static_cast<int64_t>(exact.at("outputs").at("dx").size()), rows * n);
  EXPECT_EQ(static_cast<int64_t>(exact.at("outputs").at("dbeta").size()), n);
  if (!python_has("numpy")) return;
  // the exec example computes in float64 and rounds once: on this case its f64 dbeta is the expected one
  const Outcome cmp = run_shell(kPython + " -c \"import json, numpy as np, sys; sys.path.insert(0, '" + std::string(NORMCHECK_SOURCE_DIR) +
                                "/scripts'); import exec_example; d='" + (dir / "case").string() +
                                "'; m=json.load(open(d+'/manifest.json')); exec_example.compute(d, m); "
                                "e=np.load(d+'/expected_dbeta.npy'); g=np.load(d+'/dbeta.npy'); "
                                "print(float(np.max(np.abs(g-e)/np.maximum(np.abs(e),1e-300))))\"");
  ASSERT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
  // float64 sums of dy against the correctly rounded exact sums: a few ulps at most, never a wrong file
  EXPECT_LT(std::stod(cmp.out), 1e-13) << cmp.out;
}

TEST(Replay, AFailedExternalCallReplaysAsAKernelFailure) {
  const fs::path dir = scratch() / "replay_crash";
  fs::create_directories(dir);
  const Outcome run = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --kernel " + NORMCHECK_PLUGIN_DIR +
                                "/libnc_plugin_crash.so --ops layernorm_forward --dtypes f32 --generators normal --cases 3 --out r.json");
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("KERNEL FAILURE"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("crashed with signal 11"), std::string::npos) << run.out;
  const nlohmann::json rec = record_with_case(dir / "r.json");
  EXPECT_EQ(rec.at("verdict"), "kernel_failure");
  const Outcome o = run_printed_replay(rec, dir);  // the worst case ran (n <= 64); crashing cases have none
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  // a served block kernel whose call crashes replays as a kernel failure, exit 1
  if (!python_has("numpy")) return;
  const std::string crash = write_server("block_crash_second", "os._exit(3) if request['call'] >= 2 else None");
  const Outcome b = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY + " run --serve '" + crash +
                              "' --ops linear_rmsnorm --block-form deferred --dtypes f32 --block-generators normal --block-cases 1 --out b.json");
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;  // one case: the first call of the process, which answers
  const auto j = load_json(dir / "b.json");
  const Outcome r = run_printed_replay(j.at("rms_block").at("records").at(0), dir);  // a new process: call 1 answers too
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const Outcome failed = run_shell("cd " + dir.string() + " && " + NORMCHECK_BINARY +
                                   " replay --report b.json --block-record 0 --serve 'exit 3'");
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_NE(failed.out.find("kernel failure: serve command exited with status 3"), std::string::npos) << failed.out;
}

namespace {

/// verdict per "<dtype> <kind> <output>" of a report's grouped_norm section.
std::map<std::string, std::string> grouped_verdicts(const fs::path& report) {
  std::map<std::string, std::string> v;
  const auto j = load_json(report);
  for (const auto& r : j.at("grouped_norm").at("records"))
    v[r.at("storage").get<std::string>() + " " + r.at("kind").get<std::string>() + " " + r.at("output").get<std::string>()] =
        r.at("verdict");
  return v;
}

}  // namespace

TEST(Serve, GroupedNormsAreJudgedThroughServeModeAndAWrongGroupCountIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_grouped.json";
  const std::string server = kPython + " " + script("serve_numpy.py");
  Outcome o = run_cli("run --serve '" + server + "' --exec-name numpy --ops grouped_norm --dtypes f32,f64 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  auto v = grouped_verdicts(out);
  // batch norm: y, dx, dgamma, dbeta, running stats, inference; group, instance, layer and channel-layer
  // norm y, dx, dgamma, dbeta; RMSNorm y, dx, dgamma
  EXPECT_EQ(v.size(), 2u * (7u + 4u + 4u + 4u + 4u + 3u));
  for (const auto& [key, verdict] : v) EXPECT_EQ(verdict, "pass") << key;
  EXPECT_EQ(load_json(out).at("grouped_norm").at("records").at(0).at("kernel"), "serve:numpy");
  o = run_cli("run --serve '" + server + " --wrong-groups' --exec-name numpy --ops grouped_norm --dtypes f32 --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  v = grouped_verdicts(out);
  EXPECT_EQ(v["f32 group_norm y"], "fail");  // statistics over one group instead of G
  EXPECT_EQ(v["f32 group_norm dx"], "fail");
  EXPECT_EQ(v["f32 batch_norm y"], "pass");
  EXPECT_EQ(v["f32 instance_norm y"], "pass");
}

TEST(Serve, TorchInstanceNormBackwardIsWrongForChannelsLastGradients) {
  if (!python_has("torch")) GTEST_SKIP() << "python3-torch absent";
  // docs/findings-torch-serve.md: F.instance_norm's backward in torch 1.13 (CPU) returns wrong dx,
  // dgamma and dbeta when the incoming gradient is channels-last strided (NHWC tensors) and the
  // input is not; batch and group norm get the same gradients right.
  const fs::path out = scratch() / "serve_torch_grouped.json";
  const Outcome o = run_cli("run --serve '" + kPython + " " + script("serve_torch.py") +
                            "' --exec-name torch --report-only --ops grouped_norm --dtypes f64 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;  // report-only
  auto v = grouped_verdicts(out);
  EXPECT_EQ(v["f64 instance_norm dbeta"], "fail");
  EXPECT_EQ(v["f64 instance_norm y"], "pass");
  EXPECT_EQ(v["f64 group_norm dbeta"], "pass");
  EXPECT_EQ(v["f64 batch_norm dbeta"], "pass");
  EXPECT_EQ(v["f64 batch_norm running_var"], "pass");
}

TEST(Serve, ABlockKernelIsJudgedThroughServeModeAndAWrongDeferredCorrectionIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "serve_block.json";
  const std::string server = kPython + " " + script("serve_numpy.py");
  const auto verdicts = [&]() {
    std::map<std::string, std::string> v;
    const auto j = load_json(out);
    for (const auto& r : j.at("rms_block").at("records")) {
      EXPECT_EQ(r.at("kernel"), "serve:numpy");
      v[r.at("storage").get<std::string>() + " " + r.at("property").get<std::string>() + " " + r.at("output").get<std::string>()] =
          r.at("verdict");
    }
    return v;
  };
  Outcome o = run_cli("run --serve '" + server + "' --exec-name numpy --ops linear_rmsnorm --block-form deferred --dtypes bf16,f32 --out " +
                      out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  for (const auto& [key, verdict] : verdicts()) EXPECT_EQ(verdict, "pass") << key;
  // <dy, y> instead of <dy, y - b>: dx is wrong wherever the block has a bias
  o = run_cli("run --serve '" + server + " --bias-in-correction' --exec-name numpy --ops linear_rmsnorm --block-form deferred "
              "--dtypes f32 --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  auto v = verdicts();
  EXPECT_EQ(v["f32 accuracy/normal dx"], "fail");
  EXPECT_EQ(v["f32 accuracy/no_bias dx"], "pass");  // b = 0: the defect is invisible, and not a false alarm
  EXPECT_EQ(v["f32 accuracy/normal y"], "pass");
  EXPECT_EQ(v["f32 accuracy/normal dw"], "pass");
  // the form is the user's statement: without it the bound is unknown
  o = run_cli("run --serve '" + server + "' --ops linear_rmsnorm");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--block-form"), std::string::npos) << o.err;
}

TEST(Serve, TheAxisAuditNamesTheWrongAxisOfAServedKernel) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const std::string server = kPython + " " + script("exec_axes_example.py") + " --serve --over ";
  Outcome o = run_cli("audit-axes --shape 2,3,4,4 --layout nchw --kind channel_layer_norm --serve '" + server + "W'");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("MISMATCH: the kernel normalizes over W, declared over C"), std::string::npos) << o.out;
  o = run_cli("audit-axes --shape 2,3,4,4 --layout nchw --kind channel_layer_norm --serve '" + server + "C'");
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("match: normalizes over C"), std::string::npos) << o.out;
  o = run_cli("audit-axes --shape 2,3,4,4 --layout nchw --kind channel_layer_norm --exec-timeout nan --serve '" + server + "C'");
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
}

namespace {

std::string plugin_v2(const char* behaviour) {
  return std::string(NORMCHECK_PLUGIN_DIR) + "/libnc_plugin_v2_" + behaviour + ".so";
}

/// verdict per "<section> <dtype> <property or kind> <output>" of the block and grouped sections.
std::map<std::string, std::string> section_verdicts(const fs::path& report) {
  std::map<std::string, std::string> v;
  const auto j = load_json(report);
  for (const auto& r : j.at("rms_block").at("records"))
    v["block " + r.at("storage").get<std::string>() + " " + r.at("property").get<std::string>() + " " + r.at("output").get<std::string>()] =
        r.at("verdict");
  for (const auto& r : j.at("grouped_norm").at("records"))
    v["grouped " + r.at("storage").get<std::string>() + " " + r.at("kind").get<std::string>() + " " + r.at("output").get<std::string>()] =
        r.at("verdict");
  return v;
}

}  // namespace

TEST(PluginAbiV2, GroupedNormsAndTheBlockAreJudgedThroughAVersion2Plugin) {
  const fs::path out = scratch() / "v2_good.json";
  const Outcome o = run_cli("run --kernel " + plugin_v2("good") + " --dtypes f32,f64 --threads 2 --out " + out.string());
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const auto j = load_json(out);
  EXPECT_EQ(j.at("rms_block").at("records").at(0).at("kernel"), "plugin:nc_v2_good");
  EXPECT_EQ(j.at("rms_block").at("records").at(0).at("bound_id").get<std::string>().rfind("BLOCK-DEFERRED", 0), 0u);  // its declared form
  EXPECT_EQ(j.at("grouped_norm").at("records").at(0).at("kernel"), "plugin:nc_v2_good");
  const auto v = section_verdicts(out);
  // per dtype: 4 block generators x 4 outputs, and batch norm's 7 outputs + group, instance, layer and
  // channel-layer norm's 4 each + RMSNorm's 3
  EXPECT_EQ(v.size(), 2u * (4u * 4u + 7u + 4u + 4u + 4u + 4u + 3u));
  for (const auto& [key, verdict] : v) EXPECT_EQ(verdict, "pass") << key;
  EXPECT_EQ(j.at("records").at(0).at("kernel"), "plugin:nc_v2_good");  // its version 1 LayerNorm forward in the same library
}

namespace {

/// Runs the axis audit on an external kernel; returns the exit code and the audit records.
std::pair<int, nlohmann::json> external_axis_audit(const std::string& kernel_flags, const std::string& name) {
  const fs::path out = scratch() / ("audit_" + name + ".json");
  const Outcome o = run_cli("run " + kernel_flags + " --ops axis_audit --out " + out.string());
  if (o.exit_code == 2) ADD_FAILURE() << o.err;
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") == 0) {  // the external audit's fields are in the schema
    EXPECT_EQ(std::system(("/usr/bin/python3 -c \"import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                           "json.load(open(sys.argv[2])))\" " + out.string() + " " + std::string(NORMCHECK_SOURCE_DIR) +
                           "/reports/schema/report.v1.schema.json").c_str()),
              0);
  }
  return {o.exit_code, load_json(out).at("axis_audit")};
}

/// The verdict of the record declaring `kind` on `layout` in `dtype` ("" when absent).
std::string audit_verdict(const nlohmann::json& audit, const std::string& kind, const std::string& layout, const std::string& dtype) {
  for (const auto& r : audit.at("records"))
    if (r.at("declared").at("kind") == kind && r.at("tensor").at("layout") == layout && r.at("kernel").at("dtype") == dtype)
      return r.at("kernel").at("verdict").get<std::string>();
  return "";
}

}  // namespace

TEST(PluginAbiV2, TheAxisAuditProbesAVersion2PluginAndNamesTheAxisOfAWrongGroupCount) {
  auto [code, audit] = external_axis_audit("--kernel " + plugin_v2("good"), "v2_good");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(audit.at("kernel"), "plugin:nc_v2_good");
  EXPECT_EQ(audit.at("records").size(), 8u);  // the eight standard cases in f32; bf16 declined by the plugin
  for (const auto& r : audit.at("records")) {
    EXPECT_TRUE(r.at("kernel").at("match").get<bool>()) << r.dump();
    // the affine axes are probed too (gamma and beta of the declared shape through the ABI)
    EXPECT_TRUE(r.at("kernel").at("affine").at("match").get<bool>()) << r.dump();
  }
  std::tie(code, audit) = external_axis_audit("--kernel " + plugin_v2("wrong_groups"), "v2_wrong_groups");
  EXPECT_EQ(code, 1);
  EXPECT_FALSE(audit.at("passed").get<bool>());
  // G = 2 declared on NCHW (2, 6, 3, 5); the plugin normalizes over one group: C joins the reduction.
  const std::string verdict = audit_verdict(audit, "group_norm", "nchw", "f32");
  EXPECT_EQ(verdict.rfind("MISMATCH", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("the kernel normalizes over C, H, W"), std::string::npos) << verdict;
  EXPECT_EQ(audit_verdict(audit, "batch_norm", "nchw", "f32").rfind("match", 0), 0u);
}

TEST(Serve, TheAxisAuditProbesAServedKernelAndNamesTheAxisOfAWrongGroupCount) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const std::string server = kPython + " " + script("serve_numpy.py");
  auto [code, audit] = external_axis_audit("--serve '" + server + "' --exec-name numpy", "serve_good");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(audit.at("records").size(), 16u);  // eight standard cases in f32 and bf16
  for (const auto& r : audit.at("records")) {
    EXPECT_TRUE(r.at("kernel").at("match").get<bool>()) << r.dump();
    EXPECT_TRUE(r.at("kernel").at("affine").at("match").get<bool>()) << r.dump();
  }
  std::tie(code, audit) = external_axis_audit("--serve '" + server + " --wrong-groups' --exec-name numpy", "serve_wrong");
  EXPECT_EQ(code, 1);
  for (const char* dt : {"f32", "bf16"}) {
    const std::string verdict = audit_verdict(audit, "group_norm", "nchw", dt);
    EXPECT_NE(verdict.find("the kernel normalizes over C, H, W"), std::string::npos) << dt << ": " << verdict;
  }
}

namespace {

/// verdict per "<dtype> <generator> <output>" of the contracted records of a report.
std::map<std::string, std::string> contracted_verdicts(const nlohmann::json& report) {
  std::map<std::string, std::string> v;
  for (const auto& r : report.at("qr_contraction").at("records"))
    if (r.at("form") == "contracted")
      v[r.at("storage").get<std::string>() + " " + r.at("property").get<std::string>() + " " + r.at("output").get<std::string>()] =
          r.at("verdict");
  return v;
}

/// Runs the contraction section on an external kernel; checks that every contracted record of the
/// dtypes names the kernel and returns the report.
nlohmann::json external_contraction(const std::string& kernel_flags, const std::string& name, int expected_exit) {
  const fs::path out = scratch() / ("contraction_" + name + ".json");
  const Outcome o = run_cli("run " + kernel_flags + " --ops qr_contraction --dtypes f32,f64 --contraction-cases 3 --out " + out.string());
  EXPECT_EQ(o.exit_code, expected_exit) << o.out << o.err;
  const nlohmann::json j = load_json(out);
  for (const auto& r : j.at("qr_contraction").at("records"))
    if (r.at("form") == "contracted") {
      EXPECT_NE(r.at("kernel").get<std::string>().find(':'), std::string::npos) << r.dump();
    }
  return j;
}

/// The replay command of the first failing contracted record, run as printed from another directory.
Outcome replay_first_failing_contraction(const nlohmann::json& report) {
  for (const auto& r : report.at("qr_contraction").at("records"))
    if (r.at("form") == "contracted" && r.at("verdict") == "fail")
      return run_shell("cd / && " + std::string(NORMCHECK_BINARY) + r.at("worst_case").at("replay").get<std::string>().substr(9));
  ADD_FAILURE() << "no failing contracted record";
  return {-1, "", ""};
}

}  // namespace

TEST(PluginAbiV2, TheContractedBlockIsJudgedThroughAVersion2PluginAndADivisorSlipIsCaught) {
  nlohmann::json j = external_contraction("--kernel " + plugin_v2("good"), "v2_good", 0);
  auto v = contracted_verdicts(j);
  EXPECT_EQ(v.size(), 2u * 9u * 2u);  // f32, f64 x nine categories x f, dx
  for (const auto& [key, verdict] : v) EXPECT_EQ(verdict, "pass") << key;
  // |R xbar|^2 / k for / n: f and dx far outside the contraction bound in both dtypes.
  j = external_contraction("--kernel " + plugin_v2("contracted_k_divisor"), "v2_k_divisor", 1);
  v = contracted_verdicts(j);
  for (const char* key : {"f32 accuracy/random f", "f32 accuracy/random dx", "f64 accuracy/random f"}) EXPECT_EQ(v[key], "fail") << key;
  const Outcome replay = replay_first_failing_contraction(j);
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("kernel plugin:nc_v2_contracted_k_divisor"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("replay reproduces the recorded worst element"), std::string::npos) << replay.out;
}

TEST(Serve, TheContractedBlockIsJudgedThroughServeModeAndADivisorSlipIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const std::string server = kPython + " " + script("serve_numpy.py");
  nlohmann::json j = external_contraction("--serve '" + server + "' --exec-name numpy", "serve_good", 0);
  for (const auto& [key, verdict] : contracted_verdicts(j)) EXPECT_EQ(verdict, "pass") << key;
  j = external_contraction("--serve '" + server + " --k-divisor' --exec-name numpy", "serve_k_divisor", 1);
  EXPECT_EQ(contracted_verdicts(j)["f32 accuracy/random f"], "fail");
  const Outcome replay = replay_first_failing_contraction(j);
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("kernel serve:numpy"), std::string::npos) << replay.out;
}

namespace {

/// verdict per "<dtype> <generator>" of a report's layernorm_jvp section, and its replay command of
/// the first failing record.
std::map<std::string, std::string> jvp_verdicts(const nlohmann::json& report, std::string* first_failing_replay = nullptr,
                                                const std::string& op = "layernorm_jvp") {
  std::map<std::string, std::string> v;
  for (const auto& r : report.at(op).at("records")) {
    if (r.at("cases").get<int64_t>() == 0) continue;
    v[r.at("storage").get<std::string>() + " " + r.at("property").get<std::string>()] = r.at("verdict");
    if (first_failing_replay && first_failing_replay->empty() && r.at("verdict") == "fail")
      *first_failing_replay = r.at("worst_case").at("replay").get<std::string>();
  }
  return v;
}

nlohmann::json external_jvp_run(const std::string& kernel_flags, const std::string& name, int expected_exit,
                                const std::string& op = "layernorm_jvp") {
  const fs::path out = scratch() / (op + "_" + name + ".json");
  const Outcome o = run_cli("run " + kernel_flags + " --ops " + op + " --dtypes f32,f64 --jvp-cases 2 --out " + out.string());
  EXPECT_EQ(o.exit_code, expected_exit) << o.out << o.err;
  return load_json(out);
}

}  // namespace

TEST(PluginAbiV2, TheLayerNormJvpIsJudgedThroughAVersion2PluginAndAMissingTangentTermIsCaught) {
  nlohmann::json j = external_jvp_run("--kernel " + plugin_v2("good"), "v2_good", 0);
  auto v = jvp_verdicts(j);
  EXPECT_EQ(v.size(), 2u * 11u);  // f32, f64 x the eleven row generators
  for (const auto& [key, verdict] : v) EXPECT_EQ(verdict, "pass") << key;
  EXPECT_EQ(j.at("layernorm_jvp").at("records").at(0).at("kernel"), "plugin:nc_v2_good");
  j = external_jvp_run("--kernel " + plugin_v2("jvp_no_dgamma"), "v2_no_dgamma", 1);
  std::string replay;
  v = jvp_verdicts(j, &replay);
  for (const char* key : {"f32 accuracy/normal", "f64 accuracy/normal"}) EXPECT_EQ(v[key], "fail") << key;
  const Outcome r = run_shell("cd / && " + std::string(NORMCHECK_BINARY) + replay.substr(9));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("plugin:nc_v2_jvp_no_dgamma"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay reproduces the recorded worst element"), std::string::npos) << r.out;
}

TEST(Serve, TheLayerNormJvpIsJudgedThroughServeModeAndAMissingTangentTermIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const std::string server = kPython + " " + script("serve_numpy.py");
  nlohmann::json j = external_jvp_run("--serve '" + server + "' --exec-name numpy", "serve_good", 0);
  for (const auto& [key, verdict] : jvp_verdicts(j)) EXPECT_EQ(verdict, "pass") << key;
  j = external_jvp_run("--serve '" + server + " --jvp-no-dgamma' --exec-name numpy", "serve_no_dgamma", 1);
  EXPECT_EQ(jvp_verdicts(j)["f32 accuracy/normal"], "fail");
}

TEST(PluginAbiV2, TheRmsNormJvpIsJudgedThroughAVersion2PluginAndAMissingTangentTermIsCaught) {
  nlohmann::json j = external_jvp_run("--kernel " + plugin_v2("good"), "v2_good", 0, "rmsnorm_jvp");
  auto v = jvp_verdicts(j, nullptr, "rmsnorm_jvp");
  EXPECT_EQ(v.size(), 2u * 11u);
  // overflow_prone: the sum of squares may overflow and every bound is void; the JVP's envelope
  // (docs/bounds.md 17.2) judges those elements, so no record is left "uncertified" (issue 42).
  for (const auto& [key, verdict] : v) EXPECT_EQ(verdict, "pass") << key;
  EXPECT_EQ(j.at("rmsnorm_jvp").at("records").at(0).at("kernel"), "plugin:nc_v2_good");
  EXPECT_EQ(j.at("rmsnorm_jvp").at("records").at(0).at("op"), "rmsnorm_jvp");
  j = external_jvp_run("--kernel " + plugin_v2("jvp_no_dgamma"), "v2_no_dgamma", 1, "rmsnorm_jvp");
  std::string replay;
  v = jvp_verdicts(j, &replay, "rmsnorm_jvp");
  for (const char* key : {"f32 accuracy/normal", "f64 accuracy/normal"}) EXPECT_EQ(v[key], "fail") << key;
  ASSERT_NE(replay.find("--rms-jvp-record"), std::string::npos) << replay;
  const Outcome r = run_shell("cd / && " + std::string(NORMCHECK_BINARY) + replay.substr(9));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("plugin:nc_v2_jvp_no_dgamma"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay reproduces the recorded worst element"), std::string::npos) << r.out;
}

TEST(Serve, TheRmsNormJvpIsJudgedThroughServeModeAndAMissingTangentTermIsCaught) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const std::string server = kPython + " " + script("serve_numpy.py");
  nlohmann::json j = external_jvp_run("--serve '" + server + "' --exec-name numpy", "serve_good", 0, "rmsnorm_jvp");
  for (const auto& [key, verdict] : jvp_verdicts(j, nullptr, "rmsnorm_jvp")) EXPECT_EQ(verdict, "pass") << key;  // envelope-judged where void
  j = external_jvp_run("--serve '" + server + " --jvp-no-dgamma' --exec-name numpy", "serve_no_dgamma", 1, "rmsnorm_jvp");
  EXPECT_EQ(jvp_verdicts(j, nullptr, "rmsnorm_jvp")["f32 accuracy/normal"], "fail");
}

TEST(PluginAbiV2, AWrongGroupCountAndAWrongDeferredCorrectionAreCaught) {
  const fs::path out = scratch() / "v2_planted.json";
  Outcome o = run_cli("run --kernel " + plugin_v2("wrong_groups") + " --dtypes f32 --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  auto v = section_verdicts(out);
  EXPECT_EQ(v["grouped f32 group_norm y"], "fail");
  EXPECT_EQ(v["grouped f32 group_norm dx"], "fail");
  EXPECT_EQ(v["grouped f32 batch_norm y"], "pass");
  EXPECT_EQ(v["grouped f32 instance_norm dx"], "pass");
  EXPECT_EQ(v["block f32 accuracy/normal dx"], "pass");
  o = run_cli("run --kernel " + plugin_v2("bias_in_correction") + " --dtypes f32 --out " + out.string());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  v = section_verdicts(out);
  EXPECT_EQ(v["block f32 accuracy/normal dx"], "fail");
  EXPECT_EQ(v["block f32 accuracy/no_bias dx"], "pass");
  EXPECT_EQ(v["block f32 accuracy/normal dw"], "pass");
  EXPECT_EQ(v["grouped f32 group_norm y"], "pass");
}

namespace {

/// The report at `out` parses as JSON (nlohmann refuses invalid UTF-8) and completed.
void expect_valid_complete_report(const fs::path& out, const Outcome& o) {
  nlohmann::json j;
  ASSERT_NO_THROW(j = load_json(out)) << o.out << o.err;
  EXPECT_TRUE(j.at("run").at("complete").get<bool>());
  EXPECT_EQ(o.err.find("json.exception"), std::string::npos) << o.err;
}

}  // namespace

// Issue 48 H1: a kernel's failure message that is not valid UTF-8 (raw 0xff bytes, or a character cut
// in two by the message's length cap) is escaped, never a crash or a report that cannot be written,
// at one thread and at two.
TEST(Hostile, KernelMessagesThatAreNotUtf8KeepTheReportValid) {
  const fs::path out = scratch() / "hostile_utf8.json";
  const std::string exec = "printf \"\\377\\376 bad bytes \\303\" >&2; exit 3";
  for (const char* threads : {"1", "2"}) {
    const Outcome o = run_cli("run --exec '" + exec + "' --ops layernorm_forward --dtypes f32 --generators normal --cases 2 --threads " +
                              threads + " -q --out " + out.string());
    EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
    expect_valid_complete_report(out, o);
    const Failures f = failures(load_json(out));
    EXPECT_EQ(f.cases, 2);
    EXPECT_NE(f.first.find("\\xff\\xfe bad bytes \\xc3"), std::string::npos) << f.first;
  }
  if (!python_has("numpy")) return;
  // 'a' then 1,500 two-byte characters: the 2,000-byte cap of a serve message falls inside one
  const std::string cut = write_server(
      "utf8_cut", "print(json.dumps({'status': 'error', 'message': 'a' + '\\u00e9' * 1500, 'call': request['call']}), flush=True); continue");
  const Outcome o = run_cli(serve_run(cut, "--threads 2", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_NE(failures(load_json(out)).first.find("\\xc3"), std::string::npos);
}

// Issue 48 H2: a reply or a ready line nested 500,000 deep (under the 1 MiB line cap) fails the call
// with one reason; nothing recurses over it.
TEST(Hostile, DeeplyNestedServeLinesFailTheCallNotTheHarness) {
  const fs::path out = scratch() / "hostile_deep.json";
  const std::string deep_reply =
      write_server("deep_reply", "print('[' * 500000 + ']' * 500000, flush=True); continue");
  Outcome o = run_cli(serve_run(deep_reply, "", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_NE(failures(load_json(out)).first.find("nests deeper than 64 levels"), std::string::npos) << failures(load_json(out)).first;
  const fs::path p = scratch() / "deep_ready.py";
  std::ofstream(p) << "print('{\"a\":' * 400000 + '1' + '}' * 400000, flush=True)\nimport sys\nfor line in sys.stdin: pass\n";
  o = run_cli(serve_run(kPython + " " + p.string(), "", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_EQ(failures(load_json(out)).judged, 0);
}

// Issue 48 H3 and H4: an output that is a FIFO fails its call at once (it used to block the harness
// forever), and an output far larger than its shape allows (a 6 GB sparse y.npy) is refused from its
// size, before anything is read.
TEST(Hostile, OutputsThatAreFifosOrHugeFailTheirCallWithoutBeingRead) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "hostile_outputs.json";
  const std::string fifo = write_server(
      "fifo_output", "os.mkfifo(os.path.join(request['dir'], request['outputs']['y'])); "
                     "print(json.dumps({'status': 'ok', 'call': request['call']}), flush=True); continue");
  Outcome o = run_cli(serve_run(fifo, "--kernel-timeout 20", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_NE(failures(load_json(out)).first.find("is not a regular file"), std::string::npos) << failures(load_json(out)).first;
  const std::string huge = write_server(
      "huge_output", "exec_example.compute(request['dir'], request); "
                     "open(os.path.join(request['dir'], request['outputs']['y']), 'r+b').truncate(6 << 30); "
                     "print(json.dumps({'status': 'ok', 'call': request['call']}), flush=True); continue");
  o = run_cli(serve_run(huge, "", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_NE(failures(load_json(out)).first.find("6442450944 bytes; a .npy of shape"), std::string::npos) << failures(load_json(out)).first;
}

// Issue 48 M4: a serve command's stderr goes through a pipe into stderr.txt, which is emptied
// whenever it would pass 8 MiB (it grew by 3 MiB a call, 1.2 GB after four calls of a real flood,
// in /dev/shm); the last line is still the one the failure message quotes.
TEST(Hostile, AServeCommandsStderrFileIsCappedAndKeepsItsLastLine) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "hostile_stderr.json", sizes = scratch() / "stderr_sizes.txt";
  fs::remove(sizes);
  const std::string flood = write_server(
      "stderr_flood", "sys.stderr.write(('e' * 4095 + '\\n') * 768); sys.stderr.flush(); time.sleep(0.05); "
                      "open('" + sizes.string() + "', 'a').write(str(os.path.getsize(os.path.join(os.environ['NORMCHECK_SERVE_DIR'], 'stderr.txt'))) + '\\n'); "
                      "(sys.stderr.write('goodbye from the flood\\n'), sys.stderr.flush(), os._exit(3)) if request['call'] == 6 else None");
  const Outcome o = run_cli(serve_run(flood, "--threads 1", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  expect_valid_complete_report(out, o);
  EXPECT_NE(failures(load_json(out)).first.find("exited with status 3: goodbye from the flood"), std::string::npos)
      << failures(load_json(out)).first;
  std::ifstream f(sizes);
  int seen = 0;
  for (long long size; f >> size; ++seen) EXPECT_LE(size, (8ll << 20) + 4096) << "stderr.txt after call " << seen + 1;
  EXPECT_GE(seen, 6);  // 18 MiB written before the last call
}

// Issue 48 (low): a serve command that closes its stdout but does not exit is killed by normcheck
// after its grace period, and the failure says so (it used to read "crashed with signal 9").
TEST(Hostile, AServeCommandKilledByTheHarnessIsNotReportedAsACrash) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "hostile_lingering.json";
  // exec: /bin/sh would otherwise stay the parent and keep the pipe open
  const std::string linger = "exec " + write_server("linger", "(os.close(1), time.sleep(600)) if request['call'] == 2 else None");
  const Outcome o = run_cli(serve_run(linger, "--threads 1", out));
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  const std::string first = failures(load_json(out)).first;
  EXPECT_NE(first.find("did not exit and was killed by normcheck"), std::string::npos) << first;
  EXPECT_EQ(first.find("signal 9"), std::string::npos) << first;
}

// Issue 48 (low): a serve command that writes a second reply line to call 2 after a pause (read while
// call 3 waits) does not fail call 3: its reply follows and stands, and the process is replaced.
TEST(Hostile, ASecondReplyLineDoesNotFailTheNextInnocentCall) {
  if (!python_has("numpy")) GTEST_SKIP() << "python3-numpy absent";
  const fs::path out = scratch() / "hostile_second_line.json";
  const std::string twice = write_server(
      "second_line", "exec_example.compute(request['dir'], request); print(json.dumps({'status': 'ok', 'call': request['call']}), flush=True); "
                     "(time.sleep(0.3), print(json.dumps({'status': 'ok', 'call': 2}), flush=True)) if request['call'] == 2 else None; continue");
  const Outcome o = run_cli(serve_run(twice, "--threads 1", out));
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  const Failures f = failures(load_json(out));
  EXPECT_EQ(f.cases, 0) << f.first;
  EXPECT_NE(o.err.find("answered an earlier call again while call 3 waited"), std::string::npos) << o.err;
}
