"""What every CLI test shares: one CliRunner, the check of a one-line error, a snapshot of folders, and the prediction
files made from a trained run (the run itself comes from the `train_tiny_run` fixture in conftest.py).

Test modules in any folder import it by name (`from cli_helpers import one_line_error, runner`): tests/conftest.py
puts tests/ on sys.path (there is no tests/__init__.py).
"""

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

runner = CliRunner()


def one_line_error(result, *fragments: str | None, exit_code: int = 2) -> str:
    """Assert `result` is the CLI's error: exit status `exit_code`, exactly one `Error: ...` line on stderr, no
    traceback anywhere and no exception other than the exit; each of `fragments` (None: none) must be in that line.
    Returns the line."""
    assert result.exit_code == exit_code, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    for fragment in fragments:
        if fragment is not None:
            assert fragment in lines[0], lines[0]
    return lines[0]


def snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under the roots (links not followed) with its (mtime_ns, size): what a refused command must leave
    exactly as it was."""
    state = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            info = path.lstat()
            state[str(path)] = (info.st_mtime_ns, info.st_size if path.is_file() else -1)
    return state


def write_prediction_files(root: Path, run: Path) -> dict:
    """The run's predictions as root/preds.npz (test logits and labels) and root/split.npz (every array of the run's
    predictions.npz: val_ and test_ logits and labels); returns those arrays by name."""
    with np.load(run / "predictions.npz") as arrays:
        split = {key: arrays[key] for key in arrays.files}
    np.savez(root / "preds.npz", logits=split["test_logits"], labels=split["test_labels"])
    np.savez(root / "split.npz", **split)
    return split
