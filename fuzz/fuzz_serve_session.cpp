// libFuzzer target: a whole serve session (docs/plugins.md, "Serve mode") against a hostile serve
// command. The input is the script of fuzz_serve_peer (beside this binary), which the pool starts
// through /bin/sh as a user's command: ready line, output files and reply lines as the bytes say
// (each replacement process plays the next "NEXT"-separated part).
// Three calls per input (the second with two outputs). Beyond "no crash, no hang, no leak": every
// failure is one printable line (no control byte, well-formed UTF-8, bounded), a call that succeeds
// returns every output at its shape, a failed or skipped call returns none, and the requests the
// harness sends are well-formed (the peer exits with status 4 otherwise).
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/shell_quote.hpp"
#include "external/serve.hpp"

namespace {

namespace ext = normcheck::external;

const std::string& peer_command() {
  static const std::string command = [] {
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
    return "exec " + normcheck::shell_quote((self.parent_path() / "fuzz_serve_peer").string()) + " ";
  }();
  return command;
}

/// The script file the peer plays and the file it counts its processes in (removed at exit).
struct SessionFiles {
  std::string script, counter;
  SessionFiles() {
    script = (std::filesystem::temp_directory_path() / "fuzz_serve_script_XXXXXX").string();
    const int fd = mkstemp(script.data());
    if (fd < 0) std::abort();
    close(fd);
    counter = script + ".processes";
  }
  ~SessionFiles() {
    std::error_code ec;
    std::filesystem::remove(script, ec);
    std::filesystem::remove(counter, ec);
  }
};

const SessionFiles& session_files() {
  static const SessionFiles files;
  return files;
}

/// A well-formed UTF-8 line with no control byte: what `printable` promises for a failure.
bool is_one_printable_line(const std::string& s) {
  if (s.size() > (size_t{1} << 16)) return false;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += len;
  }
  return true;
}

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

void check(const ext::FileCall& c, const ext::FileCallResult& r) {
  if (!is_one_printable_line(r.failure)) __builtin_trap();
  // a malformed request (the peer exits with status 4 only then; a quoted raw line may say anything)
  if (r.failure.rfind("serve command exited with status 4", 0) == 0) __builtin_trap();
  if (!r.failure.empty() || r.skipped) {
    if (!r.outputs.empty()) __builtin_trap();
    return;
  }
  if (r.outputs.size() != c.outputs.size()) __builtin_trap();
  for (const auto& [name, shape] : c.outputs) {
    const auto it = r.outputs.find(name);
    if (it == r.outputs.end() || static_cast<int64_t>(it->second.size()) != elements(shape)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::ofstream(session_files().script, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                           static_cast<std::streamsize>(size));
  std::ofstream(session_files().counter, std::ios::trunc) << 0;  // the session's first process plays the script's first part
  ext::ExecSpec spec;
  spec.command = peer_command() + normcheck::shell_quote(session_files().script) + " " + normcheck::shell_quote(session_files().counter);
  spec.name = "fuzz";
  spec.timeout_s = 5;
  spec.startup_timeout_s = 5;
  ext::ServePool pool(spec);
  const std::vector<double> x(6, 0.5), g(3, 1.0);
  for (int call = 0; call < 3; ++call) {
    ext::FileCall c;
    c.dtype = normcheck::DType::f32;
    c.inputs = {{"x", {2, 3}, &x}, {"gamma", {3}, &g}};
    c.outputs = {{"y", {2, 3}}};
    if (call == 1) c.outputs.push_back({"gamma", {3}});  // an output named like an input: gamma_out.npy
    nlohmann::json shapes = nlohmann::json::object();
    for (const auto& [name, shape] : c.outputs) shapes[name] = shape;
    c.manifest = {{"op", "fuzz"}, {"shapes", shapes}};
    const ext::FileCallResult r = pool.call(c);
    if (std::getenv("FUZZ_SERVE_VERBOSE"))  // what each call came to, for reading a finding or a seed
      std::fprintf(stderr, "call %d: %s\n", call, r.skipped ? "skipped" : r.failure.empty() ? "ok" : r.failure.c_str());
    check(c, r);
  }
  return 0;
}
