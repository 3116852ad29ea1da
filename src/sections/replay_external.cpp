#include "sections/replay_external.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/op_kernels.hpp"
#include "external/exec.hpp"
#include "external/exec_case.hpp"
#include "external/npy.hpp"
#include "external/plugin.hpp"
#include "external/plugin_v2.hpp"
#include "external/serve.hpp"
#include "external/serve_block.hpp"
#include "external/serve_contraction.hpp"
#include "external/serve_jvp.hpp"
#include "external/serve_grouped.hpp"
#include "io/case_json.hpp"
#include "report/report.hpp"

namespace normcheck::sections {
namespace {

const KernelEntry* find_in(const std::vector<KernelEntry>& kernels, const std::string& name, Op op, DType dt) {
  for (const KernelEntry& k : kernels)
    if (k.kernel == name && k.op == op && k.storage == dt) return &k;
  return nullptr;
}

KernelEntry external_kernel_of(const ExternalSpecs& spec, const std::string& name, Op op, DType dt);

/// The external kernel the record names, from the options or the report's config.external.
KernelEntry external_kernel(const nlohmann::json& report, const std::string& name, Op op, DType dt, const ReplayOptions& o) {
  ExternalSpecs spec = config_from_report(report).external;
  if (!o.plugin.empty() || !o.exec.empty() || !o.serve.empty()) {
    spec.plugins = o.plugin.empty() ? std::vector<std::string>{} : std::vector<std::string>{o.plugin};
    spec.exec = o.exec;
    spec.serve = o.serve;
  }
  if (o.kernel_timeout) spec.timeout_s = *o.kernel_timeout;
  KernelEntry k = external_kernel_of(spec, name, op, dt);
  if (!spec.contract.empty()) k.contract = spec.contract;  // the run's --contract, as it judged the record
  return k;
}

KernelEntry external_kernel_of(const ExternalSpecs& spec, const std::string& name, Op op, DType dt) {
  const std::string label = name.substr(name.find(':') + 1);
  if (name.rfind("plugin:", 0) == 0) {
    for (const std::string& path : spec.plugins) {
      const auto kernels = external::plugin_kernels(external::inspect_plugin(path, spec.timeout_s));
      if (const KernelEntry* k = find_in(kernels, name, op, dt)) return *k;
    }
    throw std::invalid_argument(fmt::format("record names {} but no plugin given (--kernel LIB) or recorded provides it for {} {}",
                                            name, op_name(op), dtype_info(dt).name));
  }
  const bool serve = name.rfind("serve:", 0) == 0;
  const std::string& command = serve ? spec.serve : spec.exec;
  if (command.empty())
    throw std::invalid_argument(fmt::format("record names {}: give the command with {} 'CMD'", name, serve ? "--serve" : "--exec"));
  const external::ExecSpec e{command, label, spec.timeout_s, spec.serve_startup_s};
  return (serve ? external::serve_kernels(std::make_shared<external::ServePool>(e), {op}, {dt}) : external::exec_kernels(e, {op}, {dt})).at(0);
}

nlohmann::json enclosure_json(const CertifiedValue& v) {
  return {{"hi", hexfloat(v.hi)}, {"lo", hexfloat(v.lo)}, {"rad", hexfloat(v.rad)}, {"scale", v.scale},
          {"rounded", hexfloat(v.rounded)}, {"rounding_decided", v.rounding_decided}};
}

}  // namespace

BlockKernelEntry replay_block_kernel(const nlohmann::json& report, const nlohmann::json& rec, DType dtype, const ReplayOptions& o) {
  const ExternalSpecs spec = config_from_report(report).external;
  const std::string name = rec.at("kernel").get<std::string>();
  const double timeout_s = o.kernel_timeout.value_or(spec.timeout_s);
  if (name.rfind("plugin:", 0) == 0) {  // an ABI v2 plugin: its own declared form
    const std::vector<std::string> paths = o.plugin.empty() ? spec.plugins : std::vector<std::string>{o.plugin};
    for (const std::string& path : paths)
      for (BlockKernelEntry& k : external::plugin_block_kernels(external::inspect_plugin(path, timeout_s, spec.serve_startup_s)))
        if (k.kernel == name && k.storage == dtype) return std::move(k);
    throw std::invalid_argument("block record names " + name + " but no plugin given (--kernel LIB) or recorded provides it");
  }
  const std::string command = o.serve.empty() ? spec.serve : o.serve;
  if (command.empty() || spec.block_form.empty())
    throw std::invalid_argument("block record names " + rec.at("kernel").get<std::string>() + ": give the command with --serve 'CMD'");
  const external::ExecSpec e{command, rec.at("variant").get<std::string>(), timeout_s, spec.serve_startup_s};
  return external::serve_block_kernels(std::make_shared<external::ServePool>(e), spec.block_form, {dtype}).at(0);
}

namespace {

/// Where an ABI v2 or serve record's kernel comes from: the plugin (given or recorded) that
/// `provides` the record's op, or a serve pool on the given or recorded command.
struct ExternalSource {
  std::optional<external::PluginInfo> plugin;
  std::shared_ptr<external::ServePool> serve;
};

ExternalSource external_source(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o, const char* what,
                               const std::function<bool(const external::PluginInfo&)>& provides) {
  const ExternalSpecs spec = config_from_report(report).external;
  const std::string name = rec.at("kernel").get<std::string>();
  const double timeout_s = o.kernel_timeout.value_or(spec.timeout_s);
  if (name.rfind("plugin:", 0) == 0) {
    const std::vector<std::string> paths = o.plugin.empty() ? spec.plugins : std::vector<std::string>{o.plugin};
    for (const std::string& path : paths) {
      external::PluginInfo info = external::inspect_plugin(path, timeout_s, spec.serve_startup_s);
      if ("plugin:" + info.name == name && provides(info)) return {std::move(info), nullptr};
    }
    throw std::invalid_argument(fmt::format("{} record names {} but no plugin given (--kernel LIB) or recorded provides it", what, name));
  }
  const std::string command = o.serve.empty() ? spec.serve : o.serve;
  if (name.rfind("serve:", 0) != 0 || command.empty())
    throw std::invalid_argument(fmt::format("{} record names {}: give the command with --serve 'CMD'", what, name));
  const external::ExecSpec e{command, name.substr(6), timeout_s, spec.serve_startup_s};
  return {std::nullopt, std::make_shared<external::ServePool>(e)};
}

}  // namespace

std::function<GroupedOutputs(const GroupedNormCase&)> replay_grouped_kernel(const nlohmann::json& report, const nlohmann::json& rec,
                                                                            const ReplayOptions& o) {
  const ExternalSource src =
      external_source(report, rec, o, "grouped", [](const external::PluginInfo& p) { return !p.grouped_dtypes.empty(); });
  return src.plugin ? external::plugin_grouped_kernel(*src.plugin) : external::serve_grouped_kernel(src.serve);
}

ContractedKernel replay_contraction_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o) {
  const ExternalSource src =
      external_source(report, rec, o, "contraction", [](const external::PluginInfo& p) { return !p.contraction_dtypes.empty(); });
  return src.plugin ? external::plugin_contraction_kernel(*src.plugin) : external::serve_contraction_kernel(src.serve);
}

