// Serve mode of the exec protocol: one long-running command per worker thread, a JSON request line
// per call on its stdin, a JSON reply line on its stdout; the tensors as .npy files in the worker's
// private (0700) directory. docs/plugins.md, "Serve mode".
#include "external/serve.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "external/child_process.hpp"
#include "external/exec_case.hpp"
#include "external/npy.hpp"
#include "external/serve_reply.hpp"
#include "external/stderr_sink.hpp"
#include "io/json_input.hpp"
#include "external/worker_pool.hpp"

namespace normcheck::external {
namespace {

constexpr size_t kMaxLine = 1 << 20;
/// A serve command's stderr.txt is emptied (with a note) whenever it would pass this: a server that
/// logs for hours keeps at most this much of it in RAM (/dev/shm).
constexpr std::uintmax_t kMaxStderrFileBytes = std::uintmax_t{8} << 20;
constexpr const char* kFormat = "normcheck-serve-v1";

/// "<name>.npy", or "<name>_out.npy" when an input has the name (batch norm's running statistics).
std::string output_file(const FileCall& c, const std::string& name) {
  for (const NamedTensor& t : c.inputs)
    if (t.name == name) return name + "_out.npy";
  return name + ".npy";
}

}  // namespace

class ServeWorker {
 public:
  explicit ServeWorker(ExecSpec spec) : spec_(std::move(spec)) {}
  ~ServeWorker() {
    close_fds();
    child_.kill_group();
  }
  ServeWorker(const ServeWorker&) = delete;
  ServeWorker& operator=(const ServeWorker&) = delete;
  bool healthy() const { return healthy_; }
  bool start_failed() const { return start_failed_; }

  /// One call; never throws (a malformed reply is a failure of the call, and the process goes).
  FileCallResult call(const FileCall& c) {
    FileCallResult out;
    try {
      return call_unguarded(c);
    } catch (const std::exception& e) {
      return failed(out, std::string("serve: ") + e.what());
    }
  }

 private:
  FileCallResult call_unguarded(const FileCall& c) {
    FileCallResult out;
    if (!started_)
      if (std::string e = start(); !e.empty()) {
        start_failed_ = true;
        return failed(out, e);
      }
    nlohmann::json request = c.manifest;
    try {
      request["inputs"] = write_inputs(c);
    } catch (const std::exception& e) {
      return failed(out, std::string("serve: cannot write the case: ") + e.what());
    }
    nlohmann::json names = nlohmann::json::object();
    std::error_code ec;
    for (const auto& [name, shape] : c.outputs) {
      names[name] = output_file(c, name);
      std::filesystem::remove(dir_.path / output_file(c, name), ec);  // never read a previous call's output
    }
    request["format"] = kFormat;
    request["dtype"] = std::string(dtype_info(c.dtype).name);
    request["npy_dtype"] = npy_dtype_label(c.dtype);
    request["outputs"] = names;
    request["dir"] = dir_.path.string();
    request["call"] = ++calls_;
    std::string line;
    if (std::string e = exchange(request.dump() + "\n", line, spec_.timeout_s); !e.empty()) return failed(out, e);
    // A reply must answer this call, alone: an extra line or another call's number would credit one
    // call's outputs to another, so the process is replaced.
    ReplyVerdict reply = classify_reply(line, calls_);
    if (reply.kind == ReplyVerdict::stale) {
      // A line naming an earlier call: an extra reply line of that call arriving late, or a wrong
      // answer to this one. The reply to this call may still follow: it decides, and a process that
      // wrote the extra line is replaced after this call, which is not charged for it (issue 48).
      if (std::string e = exchange("", line, spec_.timeout_s); !e.empty()) return failed(out, reply.message + "; then " + e);
      reply = classify_reply(line, calls_);
      if (reply.kind == ReplyVerdict::stale || reply.kind == ReplyVerdict::broken) return failed(out, reply.message);
      healthy_ = false;  // the pool replaces it once this call is done
      std::fprintf(stderr, "normcheck: serve command answered an earlier call again while call %lld waited (an extra reply line): its process is replaced\n",
                   static_cast<long long>(calls_));
    }
    if (reply.kind == ReplyVerdict::broken) return failed(out, reply.message);
    if (!pending_.empty())
      return failed(out, "serve command broke the protocol: more than one line answered call " + std::to_string(calls_));
    if (reply.kind == ReplyVerdict::unsupported) {
      out.skipped = true;
      return out;
    }
    if (reply.kind == ReplyVerdict::error) {  // the process answered: it stays
      out.failure = "serve command: " + reply.message;
      return out;
    }
    try {
      for (const auto& [name, shape] : c.outputs) out.outputs[name] = read_npy(dir_.path / output_file(c, name), c.dtype, shape);
    } catch (const std::exception& e) {
      out.outputs.clear();
      out.failure = std::string("serve output: ") + e.what();
    }
    return out;
  }

