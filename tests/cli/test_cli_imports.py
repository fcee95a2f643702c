"""The layer map's two promises about imports, read from the source: the CLI reaches the library only through
`adacal.commands` (plus the foundation's constants and errors), and `adacal.sources` is a leaf that imports no
layer above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "adacal"
CLI_MAY_IMPORT = ("adacal.cli", "adacal.commands", "adacal.conventions", "adacal.errors", "adacal.version")
ABOVE_SOURCES = ("adacal.interpretation", "adacal.commands", "adacal.training", "adacal.evaluation", "adacal.plots",
                 "adacal.ood", "adacal.calibrators", "adacal.losses", "adacal.models", "adacal.data", "adacal.cli")


def _adacal_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every `import adacal...` / `from adacal... import`, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "adacal" else [f"adacal.{a.name}" for a in node.names]
            found += [(node.lineno, name) for name in names if name.startswith("adacal")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("adacal")]
    return found


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_cli_imports_the_library_only_through_commands(path):
    wrong = [(line, name) for line, name in _adacal_imports(path)
             if not any(name == allowed or name.startswith(allowed + ".") for allowed in CLI_MAY_IMPORT)]
    assert not wrong, f"{path.name} imports {wrong}: go through adacal.commands"


@pytest.mark.parametrize("path", sorted((PACKAGE / "sources").glob("*.py")), ids=lambda p: p.name)
def test_sources_is_a_leaf(path):
    wrong = [(line, name) for line, name in _adacal_imports(path)
             if any(name == above or name.startswith(above + ".") for above in ABOVE_SOURCES)]
    assert not wrong, f"{path.name} imports {wrong}: adacal.sources only reads bytes into arrays"


def test_the_import_scan_sees_imports():
    """The scan itself: a CLI module's imports are found (so the tests above cannot pass by finding nothing)."""
    assert any(name == "adacal.commands" or name.startswith("adacal.commands.")
               for _, name in _adacal_imports(PACKAGE / "cli" / "evaluate.py"))
