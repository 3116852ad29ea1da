#pragma once
/// The module graph of a model, as a documented JSON module list (docs/qr-contraction.md, "The
/// module list"): what a state dict cannot show. A state dict names tensors only, so a
/// Linear -> GELU -> LayerNorm -> Linear model looks like Linear -> LayerNorm -> Linear once the
/// GELU (no parameters) is gone; a residual addition or a hook is invisible too. `normcheck
/// contract --graph FILE` reads the list, finds the Linear -> LayerNorm -> Linear chain in it,
/// refuses anything between the three (naming the intervening module), and reports the modules
/// other consumers still need (they stay in the model and count in the storage comparison).
#include <optional>
#include <string>
#include <vector>

namespace normcheck {

struct GraphModule {
  std::string name;  ///< state-dict prefix ("0", "encoder.norm")
  std::string op;    ///< "Linear", "LayerNorm", or any other op (GELU, Add, Dropout, ...)
  std::vector<std::string> inputs;  ///< modules whose outputs it reads ("input": the model's input)
  std::optional<double> eps;        ///< a LayerNorm's eps, when the list gives it
  int normalized_dims = 1;          ///< a LayerNorm's number of normalized axes
  bool hooks = false;               ///< forward hooks or an overridden forward are registered
};

struct ModuleGraph {
  std::vector<GraphModule> modules;  ///< in execution order (inputs name earlier modules)
  std::vector<std::string> outputs;  ///< the model's outputs (default: the last module)
};

/// Parses a module list; throws std::invalid_argument with one line naming what is wrong
/// (malformed JSON, unknown format, duplicate or unknown module names, inputs naming later modules).
ModuleGraph parse_module_list(const std::string& text, const std::string& origin);
ModuleGraph read_module_list(const std::string& path);

/// A module that stays in the contracted model because something other than the contracted
/// consumers reads its output (or it is a model output).
struct RetainedModule {
  std::string name, op;
  std::string needed_by;  ///< the module (or "model output") that reads it
};

/// The contractible chain of a graph.
struct GraphChain {
  std::string producer, norm;
  std::vector<std::string> consumers;
  std::vector<RetainedModule> retained;  ///< producer and/or LayerNorm, when still needed
  std::optional<double> eps;             ///< the LayerNorm's eps from the list
};

/// The Linear -> LayerNorm -> Linear chain around LayerNorm `norm` (empty: the graph's only
/// LayerNorm), with `consumers` (empty: every Linear reading the LayerNorm) and `producer` (empty:
/// the LayerNorm's input) checked against the graph. Throws std::invalid_argument with one line
/// when there is no such chain: an op between producer and LayerNorm or LayerNorm and a consumer
/// (named), a hook, a LayerNorm over more than one axis, a consumer or producer that is not a Linear.
GraphChain find_contractible_chain(const ModuleGraph& g, const std::string& norm, const std::string& producer,
                                   const std::vector<std::string>& consumers);

/// The module list of the plain chain producer -> norm -> consumers (what `example-block --modules` writes).
std::string chain_module_list(const std::string& producer, const std::string& norm, const std::vector<std::string>& consumers,
                              double eps);

}  // namespace normcheck
