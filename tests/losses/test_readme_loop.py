"""README's "AdaFocal in your own loop" example runs verbatim: γ is updated from validation every epoch."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _loop_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^### AdaFocal in your own loop\s*$(.*?)(?=^##|\Z)", text, flags=re.M | re.S)
    assert section, 'README.md has no "### AdaFocal in your own loop" section'
    block = re.search(r"^```python\s*\n(.*?)^```\s*$", section.group(1), flags=re.M | re.S)
    assert block, "the section has no ```python block"
    return block.group(1)


def test_the_own_loop_example_runs_and_moves_gamma(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(_loop_example(), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the README loop failed:\n{done.stdout}\n{done.stderr}"
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["0", "1", "2"]
    assert any(value != "1.0" for line in lines for value in re.findall(r"-?\d+\.\d+", line))  # γ moved from 1
