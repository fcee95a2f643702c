"""benchmarks/conformal_cifar10.py on made-up quality runs: THR's sets worked out by hand from the finite-sample
quantile, CE + T dividing by the run's temperature, the paired difference from CE + T, runs whose predictions are
not the result's refused."""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


conformal_cifar10 = _load("conformal_cifar10")
qc = _load("quality_common")

N_VAL, N_TEST, K = 300, 400, 5
TEMPERATURE = 1.7


def _logits(rng: np.random.Generator, n: int, sharpness: float) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, K, size=n)
    logits = rng.normal(size=(n, K)) + sharpness * np.eye(K)[labels]
    return (logits * sharpness).astype(np.float32), labels


def _write_run(folder: Path, loss: str, seed: int, *, sharpness: float, error_shift: float = 0.0) -> None:
    rng = np.random.default_rng(100 * seed + len(loss))
    val_logits, val_labels = _logits(rng, N_VAL, sharpness)
    test_logits, test_labels = _logits(rng, N_TEST, sharpness)
    result = qc.result_path(folder, loss, "mean", seed)
    error = float((test_logits.argmax(axis=1) != test_labels).mean()) + error_shift
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps({"schema": qc.RESULT_SCHEMA, "key": "k", "loss": loss, "arm": "mean", "seed": seed,
                                  "test_pre": {"error": error}, "ts_ece_em": {"temperature": TEMPERATURE}}))
    np.savez_compressed(qc.predictions_path(result), val_logits=val_logits, val_labels=val_labels,
                        test_logits=test_logits, test_labels=test_labels)


def _thr_mean_size(val_logits, val_labels, test_logits, alpha):
    """Split conformal with THR, by hand: the ⌈(n+1)(1−α)⌉-th smallest validation score 1 − p_y, and every class
    whose 1 − p is at most it."""
    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    scores = np.sort(1 - softmax(val_logits)[np.arange(len(val_labels)), val_labels])
    q = scores[math.ceil((len(scores) + 1) * (1 - alpha)) - 1]
    return float((1 - softmax(test_logits) <= q).sum(axis=1).mean())


@pytest.fixture()
def runs(tmp_path):
    folder = tmp_path / "runs"
    for seed in (0, 1):
        for loss, sharpness in (("ce", 2.0), ("flsd-53", 1.2), ("adafocal", 1.5)):
            _write_run(folder, loss, seed, sharpness=sharpness)
    return folder


def test_sets_and_the_paired_difference_from_temperature_scaled_ce(runs, tmp_path, capsys):
    out = tmp_path / "conformal.json"
    assert conformal_cifar10.main(["--runs-dir", str(runs), "--seeds", "0,1", "--results", str(out),
                                   "--figure", str(tmp_path / "f.png")]) == 0
    report = json.loads(out.read_text())
    cells, summary = report["results"]["cells"], report["results"]["summary"]
    printed = capsys.readouterr().out
    assert "AdaFocal γ0=0 λ3 seed 0" in printed and "not available yet" in printed  # listed, not invented
    assert {c["row"] for c in cells} == {"CE", "CE + T", "FLSD-53", "AdaFocal"}
    assert {(c["score"], c["alpha"]) for c in cells} == {(s, a) for s in ("thr", "aps", "raps") for a in (0.05, 0.1)}
    from adacal.predictions import load_split_predictions

    for row, loss, temperature in (("CE", "ce", 1.0), ("CE + T", "ce", TEMPERATURE), ("FLSD-53", "flsd-53", 1.0)):
        for seed in (0, 1):
            splits = load_split_predictions(qc.predictions_path(qc.result_path(runs, loss, "mean", seed)))
            for alpha in (0.05, 0.1):
                cell = next(c for c in cells if (c["row"], c["seed"], c["score"], c["alpha"]) == (row, seed, "thr",
                                                                                                 alpha))
                expected = _thr_mean_size(splits["val"].logits / temperature, splits["val"].labels,
                                          splits["test"].logits / temperature, alpha)
                assert cell["mean_set_size"] == pytest.approx(expected, abs=1e-12)
                assert cell["temperature"] == temperature
    # Δ size: each seed's difference from CE + T's at the same score and α, then mean ± std over seeds.
    for entry in summary:
        if entry["row"] == "CE + T":
            assert entry["size_minus_baseline"] is None
            continue
        diffs = [next(c for c in cells if (c["row"], c["seed"], c["score"], c["alpha"]) ==
                      (entry["row"], seed, entry["score"], entry["alpha"]))["mean_set_size"]
                 - next(c for c in cells if (c["row"], c["seed"], c["score"], c["alpha"]) ==
                        ("CE + T", seed, entry["score"], entry["alpha"]))["mean_set_size"] for seed in (0, 1)]
        assert entry["size_minus_baseline"]["mean"] == pytest.approx(np.mean(diffs))
        assert entry["size_minus_baseline"]["std"] == pytest.approx(np.std(diffs, ddof=1))
    assert (tmp_path / "f.png").stat().st_size > 0


def test_predictions_that_are_not_the_results_are_refused(runs, tmp_path):
    _write_run(runs, "adafocal", 0, sharpness=1.5, error_shift=0.01)
    with pytest.raises(SystemExit, match="not that run's"):
        conformal_cifar10.main(["--runs-dir", str(runs), "--seeds", "0", "--results", str(tmp_path / "c.json"),
                                "--figure", ""])


def test_retrained_predictions_are_read_with_the_figures_of_their_record(runs, tmp_path):
    """Predictions of a retrained run (another draw of the cell) come with their own figures: CE + T divides by the
    record's temperature, and the error check reads the record, not the committed result."""
    result = qc.result_path(runs, "ce", "mean", 0)
    committed = json.loads(result.read_text())
    committed["test_pre"]["error"] += 0.05  # the committed draw: not these predictions'
    result.write_text(json.dumps(committed))
    test = np.load(qc.predictions_path(result))
    error = float((test["test_logits"].argmax(axis=1) != test["test_labels"]).mean())
    qc.write_predictions_record(result, {"reproduces_result": False, "figures": {"error": error, "t_ece_em": 2.5},
                                         "result_figures": {"error": committed["test_pre"]["error"]}})
    out = tmp_path / "c.json"
    assert conformal_cifar10.main(["--runs-dir", str(runs), "--seeds", "0", "--results", str(out), "--figure", ""]) == 0
    report = json.loads(out.read_text())["results"]
    scaled = next(c for c in report["cells"] if c["row"] == "CE + T")
    assert scaled["temperature"] == 2.5 and scaled["test_error"] == pytest.approx(error)
    assert report["predictions"]["ce-seed0"]["retrained"] is True
    assert report["predictions"]["ce-seed0"]["result_test_error"] == pytest.approx(committed["test_pre"]["error"])


def test_alpha_outside_the_unit_interval_is_refused(runs, tmp_path):
    with pytest.raises(SystemExit, match=r"every α in \(0, 1\)"):
        conformal_cifar10.main(["--runs-dir", str(runs), "--alphas", "0.1,1.5", "--results", str(tmp_path / "c.json")])
