"""`run_conformal` (what `adacal conformal` runs) against `ConformalPredictor` + `coverage_report` in Python on the
same arrays: every α of one call, every score, class-conditional, a calibrator applied first, the inputs calibrate
reads (a file of val_/test_ arrays, test + --val, a run folder), and the --save / --predictor round trip."""

import json

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.calibrators import TemperatureScaling, save_calibrator
from adacal.commands.conformal import parse_alphas, run_conformal
from adacal.conformal import ConformalPredictor, coverage_report, load_predictors
from adacal.errors import InputError
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import make_report, write_json

ALPHAS = (0.05, 0.1, 0.2)


def _logits(n, k, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.2
    return (scale * logits).astype(np.float32), labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("conformal")
    val, test = _logits(300, 6, 1), _logits(400, 6, 2)
    save_split_predictions(root / "split.npz", val=Predictions(*val), test=Predictions(*test))
    np.savez(root / "val.npz", logits=val[0], labels=val[1])
    np.savez(root / "test.npz", logits=test[0], labels=test[1])
    # A temperature far from 1 (the logits are scaled up 3x after fitting would be T = 1): it changes the sets.
    calibrator = TemperatureScaling().fit(val[0] * 3.0, val[1])
    save_calibrator(calibrator, root / "temperature.json")
    np.savez(root / "hot.npz", val_logits=val[0] * 3.0, val_labels=val[1], test_logits=test[0] * 3.0,
             test_labels=test[1])
    run = root / "run"
    run.mkdir()
    write_json(run / "config.json", make_report("train-config", config={"loss": "ce", "model": "mlp",
                                                                       "dataset": "digits", "seed": 0, "epochs": 1},
                                                results={}))
    (run / "history.jsonl").write_text(json.dumps({"epoch": 1, "val": {"error": 0.3}}) + "\n")
    save_split_predictions(run / "predictions.npz", val=Predictions(*val), test=Predictions(*test))
    return {"root": root, "val": val, "test": test, "calibrator": calibrator}


def _python_levels(val_scores, val_labels, test_scores, test_labels, score, alphas, **options):
    levels = []
    for alpha in alphas:
        predictor = ConformalPredictor(score, alpha=alpha, **options).fit(val_scores, val_labels)
        levels.append((predictor, coverage_report(predictor.predict_sets(test_scores), test_labels)))
    return levels


def _same(level, predictor, report):
    assert level["alpha"] == predictor.alpha and level["quantile"] == predictor.quantile_
    assert {key: level[key] for key in report} == report


@pytest.mark.parametrize(("score", "options"), [("thr", {}), ("aps", {}), ("aps", {"randomized": False}),
                                                ("raps", {"k_reg": 2, "lam": 0.1}), ("topk", {}), ("lac", {})])
def test_every_alpha_equals_python(files, score, options):
    run = run_conformal(files["root"] / "split.npz", alpha="0.05,0.1,0.2", score=score, seed=0,
                        k_reg=options.get("k_reg"), lam=options.get("lam"), randomized=options.get("randomized"))
    expected = _python_levels(*files["val"], *files["test"], score, ALPHAS, **options)
    assert [level["alpha"] for level in run.results["levels"]] == list(ALPHAS)
    for level, (predictor, report) in zip(run.results["levels"], expected):
        _same(level, predictor, report)
        assert level["target_coverage"] == pytest.approx(1 - predictor.alpha)
    assert run.report["kind"] == "conformal" and run.n_val == 300 and run.n_test == 400


def test_raps_selects_on_validation_by_default(files):
    run = run_conformal(files["root"] / "split.npz", alpha="0.1", score="raps", seed=3)
    python = ConformalPredictor("raps", alpha=0.1, seed=3, k_reg="auto", lam="auto").fit(*files["val"])
    level = run.results["levels"][0]
    assert level["tuning"] == python.tuning_ and level["n_calibration"] == 300 - 90
    _same(level, python, coverage_report(python.predict_sets(files["test"][0]), files["test"][1]))


def test_class_conditional_equals_python(files):
    run = run_conformal(files["root"] / "split.npz", alpha="0.1,0.2", score="thr", class_conditional=True)
    for level, (predictor, report) in zip(run.results["levels"], _python_levels(
            *files["val"], *files["test"], "thr", (0.1, 0.2), class_conditional=True)):
        assert len(level["quantile"]) == 6
        _same(level, predictor, report)


@pytest.mark.parametrize("layout", ["val", "run"])
def test_every_input_calibrate_reads_gives_the_same_numbers(files, layout):
    base = run_conformal(files["root"] / "split.npz", alpha="0.1", score="aps")
    if layout == "val":
        other = run_conformal(files["root"] / "test.npz", val=files["root"] / "val.npz", alpha="0.1", score="aps")
    else:
        other = run_conformal(files["root"] / "run", alpha="0.1", score="aps")
    assert other.results["levels"] == base.results["levels"]


def test_calibrator_first_changes_the_sets_as_in_python(files):
    root, calibrator = files["root"], files["calibrator"]
    run = run_conformal(root / "hot.npz", alpha="0.1,0.2", score="aps", calibrator=root / "temperature.json")
    val_probs = calibrator.transform(files["val"][0] * 3.0)
    test_probs = calibrator.transform(files["test"][0] * 3.0)
    expected = _python_levels(val_probs, files["val"][1], test_probs, files["test"][1], "aps", (0.1, 0.2))
    plain = run_conformal(root / "hot.npz", alpha="0.1,0.2", score="aps")
    for level, before, (predictor, report) in zip(run.results["levels"], plain.results["levels"], expected):
        _same(level, predictor, report)
        assert level["size_distribution"] != before["size_distribution"]  # the calibrator did change the sets
    assert run.results["calibrated"] and run.report["config"]["calibrator"].endswith("temperature.json")


def test_save_round_trip_gives_identical_sets(files, tmp_path):
    root = files["root"]
    run = run_conformal(root / "split.npz", alpha="0.05,0.2", score="raps", save=tmp_path / "sets.json")
    loaded = load_predictors(tmp_path / "sets.json")
    test_logits = files["test"][0]
    assert [p.alpha for p in loaded] == [0.05, 0.2]
    for fitted, again in zip(run.predictors, loaded):
        assert np.array_equal(fitted.predict_sets(test_logits), again.predict_sets(test_logits))
    applied = run_conformal(root / "test.npz", predictor=tmp_path / "sets.json")
    assert applied.results["levels"] == run.results["levels"] and applied.n_val is None
    # New scores (a batch never seen) get the same sets from the loaded predictors as from the fitted ones.
    fresh = _logits(50, 6, 9)[0]
    assert all(np.array_equal(a.predict_sets(fresh), b.predict_sets(fresh)) for a, b in zip(run.predictors, loaded))


def test_probabilities_and_logits_alike(files, tmp_path):
    val, test = files["val"], files["test"]
    np.savez(tmp_path / "probs.npz", val_probs=softmax(val[0]), val_labels=val[1], test_probs=softmax(test[0]),
             test_labels=test[1])
    by_probs = run_conformal(tmp_path / "probs.npz", alpha="0.1", score="thr").results["levels"][0]
    by_logits = run_conformal(files["root"] / "split.npz", alpha="0.1", score="thr").results["levels"][0]
    assert by_probs["size_distribution"] == by_logits["size_distribution"]
    assert by_probs["coverage"] == by_logits["coverage"]


@pytest.mark.parametrize(("text", "expected"), [("0.1", [0.1]), (" 0.2,0.05 ", [0.2, 0.05]), ("1e-1", [0.1]),
                                              (0.1, [0.1]), ([0.05, 0.2], [0.05, 0.2]), (1e-5, [1e-5])])
def test_parse_alphas(text, expected):
    assert parse_alphas(text) == expected


@pytest.mark.parametrize("text", ["0", "1", "1.5", "-0.1", "a", "0.1,", "0.1,0.1", "nan", "", [0.1, 1.0], True])
def test_parse_alphas_refuses(text):
    with pytest.raises(InputError, match="--alpha"):
        parse_alphas(text)


def test_refusals(files, tmp_path):
    root = files["root"]
    cases = [
        ({"alpha": "0.1,0.002"}, "at least 1/alpha - 1 = 499 samples for alpha=0.002, got n=300"),
        ({"alpha": "0.1", "score": "nope"}, "Unknown conformal score"),
        ({"alpha": "0.1", "score": "thr", "k_reg": 2}, "--k-reg and --lam only with --score raps"),
        ({"alpha": "0.1", "score": "thr", "randomized": False}, "--randomized/--no-randomized only"),
        ({"alpha": "0.1", "score": "raps", "lam": -1.0}, "--lam"),
        ({"seed": -1}, "--seed"),
    ]
    for kwargs, fragment in cases:
        with pytest.raises(InputError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            run_conformal(root / "split.npz", **kwargs)
    run_conformal(root / "split.npz", alpha="0.1", save=tmp_path / "sets.json")
    with pytest.raises(InputError, match="no --alpha with --predictor"):
        run_conformal(root / "test.npz", predictor=tmp_path / "sets.json", alpha="0.1")
    with pytest.raises(InputError, match="no --class-conditional with --predictor"):
        run_conformal(root / "test.npz", predictor=tmp_path / "sets.json", class_conditional=True)
