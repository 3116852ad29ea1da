#include "external/exec_case.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "external/npy.hpp"
#include "external/stderr_sink.hpp"
#include "io/json_input.hpp"

namespace normcheck::external {

CaseFiles write_case_files(const std::filesystem::path& dir, Op op, const LayerNormCase& c, const std::string& format) {
  const std::vector<int64_t> mat{c.rows, c.n}, vec{c.n};
  CaseFiles files;
  nlohmann::json inputs = nlohmann::json::object();
  for (const OpSlot& in : op_spec(op).inputs) {
    write_npy(dir / (in.name + ".npy"), c.dtype, in.per_row() ? mat : vec, case_input(c, in.name));
    inputs[in.name] = in.name + ".npy";
  }
  for (const OpSlot& o : op_spec(op).outputs) files.outputs.push_back({o.name, o.per_row() ? mat : vec});
  nlohmann::json out_names = nlohmann::json::object();
  std::error_code ec;
  for (const auto& [name, shape] : files.outputs) {
    out_names[name] = name + ".npy";
    std::filesystem::remove(dir / (name + ".npy"), ec);  // never read a previous call's output
  }
  files.manifest = {
      {"format", format},
      {"op", std::string(op_name(op))},
      {"dtype", std::string(dtype_info(c.dtype).name)},
      {"npy_dtype", npy_dtype_label(c.dtype)},
      {"rows", c.rows},
      {"n", c.n},
      {"eps", c.eps},
      {"eps_hex", fmt::format("{:a}", c.eps)},
      {"inputs", inputs},
      {"outputs", out_names},
      {"unsupported_exit_status", kUnsupportedExit}};
  std::ofstream f(dir / "manifest.json");
  f << files.manifest.dump(1) << '\n';
  f.close();
  if (!f) throw NpyError("cannot write manifest.json");
  return files;
}

KernelOutputs read_case_outputs(const std::filesystem::path& dir, const CaseFiles& files, DType dtype,
                                const std::string& who) {
  KernelOutputs out;
  try {
    for (const auto& [name, shape] : files.outputs) {
      output_of(out, name) = read_npy(dir / (name + ".npy"), dtype, shape);
    }
  } catch (const std::exception& e) {
    out = KernelOutputs{};
    out.failure = who + " output: " + e.what();
  }
  return out;
}

std::string npy_dtype_label(DType d) {
  return d == DType::bf16 ? "<u2 (bfloat16 bit patterns)" : d == DType::f16 ? "<f2" : d == DType::f32 ? "<f4" : "<f8";
}

std::string last_line(const std::filesystem::path& p) {
  // only the file's tail: a command that printed a gigabyte of stderr is not read into memory
  constexpr std::streamoff kTail = 4096;
  std::ifstream f(p, std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f ? static_cast<std::streamoff>(f.tellg()) : 0;
  f.seekg(std::max<std::streamoff>(0, size - kTail));
  const std::string tail(std::istreambuf_iterator<char>(f), {});
  return last_line_of(tail);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

std::string make_private_dir(const char* what) {
  // tmpfs when there is one: creating and opening the call's small files there costs a quarter of
  // what it costs on a disk-backed /tmp (measured: 0.64 against 2.6 ms per NumPy call)
  const bool shm = access("/dev/shm", W_OK | X_OK) == 0;
  std::string tmpl = fmt::format("{}/normcheck_{}_XXXXXX", shm ? "/dev/shm" : "/tmp", what);
  if (!mkdtemp(tmpl.data())) return "";
  return tmpl;  // mkdtemp makes it 0700
}

}  // namespace normcheck::external
