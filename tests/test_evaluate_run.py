"""`adacal.evaluation.run_evaluate` called from Python: the checks of `adacal evaluate`, the report returned and
written, a calibrator applied."""

import json

import numpy as np
import pytest

from adacal.calibrators import build_calibrator, save_calibrator
from adacal.errors import InputError
from adacal.evaluation import EvaluationRun, run_evaluate


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 3, size=200)
    logits = rng.normal(0.0, 1.0, size=(200, 3))
    logits[np.arange(200), labels] += 1.5
    logits *= 3.0
    folder = tmp_path_factory.mktemp("evaluate")
    np.savez(folder / "preds.npz", logits=logits, labels=labels)
    return folder / "preds.npz", logits, labels


def _nll_error(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean(), (logits.argmax(axis=1) != labels).mean()


def test_metrics_match_a_hand_computation_and_the_report_is_written(data, tmp_path):
    path, logits, labels = data
    out = tmp_path / "report.json"
    run = run_evaluate(path, metrics="nll,error", json_path=out)
    assert isinstance(run, EvaluationRun) and run.written == [out] and run.kept is None and not run.calibrated
    nll, error = _nll_error(logits, labels)
    assert run.report["results"]["metrics"]["nll"] == pytest.approx(nll, rel=1e-6)
    assert run.report["results"]["metrics"]["error"] == pytest.approx(error)
    assert json.loads(out.read_text())["results"]["metrics"] == pytest.approx(run.report["results"]["metrics"])


def test_a_calibrator_is_applied_before_measuring(data, tmp_path):
    path, logits, labels = data
    fitted = build_calibrator("temperature").fit(logits, labels)
    save_calibrator(fitted, tmp_path / "t.json")
    run = run_evaluate(path, metrics="nll", calibrator=tmp_path / "t.json")
    temperature = fitted.to_dict()["params"]["temperature"]
    assert run.calibrated and run.written == []
    assert run.report["results"]["metrics"]["nll"] == pytest.approx(_nll_error(logits / temperature, labels)[0], rel=1e-5)
    assert run.report["results"]["metrics"]["nll"] < _nll_error(logits, labels)[0]  # overconfident logits: T helps


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bins": 0}, r"Expected --n-bins to be a positive integer, got 0\."),
        ({"bootstrap": -1}, r"Expected --bootstrap to be a non-negative integer"),
        ({"seed": -2}, r"Expected --seed to be a non-negative integer, got -2\."),
        ({"metrics": "ece-emm"}, r"ece-em"),
        ({"calibrator": "missing.json"}, r"does not exist"),
    ],
)
def test_bad_options_raise_before_anything_is_written(data, tmp_path, kwargs, message):
    path, _, _ = data
    out = tmp_path / "report.json"
    with pytest.raises(InputError, match=message):
        run_evaluate(path, json_path=out, **kwargs)
    assert not out.exists()


def test_the_report_may_not_replace_its_input(data):
    path, _, _ = data
    before = path.read_bytes()
    with pytest.raises(InputError, match="--json"):
        run_evaluate(path, json_path=path)
    assert path.read_bytes() == before
