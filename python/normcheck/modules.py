"""The module list of a PyTorch model, for ``normcheck contract --graph`` (docs/qr-contraction.md).

A state dict names tensors only: a GELU, a residual addition or a hook between a Linear, a LayerNorm
and the next Linear leaves no trace in it, and contracting such a model would replace it with a
different function. ``module_list(model)`` traces the model with ``torch.fx`` and writes what runs,
in execution order: every module call (``op`` is the module's class name, ``name`` its state-dict
prefix), every function or method call between them (``op`` is the function's name: ``add``,
``gelu``, ...), what each reads (``inputs``; ``"input"`` is the model's input), a LayerNorm's ``eps``
and number of normalized axes, and whether forward hooks are registered::

    import torch, normcheck.modules
    model = torch.nn.Sequential(torch.nn.Linear(12, 48), torch.nn.LayerNorm(48), torch.nn.Linear(48, 8))
    normcheck.modules.write_module_list(model, "block.modules.json")

Models ``torch.fx`` cannot trace (data-dependent control flow) raise its error: write the list by
hand then, in the format of docs/qr-contraction.md.
"""
import json

FORMAT = "normcheck-modules-v1"


def _has_hooks(module):
    return bool(getattr(module, "_forward_hooks", None) or getattr(module, "_forward_pre_hooks", None))


def _node_inputs(node, names):
    """Names of the traced nodes ``node`` reads, in argument order (constants and parameters left out)."""
    import torch.fx

    found = []

    def visit(arg):
        if isinstance(arg, torch.fx.Node) and arg in names and names[arg] not in found:
            found.append(names[arg])
        return arg

    torch.fx.node.map_arg((node.args, node.kwargs), visit)
    return found


def module_list(model):
    """The module list of ``model`` (a dict in the ``normcheck-modules-v1`` format)."""
    import torch
    import torch.fx

    # Modules without submodules are one call each (Linear, LayerNorm, GELU, users' own leaf
    # modules); containers and composite modules are traced into.
    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return not any(True for _ in m.children())

    graph = Tracer().trace(model)
    names, modules, outputs = {}, [], []
    submodules = dict(model.named_modules())
    for node in graph.nodes:
        if node.op == "placeholder":
            names[node] = "input"
            continue
        if node.op == "output":
            outputs = _node_inputs(node, names)
            continue
        if node.op == "get_attr":
            continue  # a parameter read by a function call: not a module output
        entry = {"inputs": _node_inputs(node, names) or ["input"]}
        if node.op == "call_module":
            sub = submodules[node.target]
            entry.update(name=node.target, op=type(sub).__name__)
            if isinstance(sub, torch.nn.LayerNorm):
                entry.update(eps=float(sub.eps), normalized_dims=len(sub.normalized_shape))
            if _has_hooks(sub):
                entry["hooks"] = True
        else:  # call_function / call_method: an op between modules (add, gelu, relu, ...)
            target = node.target
            entry.update(name=node.name, op=target if isinstance(target, str) else getattr(target, "__name__", str(target)))
        names[node] = entry["name"]
        modules.append(entry)
    result = {"format": FORMAT, "modules": modules}
    if outputs:
        result["outputs"] = outputs
    return result


def write_module_list(model, path):
    """Writes ``module_list(model)`` to ``path`` as JSON."""
    with open(path, "w") as f:
        json.dump(module_list(model), f, indent=1)
        f.write("\n")
