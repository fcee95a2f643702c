"""README.md stays true and short: its Python example runs verbatim on a run's predictions.npz, it has at most 250
lines, and every relative link in it points to a file or folder that exists."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 250
# The example reads the run the quick start trains (`adacal train --loss ce --name ce`).
EXAMPLE_PREDICTIONS = Path("runs") / "ce" / "predictions.npz"


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def python_example(text: str) -> str:
    """The first ```python block under the "## From Python" heading."""
    section = re.search(r"^## From Python\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert section, 'README.md has no "## From Python" section'
    block = re.search(r"^```python\s*\n(.*?)^```\s*$", section.group(1), flags=re.M | re.S)
    assert block, 'README.md\'s "From Python" section has no ```python block'
    return block.group(1)


def relative_links(text: str) -> list[str]:
    """Targets of Markdown links `[text](target)` that are neither URLs nor anchors within the page."""
    targets = re.findall(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    return [t for t in targets if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", t, flags=re.I)]


def test_readme_is_at_most_250_lines():
    lines = readme_text().splitlines()
    assert len(lines) <= MAX_LINES, (f"README.md has {len(lines)} lines; keep it at most {MAX_LINES} (move detail "
                                     "to docs/)")


def test_every_relative_link_in_the_readme_exists():
    links = relative_links(readme_text())
    assert links, "README.md links to no file: the test would check nothing"
    missing = sorted({link for link in links if not (ROOT / link.split("#", 1)[0]).exists()})
    assert not missing, f"README.md links to files that do not exist: {', '.join(missing)}"


def test_the_python_example_names_the_file_this_test_provides():
    assert f'"{EXAMPLE_PREDICTIONS.as_posix()}"' in python_example(readme_text())


def test_the_python_example_runs_verbatim_on_a_runs_predictions(digits_run, tmp_path):
    """The example runs as a user runs it — a fresh interpreter in a folder holding runs/ce/predictions.npz — with
    this checkout's adacal."""
    (tmp_path / EXAMPLE_PREDICTIONS).parent.mkdir(parents=True)
    shutil.copyfile(Path(digits_run) / "predictions.npz", tmp_path / EXAMPLE_PREDICTIONS)
    script = tmp_path / "readme_example.py"
    script.write_text(python_example(readme_text()), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"README's Python example failed:\n{done.stdout}\n{done.stderr}"
    assert "ECE-EM before:" in done.stdout and "ece_em" in done.stdout, done.stdout
