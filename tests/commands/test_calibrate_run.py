"""`adacal.commands.calibrate.run_calibrate` called from Python: the same checks as the CLI, the report returned and
written."""

import json

import numpy as np
import pytest

from adacal.commands.calibrate import CalibrationRun, run_calibrate
from adacal.calibrators import load_calibrator
from adacal.errors import InputError


@pytest.fixture(scope="module")
def preds(tmp_path_factory):
    rng = np.random.default_rng(3)
    arrays = {}
    for split in ("val", "test"):
        labels = rng.integers(0, 3, size=300)
        logits = rng.normal(0.0, 1.0, size=(300, 3))
        logits[np.arange(300), labels] += 2.0
        arrays[f"{split}_logits"] = (3.0 * logits).astype(np.float32)  # overconfident: T > 1 is best
        arrays[f"{split}_labels"] = labels
    path = tmp_path_factory.mktemp("calibrate") / "preds.npz"
    np.savez(path, **arrays)
    return path, arrays


def _nll(logits, labels, temperature):
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def test_temperature_minimises_validation_nll_and_the_report_is_written(preds, tmp_path):
    path, arrays = preds
    out = tmp_path / "report.json"
    run = run_calibrate(path, method="temperature", json_path=out)
    assert isinstance(run, CalibrationRun)
    assert run.written == out and run.saved is None and run.best == "temperature"
    assert (run.n_val, run.n_test) == (300, 300)
    assert json.loads(out.read_text())["results"]["best"] == "temperature"
    fitted = run.results["calibrators"]["temperature"]["params"]["temperature"]
    grid = np.linspace(0.5, 10.0, 1901)  # an independent search of the same objective
    nll = [_nll(arrays["val_logits"].astype(np.float64), arrays["val_labels"], t) for t in grid]
    assert fitted == pytest.approx(grid[int(np.argmin(nll))], abs=0.01)
    assert run.report["config"]["method"] == "temperature"


def test_all_chooses_one_and_saves_it(preds, tmp_path):
    path, arrays = preds
    save = tmp_path / "chosen.json"
    run = run_calibrate(path, method="all", folds=2, save=save, seed=1)
    assert run.written is None  # a predictions file: the report is only returned
    assert run.saved == save and len(run.methods) > 1
    assert run.best == run.results["best"] and run.best in run.methods
    probs = load_calibrator(save).transform(arrays["test_logits"])
    assert probs.shape == (300, 3) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bins": 0}, "Expected --n-bins to be a positive integer, got 0."),
        ({"method": "temprature"}, "Did you mean 'temperature'"),
        ({"folds": 3}, "Expected --folds only with --method all"),
        ({"method": "spline", "objective": "nll"}, "--objective only with --method temperature or all"),
    ],
)
def test_bad_options_raise_before_anything_is_written(preds, tmp_path, kwargs, message):
    path, _ = preds
    out = tmp_path / "report.json"
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_calibrate(path, json_path=out, **kwargs)
    assert not out.exists()


def test_the_report_may_not_replace_its_input(preds):
    path, _ = preds
    before = path.read_bytes()
    with pytest.raises(InputError, match="--json"):
        run_calibrate(path, json_path=path)
    assert path.read_bytes() == before


def test_a_calibrator_that_did_not_converge_says_what_to_try():
    """A fit stopped at its iteration limit gets a note naming what to try, and the call it names is a valid one."""
    from adacal.calibrators import build_calibrator, compare_calibrators
    from adacal.commands.calibrate import convergence_notes

    rng = np.random.default_rng(0)
    logits = rng.normal(scale=3.0, size=(300, 5))
    labels = rng.integers(0, 5, 300)
    comparison = compare_calibrators(logits[:200], labels[:200], logits[200:], labels[200:],
                                     methods=["temperature", "dirichlet"])
    results = comparison.results
    assert convergence_notes(results) == [] or "dirichlet did not converge" in convergence_notes(results)[0]
    results["calibrators"]["dirichlet"]["params"].update(converged=False, n_iter=500)  # as a fit that stopped
    notes = convergence_notes(results)
    assert len(notes) == 1 and notes[0].startswith("dirichlet did not converge after 500 iterations")
    assert "temperature, vector scaling" in notes[0] and "build_calibrator('dirichlet', max_iter=2000)" in notes[0]
    unconverged = build_calibrator("dirichlet", max_iter=1).fit(logits[:200], labels[:200])
    assert unconverged.summary()["converged"] is False  # what the note is about, from a real fit
    assert build_calibrator("dirichlet", max_iter=2000).max_iter == 2000


def test_a_small_validation_split_gets_the_ece_noise_note_and_the_choice_its_reason(tmp_path):
    """Under 300 validation samples, the run's notes say how large ECE-EM is by chance there (the figure the report
    holds); `--method all` records what it selected and why, and the saved choice is never worse than uncalibrated
    in CV NLL."""
    rng = np.random.default_rng(8)
    z = rng.normal(0.0, 2.5, size=400)
    labels = (rng.random(400) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
    path = tmp_path / "b.npz"
    np.savez(path, val_logits=z[:150], val_labels=labels[:150], test_logits=z[150:], test_labels=labels[150:])
    run = run_calibrate(path, method="all", folds=3, save=tmp_path / "c.json")
    selection = run.results["selection"]
    noise = selection["ece_noise"]
    assert noise["n"] == 150 and noise["fold_size"] == 50 and noise["expected_fold_ece_em"] > noise["expected_ece_em"]
    notes = [note for note in run.notes if "ECE-EM is noisy" in note]
    assert len(notes) == 1 and f"~{100 * noise['expected_ece_em']:.1f}% on 150 samples" in notes[0]
    assert "the choice is by CV NLL, a proper scoring rule" in notes[0]
    assert selection["cv_nll"][run.best] <= selection["cv_nll"]["uncalibrated"]
    assert selection["reason"] and load_calibrator(tmp_path / "c.json").name == run.best
    single = run_calibrate(path, method="temperature")
    assert single.results["selection"]["ece_noise"]["fold_size"] is None  # no folds with one method
