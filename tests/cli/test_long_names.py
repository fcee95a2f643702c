"""A path whose file or folder name is longer than the file system allows, in any path option or argument of any
command, input or output: one `Error:` line naming that option, exit 2, nothing created (not an OSError traceback
from wherever the path is first touched)."""

import numpy as np
import pytest
from cli_helpers import one_line_error, runner

from adacal.cli import app
LONG = "n" * 300

CASES = [
    (["evaluate", "{long}.npz"], "PREDICTIONS"),
    (["evaluate", "{long}/x.npz"], "PREDICTIONS"),
    (["evaluate", "{ok}", "--calibrator", "{long}.json"], "--calibrator"),
    (["evaluate", "{ok}", "--labels", "{long}.npy"], "--labels"),
    (["evaluate", "{ok}", "--json", "{long}.json"], "--json"),
    (["calibrate", "{long}.npz"], "RUN_OR_PREDICTIONS"),
    (["calibrate", "{ok}", "--val", "{long}.npz"], "--val"),
    (["calibrate", "{ok}", "--save", "{long}.json"], "--save"),
    (["train", "--resume", "{long}"], "--resume"),
    (["train", "--out", "{long}"], "--out"),
    (["train", "--data-dir", "{long}"], "--data-dir"),
    (["ood", "--in-preds", "{long}.npz", "--out-preds", "{ok}"], "--in-preds"),
    (["ood", "--in-preds", "{ok}", "--out-preds", "{long}.npz"], "--out-preds"),
    (["ood", "--model", "{long}", "--out", "svhn"], "--model"),
    (["plot", "reliability", "{long}.npz"], "INPUT"),
    (["plot", "reliability", "{ok}", "--out", "{long}.png"], "--out"),
    (["plot", "curves", "{long}"], "RUN"),
    (["plot", "gamma", "{long}"], "RUN"),
    (["plot", "roc", "{long}.json"], "OOD_JSON"),
]


@pytest.mark.parametrize("argv, flag", CASES, ids=[" ".join(a[:2]) + f" {f}" for a, f in CASES])
def test_too_long_names_are_one_line_naming_the_option(tmp_path, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "ok.npz", logits=rng.normal(size=(20, 3)), labels=rng.integers(0, 3, 20))
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, [a.format(long=LONG, ok="ok.npz") for a in argv])
    assert one_line_error(result).startswith(f"Error: Expected {flag} to have file and folder names of at most")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
