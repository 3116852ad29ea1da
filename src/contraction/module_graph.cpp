#include "contraction/module_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_input.hpp"

namespace normcheck {
namespace {

constexpr const char* kFormat = "normcheck-modules-v1";
constexpr const char* kModelInput = "input";
/// More trailing dimensions than any tensor a framework builds (PyTorch and NumPy allow 64).
constexpr int64_t kMaxNormalizedDims = 64;

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::invalid_argument(fmt::format("module list '{}': {}", printable(origin), printable(what)));
}

std::string string_member(const nlohmann::json& j, const char* key, const std::string& origin, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
    fail(origin, fmt::format("{} needs a non-empty string \"{}\"", where, key));
  return j[key].get<std::string>();
}

GraphModule parse_module(const nlohmann::json& m, size_t index, const std::string& previous, const std::set<std::string>& known,
                         const std::string& origin) {
  const std::string where = fmt::format("modules[{}]", index);
  if (!m.is_object()) fail(origin, where + " is not an object");
  GraphModule g;
  g.name = string_member(m, "name", origin, where);
  g.op = string_member(m, "op", origin, where);
  if (g.name == kModelInput) fail(origin, where + ": the name \"input\" is reserved for the model's input");
  if (known.count(g.name)) fail(origin, fmt::format("module '{}' is listed twice", g.name));
  if (m.contains("inputs")) {
    if (!m["inputs"].is_array() || m["inputs"].empty()) fail(origin, where + ": \"inputs\" must be a non-empty array of names");
    for (const auto& in : m["inputs"]) {
      if (!in.is_string()) fail(origin, where + ": \"inputs\" must hold module names");
      const std::string name = in.get<std::string>();
      if (name != kModelInput && !known.count(name))
        fail(origin, fmt::format("module '{}' reads '{}', which is not an earlier module (list modules in execution order)", g.name, name));
      g.inputs.push_back(name);
    }
  } else {
    g.inputs = {previous.empty() ? kModelInput : previous};
  }
  if (m.contains("eps")) {
    if (!m["eps"].is_number() || !(m["eps"].get<double>() > 0) || !std::isfinite(m["eps"].get<double>()))
      fail(origin, fmt::format("module '{}': \"eps\" must be a finite number > 0", g.name));
    g.eps = m["eps"].get<double>();
  }
  if (m.contains("normalized_dims")) {
    if (!json_integer_in(m["normalized_dims"], 1, kMaxNormalizedDims))  // never narrowed: 4294967297 is not 1
      fail(origin, fmt::format("module '{}': \"normalized_dims\" must be an integer from 1 to {}", g.name, kMaxNormalizedDims));
    g.normalized_dims = m["normalized_dims"].get<int>();
  }
  if (m.contains("hooks")) {
    if (!m["hooks"].is_boolean()) fail(origin, fmt::format("module '{}': \"hooks\" must be true or false", g.name));
    g.hooks = m["hooks"].get<bool>();
  }
  return g;
}

const GraphModule* module_named(const ModuleGraph& g, const std::string& name) {
  for (const GraphModule& m : g.modules)
    if (m.name == name) return &m;
  return nullptr;
}

/// Modules reading `name`'s output, and whether it is a model output.
std::vector<const GraphModule*> readers_of(const ModuleGraph& g, const std::string& name) {
  std::vector<const GraphModule*> out;
  for (const GraphModule& m : g.modules)
    if (std::find(m.inputs.begin(), m.inputs.end(), name) != m.inputs.end()) out.push_back(&m);
  return out;
}

bool is_output(const ModuleGraph& g, const std::string& name) {
  return std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end();
}

std::string describe(const GraphModule& m) { return fmt::format("'{}' ({})", m.name, m.op); }

void refuse_hooks(const GraphModule& m) {
  if (m.hooks)
    throw std::invalid_argument(fmt::format("module {} has hooks or an overridden forward: the contraction cannot see what they do", describe(m)));
}

/// The LayerNorm the chain is built around.
const GraphModule& pick_norm(const ModuleGraph& g, const std::string& norm) {
  if (!norm.empty()) {
    const GraphModule* m = module_named(g, norm);
    if (!m) throw std::invalid_argument(fmt::format("--norm '{}' is not a module of the module list", printable(norm)));
    if (m->op != "LayerNorm") throw std::invalid_argument(fmt::format("--norm names {}, not a LayerNorm", describe(*m)));
    return *m;
  }
  std::vector<const GraphModule*> norms;
  for (const GraphModule& m : g.modules)
    if (m.op == "LayerNorm") norms.push_back(&m);
  if (norms.empty()) throw std::invalid_argument("the module list has no LayerNorm: nothing to contract");
  if (norms.size() > 1)
    throw std::invalid_argument(fmt::format("the module list has {} LayerNorms ({}, ...): name one with --norm", norms.size(), norms[0]->name));
  return *norms[0];
}

}  // namespace

ModuleGraph parse_module_list(const std::string& text, const std::string& origin) {
  if (json_nesting_depth(text) > kMaxJsonDepth) fail(origin, "nested too deeply");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::invalid_argument(describe_input_error(origin, e));
  }
  if (!j.is_object()) fail(origin, "not a JSON object");
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kFormat) fail(origin, fmt::format("\"format\" must be \"{}\"", kFormat));
  if (!j.contains("modules") || !j["modules"].is_array() || j["modules"].empty()) fail(origin, "\"modules\" must be a non-empty array");
  ModuleGraph g;
  std::set<std::string> known;
  for (size_t i = 0; i < j["modules"].size(); ++i) {
    g.modules.push_back(parse_module(j["modules"][i], i, g.modules.empty() ? "" : g.modules.back().name, known, origin));
    known.insert(g.modules.back().name);
  }
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array() || j["outputs"].empty()) fail(origin, "\"outputs\" must be a non-empty array of module names");
    for (const auto& o : j["outputs"]) {
      if (!o.is_string() || !known.count(o.get<std::string>())) fail(origin, "\"outputs\" names a module that is not listed");
      g.outputs.push_back(o.get<std::string>());
    }
  } else {
    g.outputs = {g.modules.back().name};
  }
  return g;
}

