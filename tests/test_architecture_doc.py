"""docs/architecture.md stays true: its backticked paths exist, its `adacal.` names resolve, and every module under
adacal/ has an entry in its map (a new module without one fails here, named)."""

from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PATH_PREFIXES = ("adacal/", "tests/", "benchmarks/")
# The leading path of a code span (`adacal/metrics/binning.py`, `tests/cli/`, `benchmarks/*.py`); text after a space
# or a colon is not part of it.
_PATH = re.compile(r"[\w./*{},<>-]+")
_DOTTED = re.compile(r"adacal(?:\.[A-Za-z_]\w*)+")


@functools.cache
def _text() -> str:
    return DOC.read_text(encoding="utf-8")


@functools.cache
def _spans() -> tuple[str, ...]:
    """The text of every inline code span (`...`) of the document, fenced code blocks left out."""
    text = re.sub(r"^```.*?^```", "", _text(), flags=re.DOTALL | re.MULTILINE)
    return tuple(re.findall(r"`([^`\n]+)`", text))


def _doc_paths() -> list[str]:
    paths = []
    for span in _spans():
        if span.startswith(PATH_PREFIXES):
            match = _PATH.match(span)
            paths.append(match.group(0).rstrip(".,"))
    return sorted(set(paths))


def _doc_dotted_names() -> list[str]:
    return sorted({match.group(0) for span in _spans() if (match := _DOTTED.match(span))})


def _exists(path: str) -> bool:
    """A path exists; a glob (`benchmarks/*.py`) matches something; a template (`adacal/losses/<name>.py`, a file to
    create) has an existing folder before its first placeholder."""
    if "<" in path:
        folder = path[: path.index("<")].rpartition("/")[0]
        return (ROOT / folder).is_dir()
    if any(char in path for char in "*?["):
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def _resolves(dotted: str) -> str | None:
    """None when `dotted` names something real: the longest importable module prefix, then attributes. Otherwise why
    not."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only "this prefix (or a package above it) is not a module" moves on to a shorter prefix; a module that
            # fails to import one of its own dependencies is a real error.
            if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise
            continue
        for depth, attribute in enumerate(parts[cut:], start=cut + 1):
            if not hasattr(obj, attribute):
                return f"{'.'.join(parts[:depth - 1])} has no attribute {attribute!r}"
            obj = getattr(obj, attribute)
        return None
    return f"no module {parts[0]!r}"


def _module_files() -> list[Path]:
    return sorted(
        path for path in (ROOT / "adacal").rglob("*.py") if path.name not in ("__init__.py", "__main__.py")
    )


def test_the_document_exists_and_names_paths_and_objects():
    assert DOC.is_file(), f"{DOC} is missing"
    assert _doc_paths() and _doc_dotted_names()


def test_every_backticked_path_exists():
    missing = [path for path in _doc_paths() if not _exists(path)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {', '.join(missing)}"


def test_every_backticked_adacal_name_resolves():
    broken = [f"{name} ({why})" for name in _doc_dotted_names() if (why := _resolves(name)) is not None]
    assert not broken, f"docs/architecture.md names objects that do not exist: {'; '.join(broken)}"


@pytest.mark.parametrize("module_file", _module_files(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_module_has_a_map_entry(module_file):
    text = _text()
    relative = module_file.relative_to(ROOT).as_posix()
    dotted = relative[: -len(".py")].replace("/", ".")
    by_path = re.search(r"(?<![\w/.])" + re.escape(relative) + r"(?![\w/])", text)
    by_name = re.search(r"(?<![\w.])" + re.escape(dotted) + r"(?!\w)", text)
    assert by_path or by_name, (
        f"{relative} is not mentioned in docs/architecture.md: add it to the module map (as `{relative}`) with its "
        "responsibility and main public names"
    )
