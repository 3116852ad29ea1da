// libFuzzer target: the module list `contract --graph` reads (docs/qr-contraction.md, "The module
// list"): parsing, then the search for the Linear -> LayerNorm -> Linear chain it would contract.
// Beyond "no crash": every refusal is std::invalid_argument; a chain found names modules of the
// list, a LayerNorm over exactly one axis, and a list `chain_module_list` writes parses back.
#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

#include "contraction/module_graph.hpp"

namespace {

bool names_module(const normcheck::ModuleGraph& g, const std::string& name, const char* op) {
  for (const normcheck::GraphModule& m : g.modules)
    if (m.name == name) return m.op == op && (std::string(op) != "LayerNorm" || (m.normalized_dims == 1 && !m.hooks));
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  normcheck::ModuleGraph g;
  try {
    g = normcheck::parse_module_list(text, "fuzz.modules.json");
  } catch (const std::invalid_argument&) {
    return 0;  // one line, refused
  }
  normcheck::GraphChain chain;
  try {
    chain = normcheck::find_contractible_chain(g, "", "", {});
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (!names_module(g, chain.producer, "Linear") || !names_module(g, chain.norm, "LayerNorm") || chain.consumers.empty())
    __builtin_trap();
  for (const std::string& c : chain.consumers)
    if (!names_module(g, c, "Linear")) __builtin_trap();
  // the plain chain of the same modules round-trips through the writer and the parser
  const std::string written = normcheck::chain_module_list(chain.producer, chain.norm, chain.consumers, chain.eps.value_or(1e-5));
  const normcheck::ModuleGraph back = normcheck::parse_module_list(written, "written.modules.json");
  if (back.modules.size() != 2 + chain.consumers.size()) __builtin_trap();
  return 0;
}