  nlohmann::json write_inputs(const FileCall& c) {
    nlohmann::json names = nlohmann::json::object();
    for (const NamedTensor& t : c.inputs) {
      write_npy(dir_.path / (t.name + ".npy"), c.dtype, t.shape, *t.values);
      names[t.name] = t.name + ".npy";
    }
    return names;
  }

  std::string start() {
    started_ = true;
    dir_.path = make_private_dir("serve");
    if (dir_.path.empty()) return "serve: cannot create the worker's private directory";
    StderrSinkOptions log;  // drained by a thread into a capped file: a chatty server cannot fill /dev/shm
    log.file = (dir_.path / "stderr.txt").string();
    log.file_cap = kMaxStderrFileBytes;
    if (std::string e = stderr_.open(log); !e.empty()) return "serve: " + e;
    const auto [in_read, in_write] = cloexec_pipe();
    const auto [out_read, out_write] = cloexec_pipe();
    if (in_read < 0 || out_read < 0) return "serve: cannot create pipes";
    SpawnSpec s;
    s.argv = {"/bin/sh", "-c", spec_.command};
    s.fds = {{in_read, 0}, {out_write, 1}, {stderr_.child_end(), 2}};
    s.env = {{"NORMCHECK_SERVE_DIR", dir_.path.string()}};
    const std::string e = child_.spawn(s);
    close(in_read);
    close(out_write);
    stderr_.close_child_end();
    to_child_ = in_write;
    from_child_ = out_read;
    if (!e.empty()) return "serve: " + e;
    std::string line;
    if (std::string r = exchange("", line, spec_.startup_timeout_s); !r.empty()) return r + " (before its ready line)";
    const nlohmann::json ready = parse_untrusted_json(line);
    if (ready.is_discarded() || !ready.is_object()) {
      child_.kill_group();
      return "serve command wrote a line that is not a JSON object on stdout (print diagnostics to stderr): " + printable(line.substr(0, 120));
    }
    if (!ready.contains("ready") || ready.at("ready") != true)
      return "serve command's first line is not {\"ready\": true}: " + printable(dump_untrusted(ready).substr(0, 200));
    return "";
  }

  /// Sends `line` (if any) and reads one reply line into `text`: "" or the failure (the process is then gone).
  std::string exchange(const std::string& line, std::string& text, double timeout_s) {
    const double deadline = monotonic_s() + timeout_s;
    std::string e = line.empty() ? "" : write_all(to_child_, line.data(), line.size(), deadline);
    if (e.empty()) e = read_line(from_child_, text, pending_, deadline, kMaxLine);
    if (e == "timeout") {
      child_.kill_group();
      return fmt::format("serve command timed out after {} s (killed)", timeout_s);
    }
    if (!e.empty()) {
      child_.wait_until(monotonic_s() + 2);
      child_.kill_group();
      const std::string how = e == "eof" ? child_.ended_how() : e;
      return "serve command " + how + stderr_.last_line();
    }
    return "";
  }

  FileCallResult& failed(FileCallResult& out, std::string why) {
    healthy_ = false;
    close_fds();
    child_.kill_group();
    out = FileCallResult{};
    out.failure = std::move(why);
    return out;
  }

  void close_fds() {
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    to_child_ = from_child_ = -1;
  }

