"""The runnable examples of docs/integrations.md: every ```python block of a section, run in order in one fresh
namespace, so a test shows the documented path works as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def section_blocks(heading: str) -> list[str]:
    """The ```python blocks of the `## ` section whose heading contains `heading`, in order."""
    text = DOC.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    matches = [part for part in sections[1:] if heading in part.splitlines()[0]]
    if len(matches) != 1:
        raise LookupError(f"docs/integrations.md has {len(matches)} sections headed like {heading!r}")
    return re.findall(r"^```python\n(.*?)^```", matches[0], flags=re.DOTALL | re.MULTILINE)


def run_section(heading: str, namespace: dict | None = None) -> dict:
    """Run the section's python blocks in order in one namespace (given, or fresh); return the namespace."""
    blocks = section_blocks(heading)
    if not blocks:
        raise LookupError(f"docs/integrations.md section {heading!r} has no ```python block")
    namespace = {"__name__": "__docs__"} if namespace is None else namespace
    for block in blocks:
        exec(compile(block, f"docs/integrations.md ({heading})", "exec"), namespace)
    return namespace