ModuleGraph read_module_list(const std::string& path) {
  const nlohmann::json j = read_json_file(path);  // one line naming the file when unreadable or not JSON
  return parse_module_list(j.dump(), path);
}

GraphChain find_contractible_chain(const ModuleGraph& g, const std::string& norm, const std::string& producer,
                                   const std::vector<std::string>& consumers) {
  const GraphModule& ln = pick_norm(g, norm);
  refuse_hooks(ln);
  if (ln.normalized_dims != 1)
    throw std::invalid_argument(fmt::format("LayerNorm '{}' normalizes over {} axes: only one-dimensional LayerNorm contracts", ln.name, ln.normalized_dims));
  if (ln.inputs.size() != 1 || ln.inputs[0] == kModelInput)
    throw std::invalid_argument(fmt::format("LayerNorm '{}' does not read exactly one Linear's output", ln.name));
  const GraphModule& source = *module_named(g, ln.inputs[0]);
  if (source.op != "Linear") {
    const GraphModule* linear = &source;  // the nearest Linear upstream along single inputs, to name it
    while (linear && linear->op != "Linear")
      linear = linear->inputs.size() == 1 && linear->inputs[0] != kModelInput ? module_named(g, linear->inputs[0]) : nullptr;
    throw std::invalid_argument(fmt::format("module {} lies between {} and LayerNorm '{}': only Linear -> LayerNorm -> Linear contracts",
                                            describe(source), linear ? "Linear '" + linear->name + "'" : "the model's input", ln.name));
  }
  refuse_hooks(source);
  if (!producer.empty() && producer != source.name)
    throw std::invalid_argument(fmt::format("--producer '{}' is not the LayerNorm's input: LayerNorm '{}' reads {}", printable(producer), ln.name, describe(source)));
  GraphChain chain;
  chain.producer = source.name;
  chain.norm = ln.name;
  chain.eps = ln.eps;
  for (const std::string& want : consumers) {  // named consumers must read the LayerNorm directly
    const GraphModule* m = module_named(g, want);
    if (!m) throw std::invalid_argument(fmt::format("--consumers names '{}', which is not a module of the module list", printable(want)));
    if (m->op != "Linear") throw std::invalid_argument(fmt::format("consumer {} is not a Linear", describe(*m)));
    if (m->inputs != std::vector<std::string>{ln.name}) {
      const std::string via = m->inputs.size() == 1 && m->inputs[0] != kModelInput ? describe(*module_named(g, m->inputs[0])) : "other modules";
      throw std::invalid_argument(fmt::format("module {} lies between LayerNorm '{}' and consumer '{}': only Linear -> LayerNorm -> Linear contracts",
                                              via, ln.name, m->name));
    }
  }
  std::set<std::string> contracted(consumers.begin(), consumers.end());
  if (consumers.empty())
    for (const GraphModule* reader : readers_of(g, ln.name))
      if (reader->op == "Linear" && reader->inputs.size() == 1) contracted.insert(reader->name);
  if (contracted.empty()) {
    const auto readers = readers_of(g, ln.name);
    throw std::invalid_argument(readers.empty() ? fmt::format("LayerNorm '{}' has no Linear consumer", ln.name)
                                                : fmt::format("module {} lies between LayerNorm '{}' and any Linear: only Linear -> LayerNorm -> Linear contracts",
                                                              describe(*readers[0]), ln.name));
  }
  for (const GraphModule& m : g.modules)  // in graph order
    if (contracted.count(m.name)) {
      refuse_hooks(m);
      chain.consumers.push_back(m.name);
    }
  // What still needs the LayerNorm's output (a reader not contracted, or the model's output), and
  // the producer's (another reader, the kept LayerNorm, or the model's output): those modules stay.
  std::string norm_needed_by, producer_needed_by;
  for (const GraphModule* reader : readers_of(g, ln.name))
    if (norm_needed_by.empty() && !contracted.count(reader->name)) norm_needed_by = reader->name;
  if (norm_needed_by.empty() && is_output(g, ln.name)) norm_needed_by = "model output";
  for (const GraphModule* reader : readers_of(g, source.name))
    if (producer_needed_by.empty() && reader->name != ln.name) producer_needed_by = reader->name;
  if (producer_needed_by.empty() && !norm_needed_by.empty()) producer_needed_by = ln.name;
  if (producer_needed_by.empty() && is_output(g, source.name)) producer_needed_by = "model output";
  if (!producer_needed_by.empty()) chain.retained.push_back({source.name, source.op, producer_needed_by});
  if (!norm_needed_by.empty()) chain.retained.push_back({ln.name, ln.op, norm_needed_by});
  return chain;
}

std::string chain_module_list(const std::string& producer, const std::string& norm, const std::vector<std::string>& consumers,
                              double eps) {
  nlohmann::json mods = nlohmann::json::array();
  mods.push_back({{"name", producer}, {"op", "Linear"}, {"inputs", {kModelInput}}});
  mods.push_back({{"name", norm}, {"op", "LayerNorm"}, {"inputs", {producer}}, {"eps", eps}});
  for (const std::string& c : consumers) mods.push_back({{"name", c}, {"op", "Linear"}, {"inputs", {norm}}});
  return nlohmann::json{{"format", kFormat}, {"modules", mods}, {"outputs", consumers}}.dump(1) + "\n";
}

}  // namespace normcheck