  ExecSpec spec_;
  ChildProcess child_;
  StderrSink stderr_;
  ScratchDir dir_;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;
  int64_t calls_ = 0;
  bool started_ = false, healthy_ = true, start_failed_ = false;
};

struct ServePool::Impl {
  explicit Impl(ExecSpec spec) : pool([spec] { return std::make_unique<ServeWorker>(spec); }) {}
  WorkerPool<ServeWorker> pool;
  StartFailures start_failures;
};

ServePool::ServePool(ExecSpec spec) : spec_(spec), impl_(std::make_unique<Impl>(std::move(spec))) {}
ServePool::ServePool(ExecSpec spec, InProcessServer server, std::string kind)
    : spec_(std::move(spec)), kind_(std::move(kind)), server_(std::move(server)) {}
ServePool::~ServePool() = default;

FileCallResult ServePool::call(const FileCall& c) {
  if (server_) return server_(c);
  FileCallResult r;
  if (std::string broken = impl_->start_failures.given_up(); !broken.empty()) {
    r.failure = broken;
    return r;
  }
  std::unique_ptr<ServeWorker> w = impl_->pool.acquire();
  r = w->call(c);
  impl_->start_failures.note(w->start_failed(), r.failure);
  impl_->pool.release(std::move(w));
  return r;
}

namespace {

/// A LayerNorm/RMSNorm case as a file call (the exec manifest's fields).
FileCall layernorm_call(Op op, const LayerNormCase& c) {
  const std::vector<int64_t> mat{c.rows, c.n}, vec{c.n};
  FileCall call;
  call.dtype = c.dtype;
  call.manifest = {{"op", std::string(op_name(op))}, {"rows", c.rows}, {"n", c.n}, {"eps", c.eps},
                   {"eps_hex", fmt::format("{:a}", c.eps)}, {"unsupported_exit_status", kUnsupportedExit}};
  for (const OpSlot& in : op_spec(op).inputs) call.inputs.push_back({in.name, in.per_row() ? mat : vec, &case_input(c, in.name)});
  for (const OpSlot& o : op_spec(op).outputs) call.outputs.push_back({o.name, o.per_row() ? mat : vec});
  return call;
}

KernelOutputs kernel_outputs(FileCallResult r) {
  KernelOutputs out;
  out.failure = std::move(r.failure);
  out.skipped = r.skipped;
  for (auto& [name, v] : r.outputs) output_of(out, name) = std::move(v);
  return out;
}

}  // namespace

std::function<std::vector<double>(const std::vector<double>&)> serve_normalize(
    const ExecSpec& spec, const std::vector<int64_t>& shape, const std::string& layout, const std::vector<std::string>& axes,
    const std::string& declared_kind, DType dtype) {
  auto pool = std::make_shared<ServePool>(spec);
  FileCall base;
  base.dtype = dtype;
  base.manifest = {{"op", "normalize"}, {"layout", layout}, {"shape", shape}, {"axes", axes}, {"declared_kind", declared_kind}};
  base.outputs = {{"y", shape}};
  return [pool, base, shape](const std::vector<double>& x) {
    FileCall call = base;
    call.inputs = {{"x", shape, &x}};
    FileCallResult r = pool->call(call);
    if (r.skipped) throw std::runtime_error("serve command says the normalize op is unsupported");
    if (!r.failure.empty()) throw std::runtime_error(r.failure);
    return r.outputs.at("y");
  };
}

std::vector<KernelEntry> serve_kernels(const std::shared_ptr<ServePool>& pool, const std::vector<Op>& ops,
                                       const std::vector<DType>& dtypes) {
  const ExecSpec& spec = pool->spec();
  std::vector<KernelEntry> out;
  for (Op op : ops)
    for (DType dt : dtypes)
      out.push_back({pool->kernel_name(), spec.name, op, dt, dtype_info(dt).default_accum, false,
                     [pool, op](const LayerNormCase& c) { return kernel_outputs(pool->call(layernorm_call(op, c))); }});
  return out;
}

}  // namespace normcheck::external
