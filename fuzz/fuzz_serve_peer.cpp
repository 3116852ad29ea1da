// The serve command fuzz_serve_session drives: `fuzz_serve_peer SCRIPT COUNTER` speaks the serve protocol
// (docs/plugins.md, "Serve mode") as the bytes of SCRIPT (the fuzz input) tell it to, well or
// badly: its ready line, each output file (a .npy, raw bytes, a FIFO, a link to /dev/zero, a
// folder, a huge sparse file, a truncated .npy, nothing) and each reply (ok, unsupported, an error
// with raw bytes, a raw line, two lines, a stale line first, a stderr flood, an exit or a crash).
// Built plain (no sanitizers, no libFuzzer): it is the hostile kernel, not the code under test.
// When the script runs out it serves correctly, so the fuzzer also reaches well-formed sessions.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr const char* kSeparator = "NEXT";

/// The script of this process: the pool replaces a process that failed, and the k-th process it
/// starts in a session (counted in COUNTER) plays the k-th part of SCRIPT (parts are separated by
/// "NEXT"; a missing part is an empty script: a well-behaved server).
class Script {
 public:
  Script(const char* path, const char* counter) {
    std::ifstream in(path, std::ios::binary);
    const std::string all(std::istreambuf_iterator<char>(in), {});
    int k = 0;
    std::ifstream(counter) >> k;
    std::ofstream(counter, std::ios::trunc) << k + 1;
    size_t from = 0;
    for (int i = 0; i < k && from != std::string::npos; ++i) {
      from = all.find(kSeparator, from);
      if (from != std::string::npos) from += std::strlen(kSeparator);
    }
    if (from == std::string::npos) return;
    bytes_ = all.substr(from, all.find(kSeparator, from) - from);
  }
  /// The next byte; 0xff (the well-behaved choice) once the script has run out.
  unsigned next() { return at_ < bytes_.size() ? static_cast<unsigned char>(bytes_[at_++]) : 0xffu; }
  /// Up to `n` raw bytes.
  std::string take(size_t n) {
    const size_t k = std::min(n, bytes_.size() - at_);
    std::string out = bytes_.substr(at_, k);
    at_ += k;
    return out;
  }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

void say(const std::string& line) {
  const std::string text = line + "\n";
  if (write(1, text.data(), text.size()) < 0) _exit(0);
}

/// A little-endian float32 .npy of `shape`, every value `fill`.
std::string npy_f32(const std::vector<int64_t>& shape, float fill, bool truncated) {
  std::string dims;
  int64_t count = 1;
  for (int64_t s : shape) {
    dims += std::to_string(s) + ", ";
    count *= s;
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  for (int64_t i = 0; i < count; ++i) out.append(reinterpret_cast<const char*>(&fill), sizeof fill);
  if (truncated) out.resize(out.size() - 3);
  return out;
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_output(Script& s, const std::string& path, const std::vector<int64_t>& shape) {
  switch (s.next()) {
    case 0: write_file(path, s.take(s.next() * 4)); break;                 // raw bytes
    case 1: mkfifo(path.c_str(), 0600); break;                             // a FIFO (would block a plain open)
    case 2: symlink("/dev/zero", path.c_str()); break;                     // an endless device
    case 3: mkdir(path.c_str(), 0700); break;                              // a folder
    case 4: {                                                              // 64 GiB of holes
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0 && ftruncate(fd, int64_t{1} << 36) == 0) close(fd);
      break;
    }
    case 5: write_file(path, npy_f32(shape, 1.5f, true)); break;           // cut short
    case 6: break;                                                         // no output at all
    case 7: write_file(path, npy_f32({shape.empty() ? 1 : shape[0] + 1}, 2.0f, false)); break;  // another shape
    default: write_file(path, npy_f32(shape, 0.25f, false)); break;        // correct
  }
}

void reply(Script& s, int64_t call) {
  const std::string ok = nlohmann::json{{"status", "ok"}, {"call", call}}.dump();
  switch (s.next()) {
    case 0: say(nlohmann::json{{"status", "unsupported"}, {"call", call}}.dump()); break;
    case 1: {  // an error reply whose message is raw bytes (as a JSON string: invalid UTF-8 is replaced)
      const std::string raw = s.take(s.next());
      say(nlohmann::json{{"status", "error"}, {"message", raw}, {"call", call}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      break;
    }
    case 2: say(s.take(s.next())); break;   // a raw line (may hold newlines, control bytes, anything)
    case 3: say(ok); say(ok); break;        // two lines for one call
    case 4:                                 // a line naming the previous call first
      say(nlohmann::json{{"status", "ok"}, {"call", call - 1}}.dump());
      say(ok);
      break;
    case 5: {  // floods stderr (raw bytes, repeated), then answers
      const std::string chunk = s.take(s.next()) + "\n";
      for (int i = 0; i < 4096; ++i)
        if (write(2, chunk.data(), chunk.size()) < 0) break;
      say(ok);
      break;
    }
    case 6: _exit(static_cast<int>(s.next() % 4));  // exits (status 4 is kept for a malformed request)
    case 7: raise(SIGSEGV); _exit(1);
    case 8: {  // half a line, then gone
      const std::string half = ok.substr(0, ok.size() / 2);
      if (write(1, half.data(), half.size()) < 0) _exit(0);
      _exit(0);
    }
    default: say(ok); break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  Script s(argv[1], argv[2]);
  switch (s.next()) {
    case 0: say(s.take(s.next())); break;        // a raw first line
    case 1: return 3;                            // gone before its ready line
    case 2: say(R"({"ready": false})"); break;
    case 3: say("[1, 2]"); break;
    default: say(R"({"ready": true})"); break;
  }
  std::string line;
  try {
    while (std::getline(std::cin, line)) {
      const nlohmann::json request = nlohmann::json::parse(line);
      const std::string dir = request.at("dir").get<std::string>();
      for (const auto& [name, file] : request.at("outputs").items())
        write_output(s, dir + "/" + file.get<std::string>(), request.at("shapes").at(name).get<std::vector<int64_t>>());
      reply(s, request.at("call").get<int64_t>());
    }
  } catch (const std::exception&) {
    return 4;  // the harness sent a malformed request: the target traps on "exited with status 4"
  }
  return 0;
}
