"""A clipped ECE-DEBIAS (its debiased estimate of the squared error is ≤ 0: below the estimator's resolution, not a
measured perfect calibration) shows as `≤ 0` with one note in every table — evaluate, train, calibrate and shift —
never as `0.00`. Each case is small calibrated data whose clip is checked independently first
(`debiased_square_error` of the equal-mass bins ≤ 0)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from cli_helpers import runner

from adacal.cli import app
from adacal.cli.common import DEBIAS_CLIPPED, DEBIAS_NOTE
from adacal.metrics import compute_metrics


def _calibrated(seed, n=60, k=3):
    """Logits and labels drawn from their own softmax: calibrated, and so few per bin that the estimate clips."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=row) for row in probs])
    return logits, labels


def _debias_square(logits, labels, n_bins=15):
    """The debiased estimate of the squared top-label error, from the definition (Kumar et al. 2019): equal-mass
    bins of the top-1 confidence, Σ n_b/N [(C_b − A_b)² − A_b(1 − A_b)/(n_b − 1)] over bins with n_b ≥ 2."""
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    conf, hits = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    order = np.argsort(conf, kind="stable")
    total = 0.0
    for chunk in np.array_split(order, n_bins):
        if len(chunk) >= 2:
            c, a = conf[chunk].mean(), hits[chunk].mean()
            total += len(chunk) / len(conf) * ((c - a) ** 2 - a * (1 - a) / (len(chunk) - 1))
    return total


CLIPPED_SEED = 0  # _calibrated(0): its estimate is negative (checked below), ECE-EM is 18.7 %
NOT_CLIPPED_SEED = 1


def test_the_cases_clip_as_the_definition_says():
    logits, labels = _calibrated(CLIPPED_SEED)
    assert _debias_square(logits, labels) < -1e-3
    assert compute_metrics(logits, labels, names=["ece_debias"])["ece_debias"] == 0.0
    logits, labels = _calibrated(NOT_CLIPPED_SEED)
    assert _debias_square(logits, labels) > 1e-3
    assert compute_metrics(logits, labels, names=["ece_debias"])["ece_debias"] > 0


def _debias_cell(text):
    """The ECE-DEBIAS row's value cell of a two-column metric table."""
    line = next(line for line in text.splitlines() if "ECE-DEBIAS" in line)
    return [cell.strip() for cell in re.split(r"[│|]", line) if cell.strip()][1]


@pytest.mark.parametrize("seed, clipped", [(CLIPPED_SEED, True), (NOT_CLIPPED_SEED, False)])
def test_evaluate_and_train_tables_show_the_same_cell(tmp_path, capsys, seed, clipped):
    from adacal.cli.train import _print_summary

    logits, labels = _calibrated(seed)
    np.savez(tmp_path / "p.npz", logits=logits, labels=labels)
    evaluated = runner.invoke(app, ["evaluate", str(tmp_path / "p.npz")])
    assert evaluated.exit_code == 0, evaluated.output
    metrics = compute_metrics(logits, labels)
    _print_summary(SimpleNamespace(test_metrics=metrics, selected_epoch=1, select="last", run_dir=tmp_path,
                                   seconds=1.0), quiet=False)
    trained = capsys.readouterr()
    for text, notes in ((evaluated.stdout, evaluated.stderr), (trained.out, trained.err)):
        shown = _debias_cell(text)
        assert shown == (DEBIAS_CLIPPED if clipped else f"{100 * metrics['ece_debias']:.2f}")
        assert ("ECE-DEBIAS ≤ 0" in notes) is clipped


def test_calibrate_table_shows_a_clipped_debias_as_in_its_report(tmp_path):
    logits, labels = _calibrated(CLIPPED_SEED, n=120)
    test_logits, test_labels = _calibrated(CLIPPED_SEED)
    np.savez(tmp_path / "p.npz", val_logits=logits, val_labels=labels, test_logits=test_logits,
             test_labels=test_labels)
    result = runner.invoke(app, ["calibrate", str(tmp_path / "p.npz"), "--method", "temperature", "--json",
                                 str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / "c.json").read_text())["results"]["calibrators"]["temperature"]
    assert entry["test_pre"]["ece_debias"] == 0.0  # the uncalibrated test set is the clipped case above
    metrics_table = result.stdout[:result.stdout.index("Fitted parameters")]
    rows = {line.split()[0]: line.split() for line in metrics_table.splitlines()
            if line.split()[:1] in (["uncalibrated"], ["temperature"])}
    column = 3  # method, ECE-EM, ECE-EW, ECE-DEBIAS, ...: "≤ 0" splits into two words
    assert rows["uncalibrated"][column:column + 2] == ["≤", "0"]
    post = entry["test_post"]["ece_debias"]
    assert rows["temperature"][column:column + (2 if post == 0.0 else 1)] == (
        ["≤", "0"] if post == 0.0 else [f"{100 * post:.2f}"])
    assert "0.00" not in rows["uncalibrated"][column]
    assert result.stderr.count(DEBIAS_NOTE) == 1


def test_shift_tables_show_a_clipped_debias_and_its_note(capsys):
    from adacal.cli.shift import _debias_clipped, _print_tables
    from adacal.shift import by_severity, set_metrics

    clipped, positive = _calibrated(CLIPPED_SEED), _calibrated(NOT_CLIPPED_SEED)
    clean = {"n": 60, **set_metrics(*clipped, temperature=1.0)}
    sets = [{"corruption": "fog", "severity": 1, "n": 60, **set_metrics(*positive, temperature=1.0)},
            {"corruption": "fog", "severity": 2, "n": 60, **set_metrics(*clipped, temperature=1.0)}]
    results = {"dataset": "cifar10", "n": 60, "temperature": 1.0, "clean": clean, "sets": sets,
               "by_severity": by_severity(sets, [1, 2])}
    assert clean["pre"]["ece_debias"] == 0.0 and sets[0]["pre"]["ece_debias"] > 0
    _print_tables(results)
    out = capsys.readouterr().out
    rows = [line.split("│")[1:-1] for line in out.splitlines() if line.count("│") > 5]
    assert len(rows) == 6  # clean, 1, 2 in each of the two tables (as given, / T = 1: the same figures)
    for cells in rows:
        name, shown = cells[0].strip(), cells[5].strip()  # severity, error, NLL, ECE-EM, ECE-EW, ECE-DEBIAS
        assert shown == (f"{100 * sets[0]['pre']['ece_debias']:.2f}" if name == "1" else DEBIAS_CLIPPED)
    assert _debias_clipped(results)
    results["clean"] = {"n": 60, **set_metrics(*positive, temperature=1.0)}
    results["sets"], results["by_severity"] = sets[:1], by_severity(sets[:1], [1])
    assert not _debias_clipped(results)


def test_the_quiet_line_shows_a_clipped_debias_as_the_tables_do(tmp_path):
    for seed, clipped in ((CLIPPED_SEED, True), (NOT_CLIPPED_SEED, False)):
        logits, labels = _calibrated(seed)
        np.savez(tmp_path / "p.npz", logits=logits, labels=labels)
        result = runner.invoke(app, ["evaluate", str(tmp_path / "p.npz"), "-q", "--metrics", "ece-debias,ece-em"])
        assert result.exit_code == 0, result.output
        value = compute_metrics(logits, labels, names=["ece_debias"])["ece_debias"]
        assert f"ECE-DEBIAS {'≤ 0' if clipped else f'{100 * value:.2f}%'}  ECE-EM" in result.stdout
