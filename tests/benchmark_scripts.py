"""Import a script of benchmarks/ (not a package) by name, for the tests of that script."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a fresh module; its sibling scripts importable while it loads (bench_metrics_memory
    imports bench_metrics), the path restored afterwards."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
