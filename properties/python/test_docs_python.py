"""docs/python.md runs as printed (issue 46): every indented snippet, in order, in one namespace (as a
reader pasting them into one session would), with `my_layer_norm` standing for the reader's kernel;
the test functions a snippet defines are called (the marker's options given to the fixture as pytest
would); shell lines run through the shell. The signature line of `check` is the one block that is
not Python, and the benchmark (scripts/bench_python.py, a side-by-side timing) is not run here."""
import ast
import os
import pathlib
import subprocess

import numpy as np

import normcheck
from normcheck.testing import assert_accurate

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def _blocks():
    """The page's indented blocks, each as one dedented text."""
    blocks, current = [], []
    for line in DOC.read_text().splitlines():
        if line.startswith("    ") or (current and not line.strip()):
            current.append(line[4:])
        elif current:
            blocks.append("\n".join(current).strip("\n"))
            current = []
    if current:
        blocks.append("\n".join(current).strip("\n"))
    return blocks


def my_layer_norm(x, g, b, eps, dtype):
    """The reader's kernel in the snippets: LayerNorm in float64, rounded once to the storage dtype."""
    x = x.astype(np.float64)
    y = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps) * g + b
    return normcheck.round_to(y, dtype)


def _fixture_for(test):
    """The `normcheck` fixture as the plugin builds it: the marker's options as defaults."""
    marks = [m for m in getattr(test, "pytestmark", []) if m.name == "normcheck"]
    defaults = dict(marks[0].kwargs) if marks else {}
    return lambda fn, **options: assert_accurate(fn, **{**defaults, **options})


def test_every_snippet_of_docs_python_md_runs_as_printed(tmp_path):
    os.chdir(tmp_path)  # the module-list snippet writes block.modules.json here
    namespace = {"my_layer_norm": my_layer_norm}
    ran = python = 0
    signature = shell = benchmark = 0
    for block in _blocks():
        first = block.splitlines()[0]
        if first.startswith("/usr/bin/python3 scripts/bench_python.py"):
            benchmark += 1
            continue
        if first.startswith("/usr/bin/python3 "):  # a shell line
            assert subprocess.run(first.split("#")[0], shell=True, timeout=120).returncode == 0, first
            shell += 1
            continue
        try:
            tree = ast.parse(block)
        except SyntaxError:
            assert first.startswith("normcheck.check(fn, "), block  # the signature, the only non-Python block
            signature += 1
            continue
        before = dict(namespace)
        exec(compile(tree, "docs/python.md", "exec"), namespace)
        python += 1
        for name in sorted(k for k, v in namespace.items() if before.get(k) is not v):  # new or redefined
            if name.startswith("test_") and callable(namespace[name]):
                test = namespace[name]
                params = test.__code__.co_varnames[:test.__code__.co_argcount] if hasattr(test, "__code__") else ()
                if params == ("normcheck",):
                    test(_fixture_for(test))
                else:
                    test()  # Hypothesis's @given tests take no argument
                ran += 1
    assert (signature, shell, benchmark) == (1, 1, 1)
    assert python >= 8 and ran >= 3, (python, ran)
    assert (tmp_path / "block.modules.json").exists()
