"""`adacal conformal` through CliRunner: its JSON equals `ConformalPredictor` + `coverage_report` in Python, several α
in one call, the tables fit 80 columns, --save / --predictor round trip, and every refusal is one line that writes
nothing."""

import json

import numpy as np
import pytest

from adacal.cli import app
from adacal.conformal import ConformalPredictor, coverage_report, load_predictors
from adacal.predictions import Predictions, save_split_predictions

from cli_helpers import one_line_error, runner, snapshot


def _logits(n, k, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.2
    return (scale * logits).astype(np.float32), labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-conformal")
    val, test = _logits(250, 12, 11), _logits(300, 12, 12)
    save_split_predictions(root / "split.npz", val=Predictions(*val), test=Predictions(*test))
    np.savez(root / "test.npz", logits=test[0], labels=test[1])
    np.savez(root / "k5.npz", logits=_logits(40, 5, 3)[0], labels=_logits(40, 5, 3)[1])
    absent = val[1].copy()
    absent[absent == 7] = 0
    np.savez(root / "absent.npz", val_logits=val[0], val_labels=absent, test_logits=test[0], test_labels=test[1])
    rng = np.random.default_rng(0)
    np.savez(root / "top.npz", confidences=rng.random(60), correct=rng.random(60) < 0.6)
    np.savez(root / "top-split.npz", val_confidences=rng.random(60), val_correct=rng.random(60) < 0.6,
             test_confidences=rng.random(60), test_correct=rng.random(60) < 0.6)
    return {"root": root, "val": val, "test": test}


def _invoke(*args, width=160):
    return runner.invoke(app, ["conformal", *map(str, args)], env={"COLUMNS": str(width)})


def test_json_equals_python_for_several_alphas(files, tmp_path):
    result = _invoke(files["root"] / "split.npz", "--alpha", "0.05,0.1,0.2", "--score", "aps", "--seed", "4",
                     "--json", tmp_path / "c.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["kind"] == "conformal" and {"schema_version", "adacal_version", "created"} <= set(report)
    assert report["config"]["alphas"] == [0.05, 0.1, 0.2] and report["config"]["seed"] == 4
    for level, alpha in zip(report["results"]["levels"], (0.05, 0.1, 0.2)):
        predictor = ConformalPredictor("aps", alpha=alpha, seed=4).fit(*files["val"])
        expected = coverage_report(predictor.predict_sets(files["test"][0]), files["test"][1])
        assert level["alpha"] == alpha and level["quantile"] == predictor.quantile_
        assert {key: level[key] for key in expected} == json.loads(json.dumps(expected))
    assert f"Wrote {tmp_path / 'c.json'}" in result.stdout


def test_json_to_stdout_is_the_whole_stdout(files):
    result = _invoke(files["root"] / "split.npz", "--json", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]["levels"][0]["alpha"] == 0.1


@pytest.mark.parametrize("width", [80, 100, 160])
@pytest.mark.parametrize("options", [["--alpha", "0.02,0.05,0.1,0.2,0.5", "--score", "raps"],
                                     ["--alpha", "0.1", "--score", "thr", "--class-conditional"]])
def test_tables_fit_the_terminal(files, width, options):
    result = _invoke(files["root"] / "split.npz", *options, width=width)
    assert result.exit_code == 0, result.output
    too_wide = [line for line in result.stdout.splitlines() if len(line) > width]
    assert not too_wide and "…" not in result.stdout, result.stdout
    # Every α has its row in both tables, with its coverage as the JSON gives it.
    assert result.stdout.count("covered") >= 1 + len(options[1].split(","))


def test_table_numbers_are_the_reports(files):
    result = _invoke(files["root"] / "split.npz", "--alpha", "0.1", "--score", "thr", width=80)
    predictor = ConformalPredictor("thr", alpha=0.1).fit(*files["val"])
    expected = coverage_report(predictor.predict_sets(files["test"][0]), files["test"][1])
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("0.1 "))
    low, high = expected["coverage_interval"]
    assert f"{100 * expected['coverage']:.1f}" in row and f"{100 * low:.1f}-{100 * high:.1f}" in row
    assert f"{expected['mean_set_size']:.2f}" in row


def test_quiet_prints_one_line_per_alpha(files):
    result = _invoke(files["root"] / "split.npz", "--alpha", "0.1,0.2", "-q")
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["alpha 0.1", "alpha 0.2"]


def test_save_then_predictor_gives_the_same_report(files, tmp_path):
    root = files["root"]
    saved = _invoke(root / "split.npz", "--alpha", "0.1,0.2", "--score", "raps", "--save", tmp_path / "sets.json",
                    "--json", tmp_path / "fit.json")
    assert saved.exit_code == 0, saved.output
    applied = _invoke(root / "test.npz", "--predictor", tmp_path / "sets.json", "--json", tmp_path / "apply.json")
    assert applied.exit_code == 0, applied.output
    fit = json.loads((tmp_path / "fit.json").read_text())["results"]["levels"]
    again = json.loads((tmp_path / "apply.json").read_text())["results"]["levels"]
    assert fit == again
    sets = [p.predict_sets(files["test"][0]) for p in load_predictors(tmp_path / "sets.json")]
    assert [s.sum(axis=1).mean() for s in sets] == [level["mean_set_size"] for level in fit]


def test_refusals_are_one_line_and_write_nothing(files, tmp_path):
    root = files["root"]
    assert _invoke(root / "split.npz", "--save", tmp_path / "sets.json").exit_code == 0
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(root, out)
    cases = [
        (["split.npz", "--alpha", "1.2"], "--alpha to be numbers in (0, 1)"),
        (["split.npz", "--alpha", "0"], "--alpha to be numbers in (0, 1)"),
        (["split.npz", "--alpha", "0.1,0.002"], "at least 1/alpha - 1 = 499 samples"),
        (["absent.npz", "--class-conditional"], "class 7 is absent"),
        (["k5.npz", "--predictor", tmp_path / "sets.json"], "Expected scores with 12 classes"),
        (["top.npz", "--predictor", tmp_path / "sets.json"], "top-label confidences"),
        (["top-split.npz"], "top-label confidences"),
        (["test.npz", "--val", root / "top.npz"], "top-label confidences"),
        (["split.npz", "--score", "apss"], "Unknown conformal score"),
        (["test.npz", "--predictor", tmp_path / "sets.json", "--alpha", "0.1"], "no --alpha with --predictor"),
        (["split.npz", "--predictor", root / "split.npz"], "adacal conformal --save"),
        (["split.npz", "--calibrator", root / "missing.json"], "--calibrator"),
        (["split.npz", "--save", out / "report.json"], "--json and --save to be different files"),
    ]
    for args, fragment in cases:
        saving = [] if {"--predictor", "--save"} & set(map(str, args)) else ["--save", out / "saved.json"]
        one_line_error(_invoke(root / args[0], *args[1:], "--json", out / "report.json", *saving), fragment)
    assert snapshot(root, out) == before


def test_save_is_refused_with_predictor(files, tmp_path):
    root = files["root"]
    assert _invoke(root / "split.npz", "--save", tmp_path / "sets.json").exit_code == 0
    one_line_error(_invoke(root / "test.npz", "--predictor", tmp_path / "sets.json", "--save", tmp_path / "b.json"),
                   "no --save with --predictor")
