"""Every command's tables fit the terminal they are printed in, from 80 columns up, without cutting a number: rendered
at 80, 100 and 160 columns ($COLUMNS), no line is wider and no cell is ellipsised (rich's "…")."""

from __future__ import annotations

import numpy as np
import pytest
from cli_helpers import runner

from adacal.arrays import softmax
from adacal.cli import app

WIDTHS = (80, 100, 160)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=3.0, size=(400, 10))
    labels = np.where(rng.random(400) < 0.7, logits.argmax(axis=1), rng.integers(0, 10, 400))
    np.savez(folder / "split.npz", val_logits=logits[:200], val_labels=labels[:200], test_logits=logits[200:],
             test_labels=labels[200:])
    np.savez(folder / "probs.npz", probs=softmax(logits), labels=labels)
    np.savez(folder / "out.npz", logits=rng.normal(size=(150, 10)))
    return folder


def _rendered(args, width):
    result = runner.invoke(app, [str(arg) for arg in args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _fits(text, width):
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, f"{len(too_wide)} line(s) over {width} columns: {too_wide[0]!r}"
    assert "…" not in text, f"a cut value at {width} columns:\n{text}"


@pytest.mark.parametrize("width", WIDTHS)
def test_evaluate_with_intervals(files, width):
    _fits(_rendered(["evaluate", files / "probs.npz", "--bootstrap", "20"], width), width)


@pytest.mark.parametrize("width", WIDTHS)
def test_calibrate_all_methods(files, width):
    text = _rendered(["calibrate", files / "split.npz", "--method", "all"], width)
    _fits(text, width)
    assert "T=" in text and "Fitted parameters" in text  # the parameters are shown, in their own table


@pytest.mark.parametrize("width", WIDTHS)
def test_calibrate_all_methods_by_another_metric(files, width):
    """A third CV column, skipped candidates and a long selection message still fit."""
    text = _rendered(["calibrate", files / "split.npz", "--method", "all", "--select-metric", "ece-debias"], width)
    _fits(text, width)
    assert "CV ECE-DEBIAS" in text and "Selected " in text


@pytest.mark.parametrize("width", WIDTHS)
def test_ood_with_every_score_before_and_after_temperature(files, width):
    text = _rendered(["ood", "--in-preds", files / "split.npz", "--out-preds", files / "out.npz",
                      "--fit-temperature", "--scores", "entropy,max-prob,energy"], width)
    _fits(text, width)
    assert "AUPR-in %" in text and "AUPR-out %" in text and "/ T" in text  # told apart, before and after T


@pytest.mark.parametrize("width", WIDTHS)
def test_train_closing_table_uses_display_names(tmp_path, width):
    text = _rendered(["train", "--epochs", "1", "--train-subset", "64", "--batch-size", "32", "--device", "cpu",
                      "--out", tmp_path / "runs"], width)
    table = text[text.index("Test metrics"):text.index("Run folder:")]  # a path line stays whole: not a table
    _fits(table, width)
    assert "ECE-EM" in table and "ece_em" not in table  # as evaluate names them