JvpKernel replay_jvp_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o) {
  const std::string op = rec.at("op").get<std::string>();
  const ExternalSource src =
      external_source(report, rec, o, "JVP", [op](const external::PluginInfo& p) { return !external::plugin_jvp_dtypes(p, op).empty(); });
  return src.plugin ? external::plugin_jvp_kernel(*src.plugin, op) : external::serve_jvp_kernel(src.serve, op);
}

KernelEntry replay_kernel(const nlohmann::json& report, const nlohmann::json& rec, const ReplayOptions& o) {
  const auto op = parse_op(rec.at("op").get<std::string>());
  const auto storage = parse_dtype(rec.at("storage").get<std::string>());
  if (!op || !storage) throw std::invalid_argument("record names an unknown op or dtype");
  const std::string kernel = rec.at("kernel").get<std::string>();
  if (is_external_kernel_name(kernel)) return external_kernel(report, kernel, *op, *storage, o);
  const KernelEntry* k = find_kernel(*op, rec.at("variant").get<std::string>(), *storage);
  if (!k || dtype_info(k->accum).name != rec.at("accum").get<std::string>())
    throw std::invalid_argument("record names a kernel this build does not have");
  return *k;
}

void dump_case(const std::string& dir, Op op, const LayerNormCase& c, const oracle::CertifiedLayerNorm& ref,
               const nlohmann::json& rec, const std::string& replay_command) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw std::invalid_argument("cannot create the dump directory '" + dir + "'");
  external::CaseFiles files = external::write_case_files(dir, op, c, "normcheck-replay-v1");
  nlohmann::json exact = nlohmann::json::object();
  const std::pair<const char*, const std::vector<CertifiedValue>*> outputs[] = {
      {"y", &ref.y}, {"dx", &ref.dx}, {"dgamma", &ref.dgamma}, {"dbeta", &ref.dbeta}};
  for (const auto& [name, shape] : files.outputs) {
    const std::vector<CertifiedValue>* values = nullptr;
    for (const auto& [n, v] : outputs)
      if (name == n) values = v;
    if (!values) continue;
    std::vector<double> rounded;
    nlohmann::json enclosures = nlohmann::json::array();
    for (const CertifiedValue& v : *values) {
      rounded.push_back(v.rounded);
      enclosures.push_back(enclosure_json(v));
    }
    external::write_npy((fs::path(dir) / ("expected_" + name + ".npy")).string(), c.dtype, shape, rounded);
    exact[name] = enclosures;
  }
  files.manifest["record"] = {{"op", rec.at("op")}, {"kernel", rec.at("kernel")}, {"storage", rec.at("storage")},
                              {"output", rec.at("output")}, {"property", rec.at("property")}};
  files.manifest["worst_element"] = rec.at("worst_case").at("element");
  files.manifest["expected"] = "expected_<output>.npy: the exact outputs correctly rounded to the dtype; exact.json: "
                               "each output element's certified enclosure (value = (hi + lo) * 2^scale, |error| <= rad * 2^scale)";
  files.manifest["replay"] = replay_command;
  std::ofstream(fs::path(dir) / "manifest.json") << files.manifest.dump(1) << '\n';
  std::ofstream f(fs::path(dir) / "exact.json");
  f << nlohmann::json{{"precision_bits", ref.precision_bits}, {"certified_max_err_ulps", ref.max_err_ulps}, {"outputs", exact}}.dump(1)
    << '\n';
  if (!f) throw std::invalid_argument("cannot write exact.json in '" + dir + "'");
}

}  // namespace normcheck::sections
