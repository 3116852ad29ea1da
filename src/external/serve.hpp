#pragma once
/// Serve mode's worker processes (docs/plugins.md, "Serve mode"), for any op that travels as .npy
/// files: a call names its manifest fields, input tensors and expected outputs; a pool hands each
/// calling thread its own long-running process.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "external/exec.hpp"

namespace normcheck::external {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  const std::vector<double>* values;
};

/// One call as files: the request line is `manifest` plus "format", "dtype", "npy_dtype", "dir",
/// "call", "inputs" and "outputs" (file names).
struct FileCall {
  nlohmann::json manifest;
  DType dtype = DType::f32;
  std::vector<NamedTensor> inputs;
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
};

struct FileCallResult {
  std::string failure;  ///< the call failed (crash, hang, protocol, error reply, missing or malformed output)
  bool skipped = false;  ///< the command answered "unsupported"
  std::map<std::string, std::vector<double>> outputs;
};

class ServeWorker;

/// A serve command inside this process: answers a call as the command would (outputs, "unsupported"
/// as `skipped`, an error as `failure`). The Python module's callables (normcheck.check) are one.
using InProcessServer = std::function<FileCallResult(const FileCall&)>;

/// One long-running process per calling thread, replaced when it fails; or an in-process server.
class ServePool {
 public:
  explicit ServePool(ExecSpec spec);
  /// Calls go to `server` in the calling thread; its kernels are named "<kind>:<spec.name>".
  ServePool(ExecSpec spec, InProcessServer server, std::string kind);
  ~ServePool();
  FileCallResult call(const FileCall& c);
  const ExecSpec& spec() const { return spec_; }
  /// The name of the kernels it serves: "serve:<name>" (or "<kind>:<name>" in process).
  std::string kernel_name() const { return kind_ + ":" + spec_.name; }

 private:
  ExecSpec spec_;
  std::string kind_ = "serve";
  InProcessServer server_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One kernel entry per (op, dtype) served by the pool's processes: kernel "serve:<name>". A process
/// that crashes, hangs or breaks the protocol fails its call and is replaced. Every section of a run
/// shares one pool: one process per thread, whatever ops it serves.
std::vector<KernelEntry> serve_kernels(const std::shared_ptr<ServePool>& pool, const std::vector<Op>& ops,
                                       const std::vector<DType>& dtypes);

}  // namespace normcheck::external
