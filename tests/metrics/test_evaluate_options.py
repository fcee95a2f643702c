"""`adacal evaluate` options owned by the metrics: display names in the table, memory bounds on --n-bins and
--bootstrap (one-line errors before any work), and the bootstrap progress bar (terminal only)."""

import json

import numpy as np
import pytest

from adacal.cli import app
from cli_helpers import one_line_error, runner


@pytest.fixture()
def npz(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=80)
    logits = rng.normal(size=(80, 4)).astype(np.float32)
    logits[np.arange(80), labels] += 1.5
    path = tmp_path / "preds.npz"
    np.savez(path, logits=logits, labels=labels)
    return path


def invoke(*args, env=None):
    return runner.invoke(app, ["evaluate", *map(str, args)], env=env)


def test_table_uses_display_names_and_json_snake_case_from_any_spelling(npz, tmp_path):
    out = tmp_path / "r.json"
    result = invoke(npz, "--metrics", "ECE-EM,ece_smooth,nll", "--json", out)
    assert result.exit_code == 0, result.output
    for shown in ("ECE-EM", "ECE-SMOOTH", "NLL"):
        assert shown in result.stdout
    assert list(json.loads(out.read_text())["results"]["metrics"]) == ["ece_em", "ece_smooth", "nll"]


def test_n_bins_and_bootstrap_beyond_memory_are_one_line_errors_and_write_nothing(npz, tmp_path):
    out = tmp_path / "r.json"
    one_line_error(invoke(npz, "--n-bins", 10**12, "--json", out), "--n-bins", "1000000000000", "TiB")
    one_line_error(invoke(npz, "--bootstrap", 10**15, "--json", out), "--bootstrap", "PiB")
    assert not out.exists()
    assert invoke(npz, "--n-bins", 500, "--json", out).exit_code == 0  # more bins than samples is fine


def test_bootstrap_progress_only_on_a_terminal(npz):
    piped = invoke(npz, "--bootstrap", 5, "--metrics", "ece-em")
    assert piped.exit_code == 0 and "Bootstrap" not in piped.stderr
    shown = invoke(npz, "--bootstrap", 5, "--metrics", "ece-em", env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert shown.exit_code == 0, shown.output
    assert "Bootstrap resamples" in shown.stderr and "5/5" in shown.stderr
    quiet = invoke(npz, "--bootstrap", 5, "-q", env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert quiet.exit_code == 0 and quiet.stderr == "" and len(quiet.stdout.splitlines()) == 1  # the summary line
