"""adacal's import graph: no cycle among its modules (lazy imports included), every reader module loads when
imported first, and `import adacal.sources` never imports torch."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from reading_fixtures import REPO


def _imports(repo: Path) -> dict[str, set[str]]:
    """Every adacal module's imports of other adacal modules, lazy (function-level) ones included."""
    modules = {}
    for path in (repo / "adacal").rglob("*.py"):
        parts = list(path.relative_to(repo).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, package)
    graph = {}
    for name, (path, package) in modules.items():
        base_package = name if package else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = base_package.split(".")[: len(base_package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            found |= {target for target in targets if target in modules and target != name}
        graph[name] = found
    return graph


def test_no_import_cycle_among_adacal_modules():
    graph = _imports(REPO)
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, " ; ".join(" → ".join(cycle) for cycle in cycles)
    assert "adacal.training.inference" in graph["adacal.commands.inputs"]
    assert not any(m == "adacal.training" for m in graph["adacal.evaluation"] | graph["adacal.commands.inputs"])


def test_every_reader_module_imports_first_in_a_fresh_interpreter():
    """Import order must not matter: each module, imported first, loads (no partially-initialised module)."""
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m == 'adacal' or m.startswith('adacal.')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
        "import adacal.sources\n"
    )
    names = ["adacal.sources", "adacal.sources.files", "adacal.predictions", "adacal.training.checkpoints",
             "adacal.training.inference", "adacal.training", "adacal.evaluation", "adacal.ood", "adacal.runs",
             "adacal.reports", "adacal.cli"]
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    light = subprocess.run([sys.executable, "-c", "import sys, adacal.sources; print('torch' in sys.modules)"],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert light.stdout.strip() == "False", light.stderr  # reading a .npz or .csv never imports torch
