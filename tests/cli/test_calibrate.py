"""`adacal calibrate` through CliRunner on tiny predictions: reports, tables, saved calibrators, one-line errors."""

import json
from pathlib import Path

import numpy as np
import pytest

from adacal.calibrators import CALIBRATORS, load_calibrator
from adacal.cli import app
from adacal.predictions import Predictions
from adacal.reports import make_report

from cli_helpers import one_line_error, runner



def _split(rng, n, k=4):
    logits = rng.normal(0.0, 4.0, size=(n, k))
    probs = np.exp(logits / 2.0)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (probs.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1).clip(max=k - 1)
    return logits.astype(np.float32), labels.astype(np.int64)


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    (val_logits, val_labels), (test_logits, test_labels) = _split(rng, 400), _split(rng, 400)
    return {"val_logits": val_logits, "val_labels": val_labels, "test_logits": test_logits, "test_labels": test_labels}


@pytest.fixture
def preds(tmp_path, arrays):
    path = tmp_path / "preds.npz"
    np.savez(path, **arrays)
    return path


def _checkpoint(path, *, epoch, select="last", epochs=2):
    """A small adacal checkpoint (never run here: only its epoch and config are read)."""
    from adacal.training.checkpoints import make_checkpoint, save_checkpoint

    checkpoint = make_checkpoint(model_name="mlp", model_options={}, dataset="digits", num_classes=4, input_shape=(5,),
                                 config={"select": select, "epochs": epochs}, epoch=epoch, model_state={})
    return save_checkpoint(checkpoint, path)


@pytest.fixture
def run_folder(tmp_path, arrays):
    """A finished 2-epoch run (--select last): predictions.npz holds the outputs of last.pt (epoch 2)."""
    run = tmp_path / "runs" / "20240101-000000-toy-mlp-ce"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text('{"kind": "train-config"}\n')
    _checkpoint(run / "checkpoints" / "last.pt", epoch=2)
    np.savez(run / "predictions.npz", **arrays)
    return run


def _snapshot(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _invoke(*args):
    return runner.invoke(app, ["calibrate", *map(str, args)])


def test_temperature_on_a_predictions_file_with_json(preds, tmp_path, arrays):
    out = tmp_path / "out" / "calibrate.json"
    result = _invoke(preds, "--json", out)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["kind"] == "calibrate" and report["schema_version"] == 1
    assert report["config"] == {"method": "temperature", "objective": "nll", "n_bins": 15, "input": str(preds)}
    assert report["input"]["path"] == str(preds)
    entry = report["results"]["calibrators"]["temperature"]
    assert report["results"]["best"] == "temperature"
    from adacal.calibrators.compare import SIMPLICITY_ORDER

    assert report["results"]["selection"] == {
        "method": "temperature", "metric": "nll", "folds": 0, "split": "validation", "seed": 0,
        "stratified": True, "cv_scores": {}, "cv_fold_scores": {}, "cv_nll": {}, "cv_ece_em": {}, "baseline": None,
        "skipped": {}, "reason": "the only method", "tie_order": list(SIMPLICITY_ORDER), "ece_noise": None,
        "errors": {},
    }
    # The default objective is NLL (Guo et al. 2017): the fitted T is the library's NLL fit, not a grid point.
    from adacal.calibrators import TemperatureScaling

    expected = TemperatureScaling(objective="nll").fit(arrays["val_logits"], arrays["val_labels"]).temperature_
    assert entry["params"]["temperature"] == pytest.approx(expected, rel=1e-12)
    assert entry["params"]["at_bound"] is False
    assert entry["calibrator"]["method"] == "temperature"
    for part in ("val", "test_pre", "test_post"):
        assert {"ece_em", "ece_ew", "ece_debias", "nll", "brier", "error"} <= set(entry[part])
    assert entry["test_post"]["ece_em"] < entry["test_pre"]["ece_em"]
    assert entry["test_post"]["error"] == entry["test_pre"]["error"]
    assert "temperature" in result.stdout and "uncalibrated" in result.stdout


def test_predictions_file_without_json_writes_nothing(preds, tmp_path):
    before = _snapshot(tmp_path)
    result = _invoke(preds, "--objective", "nll")
    assert result.exit_code == 0, result.output
    assert "use --json" in result.stdout
    assert _snapshot(tmp_path) == before


def test_run_folder_gets_calibrate_json_and_nothing_else_changes(run_folder):
    before = _snapshot(run_folder)
    result = _invoke(run_folder, "--quiet")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1 and "ECE-EM" in result.stdout  # -q: one summary line
    after = _snapshot(run_folder)
    assert set(after) - set(before) == {Path("calibrate.json")}
    assert all(after[name] == content for name, content in before.items())
    report = json.loads((run_folder / "calibrate.json").read_text())
    assert "temperature" in report["results"]["calibrators"]


def test_checkpoint_in_a_run_uses_the_run_predictions(run_folder):
    result = _invoke(run_folder / "checkpoints" / "last.pt", "--method", "histogram", "--n-bins", "5")
    assert result.exit_code == 0, result.output
    report = json.loads((run_folder / "calibrate.json").read_text())
    assert report["config"]["objective"] is None
    assert report["results"]["calibrators"]["histogram"]["calibrator"]["options"] == {"n_bins": 5}


def test_run_without_predictions_recomputes_from_the_checkpoint(run_folder, arrays, monkeypatch):
    """Without predictions.npz the checkpoint is run (adacal.training.inference.predict_checkpoint_splits, faked: no
    torch here)."""
    (run_folder / "predictions.npz").unlink()
    calls = []

    def fake_predict_checkpoint_splits(path, splits, *, data_dir=None, device="auto", contents=None):
        calls.extend((path.name, split) for split in splits)
        return {split: Predictions(arrays[f"{split}_logits"].astype(np.float64), arrays[f"{split}_labels"])
                for split in splits}

    monkeypatch.setattr("adacal.training.inference.predict_checkpoint_splits", fake_predict_checkpoint_splits)
    result = _invoke(run_folder, "--quiet")
    assert result.exit_code == 0, result.output
    assert calls == [("last.pt", "val"), ("last.pt", "test")]
    assert not (run_folder / "predictions.npz").exists()
    assert (run_folder / "calibrate.json").is_file()


def _fake_predict(monkeypatch, arrays, calls):
    def fake_predict_checkpoint_splits(path, splits, *, data_dir=None, device="auto", contents=None):
        calls.extend((Path(path).name, split) for split in splits)
        return {split: Predictions(arrays[f"{split}_logits"].astype(np.float64) * 3.0, arrays[f"{split}_labels"])
                for split in splits}

    monkeypatch.setattr("adacal.training.inference.predict_checkpoint_splits", fake_predict_checkpoint_splits)


def test_checkpoint_of_another_epoch_is_scored_itself(run_folder, arrays, monkeypatch):
    """best.pt from epoch 1 is not the model whose logits predictions.npz holds (last.pt, epoch 2)."""
    _checkpoint(run_folder / "checkpoints" / "best.pt", epoch=1)
    calls = []
    _fake_predict(monkeypatch, arrays, calls)
    result = _invoke(run_folder / "checkpoints" / "best.pt", "--quiet")
    assert result.exit_code == 0, result.output
    assert calls == [("best.pt", "val"), ("best.pt", "test")]
    report = json.loads((run_folder / "calibrate.json").read_text())
    assert report["input"]["path"] == str(run_folder / "checkpoints" / "best.pt")
    result = _invoke(run_folder / "checkpoints" / "last.pt", "--quiet")  # epoch 2: the saved predictions
    assert result.exit_code == 0, result.output
    assert len(calls) == 2
    assert json.loads((run_folder / "calibrate.json").read_text())["input"]["path"] == str(
        run_folder / "predictions.npz")


def test_best_val_run_without_predictions_uses_best_checkpoint(run_folder, arrays, monkeypatch):
    (run_folder / "predictions.npz").unlink()
    (run_folder / "config.json").write_text(json.dumps(make_report("train-config", config={"select": "best-val"},
                                                                   results={})))
    _checkpoint(run_folder / "checkpoints" / "best.pt", epoch=1, select="best-val")
    calls = []
    _fake_predict(monkeypatch, arrays, calls)
    result = _invoke(run_folder, "--quiet")
    assert result.exit_code == 0, result.output
    assert calls == [("best.pt", "val"), ("best.pt", "test")]


def test_method_all_selects_on_validation_by_cross_validation_and_saves_that(preds, tmp_path):
    out, saved = tmp_path / "all.json", tmp_path / "chosen.json"
    result = _invoke(preds, "--method", "all", "--json", out, "--save", saved)
    assert result.exit_code == 0, result.output
    assert "uncalibrated" in CALIBRATORS.names()  # the identity is a candidate
    for name in CALIBRATORS.names():
        assert name in result.stdout
    report = json.loads(out.read_text())
    results = report["results"]
    assert report["config"]["folds"] == 5 and report["config"]["select_metric"] == "nll"
    selection = results["selection"]
    assert {key: selection[key] for key in ("metric", "folds", "split", "baseline")} == {
        "metric": "nll", "folds": 5, "split": "validation", "baseline": "uncalibrated"}
    order = list(results["calibrators"])
    assert sorted(order) == CALIBRATORS.names()
    # The choice is the lowest mean cross-validated NLL, and the calibrators are listed in that order.
    cv = selection["cv_scores"]
    assert cv == selection["cv_nll"]
    assert list(cv) == order and [cv[name] for name in order] == sorted(cv.values())
    for name in order:
        folds = selection["cv_fold_scores"][name]
        assert len(folds) == 5 and cv[name] == pytest.approx(np.mean(folds), rel=1e-12)
        assert results["calibrators"][name]["cv"]["mean"] == cv[name]
    assert selection["method"] == results["best"] == order[0]
    assert cv[order[0]] <= cv["uncalibrated"]
    # Test metrics are shown beside it, with the paper-style test ranking (by ECE-EM) as a column only.
    ranks = {name: results["calibrators"][name]["test_rank"] for name in order}
    assert sorted(ranks.values()) == list(range(1, len(order) + 1))
    by_test = sorted(order, key=lambda name: (results["calibrators"][name]["test_post"]["ece_em"], name))
    assert [ranks[name] for name in by_test] == list(range(1, len(order) + 1))
    # The first table: every candidate, uncalibrated included, with its CV NLL and CV ECE-EM, the chosen one first.
    cv_table = result.stdout.split("Test metrics before")[0]
    rows = {line.split()[0]: line.split()[1:] for line in cv_table.splitlines() if line.split()[:1] in [[n] for n
                                                                                                        in order]}
    assert list(rows) == order
    for name in order:
        assert rows[name][0] == f"{selection['cv_nll'][name]:.3f}"
        assert rows[name][1] == f"{100 * selection['cv_ece_em'][name]:.2f}"
    assert rows[order[0]][2] == "selected"
    message = " ".join(result.stdout.split())
    assert (f"Selected {order[0]}: lowest 5-fold CV NLL ({cv[order[0]]:.3f} vs uncalibrated "
            f"{cv['uncalibrated']:.3f})." in message) or order[0] == "uncalibrated"
    assert f"Selected {order[0]}: {selection['reason']}." in message
    assert f"Best by test ECE-EM (shown, not used to choose): {by_test[0]}" in result.stdout
    calibrator = load_calibrator(saved)
    assert calibrator.name == results["best"]
    assert calibrator.to_dict() == results["calibrators"][results["best"]]["calibrator"]


def test_uncalibrated_round_trips_through_save_and_evaluate(tmp_path):
    """--method uncalibrated --save writes the identity, and evaluate --calibrator with it reports exactly what
    evaluate reports without it (for logits and for probabilities)."""
    rng = np.random.default_rng(11)
    logits = rng.normal(0.0, 2.0, size=(600, 3))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (probs.cumsum(axis=1) < rng.random((600, 1))).sum(axis=1).clip(max=2)
    path = _write(tmp_path / "p.npz", val_logits=logits[:300], val_labels=labels[:300], test_logits=logits[300:],
                  test_labels=labels[300:])
    _write(tmp_path / "test.npz", logits=logits[300:], labels=labels[300:])
    saved, out = tmp_path / "uncalibrated.json", tmp_path / "all.json"
    result = _invoke(path, "--method", "uncalibrated", "--save", saved, "--json", out)
    assert result.exit_code == 0, result.output
    results = json.loads(out.read_text())["results"]
    entry = results["calibrators"]["uncalibrated"]
    assert entry["test_post"] == entry["test_pre"] and entry["calibrator"]["params"] == {}
    assert load_calibrator(saved).name == "uncalibrated" and "none (the identity)" in result.stdout
    plain, calibrated = tmp_path / "plain.json", tmp_path / "calibrated.json"
    for args, where in (([], plain), (["--calibrator", saved], calibrated)):
        done = runner.invoke(app, ["evaluate", str(tmp_path / "test.npz"), *map(str, args), "--json", str(where)])
        assert done.exit_code == 0, done.output
    plain_metrics = json.loads(plain.read_text())["results"]["metrics"]
    calibrated_metrics = json.loads(calibrated.read_text())["results"]["metrics"]
    assert calibrated_metrics == pytest.approx(plain_metrics, rel=1e-12, abs=1e-15)
    assert calibrated_metrics["nll"] == pytest.approx(results["calibrators"]["uncalibrated"]["test_pre"]["nll"])


def test_the_choice_never_looks_at_the_test_split(tmp_path, arrays):
    """Any test split, even one built to favour another method, leaves the choice and the CV scores unchanged."""
    reports = []
    for index, test_labels in enumerate([arrays["test_labels"], (arrays["test_labels"] + 1) % 4,
                                         arrays["test_logits"].argmax(axis=1)]):
        path = _write(tmp_path / f"p{index}.npz", **{**arrays, "test_labels": test_labels})
        out = tmp_path / f"r{index}.json"
        result = _invoke(path, "--method", "all", "--folds", "3", "--select-metric", "nll", "--json", out, "-q")
        assert result.exit_code == 0, result.output
        reports.append(json.loads(out.read_text())["results"])
    assert len({r["best"] for r in reports}) == 1
    assert all(r["selection"]["cv_scores"] == reports[0]["selection"]["cv_scores"] for r in reports)
    assert reports[0]["selection"]["metric"] == "nll" and reports[0]["selection"]["folds"] == 3
    assert len({tuple(sorted((n, e["test_rank"]) for n, e in r["calibrators"].items())) for r in reports}) > 1


def test_temperature_at_the_edge_of_its_range_is_flagged(tmp_path):
    rng = np.random.default_rng(1)
    logits = rng.normal(0.0, 30.0, size=(300, 3))  # confident logits, labels unrelated: T wants to go to infinity
    labels = rng.integers(0, 3, size=300)
    path = _write(tmp_path / "noise.npz", val_logits=logits, val_labels=labels, test_logits=logits, test_labels=labels)
    for objective, bound in (("nll", "20"), ("ece-em", "10")):
        out = tmp_path / f"{objective}.json"
        result = _invoke(path, "--objective", objective, "--json", out)
        assert result.exit_code == 0, result.output
        params = json.loads(out.read_text())["results"]["calibrators"]["temperature"]["params"]
        assert params["at_bound"] is True
        assert f"Warning: temperature's temperature T={bound} is at the edge of its search range" in result.stdout


def test_progress_goes_to_the_callback_and_nothing_extra_when_piped(preds, tmp_path, monkeypatch):
    import adacal.cli.calibrate as calibrate_cli

    result = _invoke(preds, "--method", "all", "--folds", "2", "--json", tmp_path / "a.json")
    assert result.exit_code == 0, result.output
    assert "fold 1/2" not in result.output and "fit on all validation data" not in result.output
    seen = []
    monkeypatch.setattr(calibrate_cli, "_show_progress", lambda quiet, n: True)
    monkeypatch.setattr(calibrate_cli._RichSteps, "__call__",
                        lambda self, done, total, what: seen.append((done, total)))
    result = _invoke(preds, "--method", "all", "--folds", "2", "--json", tmp_path / "b.json")
    assert result.exit_code == 0, result.output
    total = len(CALIBRATORS.names()) * 3  # one step per fold fit and one per final fit
    assert seen == [(done, total) for done in range(1, total + 1)]


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no-val", "validation predictions"),
        ("n-mismatch", "to have 400 entries"),
        ("nan", "finite"),
        ("unknown-method", "Did you mean 'temperature'"),
        ("n-bins-0", "Expected --n-bins to be a positive integer, got 0."),
        ("unknown-objective", "Unknown objective 'ece'"),
        ("objective-with-spline", "--objective only with --method temperature or all"),
        ("missing", "does not exist"),
        ("not-a-run", "not_a_run"),
        ("json-input", "to hold arrays (e.g. \"logits\" and \"labels\"), but none of its keys"),
        ("save-to-folder", "Expected --save to be a file path"),
        ("folds-1", "Expected --folds to be an integer >= 2, got 1."),
        ("folds-with-one-method", "Expected --folds only with --method all"),
        ("unknown-select-metric", "Unknown metric 'ece-xm'"),
        ("more-folds-than-samples", "Expected at least 7 validation samples for 7-fold selection, got 5."),
    ],
)
def test_bad_input_is_one_line_error_and_writes_nothing(tmp_path, arrays, case, message):
    good = _write(tmp_path / "good.npz", **arrays)
    args = {
        "no-val": [_write(tmp_path / "t.npz", test_logits=arrays["test_logits"], test_labels=arrays["test_labels"])],
        "n-mismatch": [_write(tmp_path / "m.npz", **{**arrays, "val_labels": arrays["val_labels"][:-1]})],
        "nan": [_write(tmp_path / "n.npz", **{**arrays, "test_logits": np.full_like(arrays["test_logits"], np.nan)})],
        "unknown-method": [good, "--method", "temprature"],
        "n-bins-0": [good, "--n-bins", "0"],
        "unknown-objective": [good, "--objective", "ece"],
        "objective-with-spline": [good, "--method", "spline", "--objective", "nll"],
        "missing": [tmp_path / "nope.npz"],
        "not-a-run": [(tmp_path / "not_a_run").mkdir() or tmp_path / "not_a_run"],
        "json-input": [(tmp_path / "c.json").write_text("{}") and tmp_path / "c.json"],
        "save-to-folder": [good, "--save", tmp_path],
        "folds-1": [good, "--method", "all", "--folds", "1"],
        "folds-with-one-method": [good, "--folds", "3"],
        "unknown-select-metric": [good, "--method", "all", "--select-metric", "ece-xm"],
        "more-folds-than-samples": [_write(tmp_path / "s.npz", **{**arrays, "val_logits": arrays["val_logits"][:5],
                                                                  "val_labels": arrays["val_labels"][:5]}),
                                    "--method", "all", "--folds", "7"],
    }[case]
    before = _snapshot(tmp_path)
    result = _invoke(*args, "--json", tmp_path / "report.json")
    one_line_error(result, message)
    assert _snapshot(tmp_path) == before


def test_method_all_leaves_out_a_calibrator_that_cannot_be_fitted_at_all(tmp_path):
    """Five validation samples: the spline needs six, on any fold and on all of them. It used to end the command;
    now the others are compared and the spline is named, and left out of the table and the report."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(40, 3)) * 2
    labels = logits.argmax(axis=1)
    np.savez(tmp_path / "p.npz", val_logits=logits[:5], val_labels=labels[:5], test_logits=logits, test_labels=labels)
    result = _invoke(tmp_path / "p.npz", "--method", "all", "--json", tmp_path / "out.json")
    assert result.exit_code == 0, result.output
    warning = ("Not selectable: spline could not be fitted or applied (left out of the table) (Expected at least 6 "
               "validation samples for a 6-knot spline")
    assert warning in result.output
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    assert "spline" not in results["calibrators"] and "spline" in results["selection"]["errors"]
    assert results["best"] in results["calibrators"]
    # With the report on stdout, the warning still reaches the user, on stderr, and stdout stays pure JSON
    piped = _invoke(tmp_path / "p.npz", "--method", "all", "--json", "-")
    assert piped.exit_code == 0
    assert warning in piped.stderr and warning not in piped.stdout
    assert json.loads(piped.stdout)["results"]["best"] == results["best"]


def test_validation_labels_missing_classes_are_warned_about(tmp_path):
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(80, 4))
    labels = rng.integers(0, 4, 80)
    np.savez(tmp_path / "p.npz", val_logits=logits[:40], val_labels=np.where(labels[:40] == 3, 0, labels[:40]),
             test_logits=logits[40:], test_labels=labels[40:])
    result = _invoke(tmp_path / "p.npz", "--method", "temperature")
    assert result.exit_code == 0, result.output
    assert "the validation labels hold 3 of the 4 classes (none of class 3)" in result.stderr
    np.savez(tmp_path / "all.npz", val_logits=logits[:40], val_labels=np.arange(40) % 4, test_logits=logits[40:],
             test_labels=labels[40:])
    assert "validation labels hold" not in _invoke(tmp_path / "all.npz", "--method", "temperature").stderr


def test_select_by_ece_skips_what_is_worse_than_uncalibrated_and_says_so(tmp_path):
    """114 validation samples of a calibrated binary model (the issue's case): by CV ECE-EM isotonic regression looks
    best, but its CV NLL is worse than uncalibrated's: it is skipped, named in the table and in the message, never
    saved; the small split gets the ECE noise note, with a figure that is the report's."""
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 2.5, size=600)
    labels = (rng.random(600) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
    path = _write(tmp_path / "b.npz", val_logits=z[:114], val_labels=labels[:114], test_logits=z[114:],
                  test_labels=labels[114:])
    out, saved = tmp_path / "r.json", tmp_path / "c.json"
    result = _invoke(path, "--method", "all", "--select-metric", "ece-em", "--json", out, "--save", saved)
    assert result.exit_code == 0, result.output
    selection = json.loads(out.read_text())["results"]["selection"]
    assert "isotonic" in selection["skipped"] and selection["method"] not in selection["skipped"]
    assert selection["cv_nll"][selection["method"]] <= selection["cv_nll"]["uncalibrated"]
    assert load_calibrator(saved).name == selection["method"]
    rows = {line.split()[0]: line.split()[-1] for line in result.stdout.split("Test metrics")[0].splitlines()
            if line.split()[:1] in (["isotonic"], [selection["method"]])}
    assert rows == {"isotonic": "skipped", selection["method"]: "selected"}
    assert "skipped: CV NLL worse than uncalibrated's" in " ".join(result.stdout.split())
    message = " ".join(result.stdout.split())
    assert f"Selected {selection['method']}: {selection['reason']}." in message
    assert "passed over for a CV NLL worse than uncalibrated's: " in message
    noise = selection["ece_noise"]
    assert noise["n"] == 114 and noise["fold_size"] == 22
    note = " ".join(result.output.split())
    assert (f"the validation split has only 114 samples: its 15-bin ECE-EM is noisy there, a perfectly calibrated "
            f"model with these confidences would still show ~{100 * noise['expected_ece_em']:.1f}% on 114 samples"
            in note)
    assert "--select-metric nll (the default) chooses by a proper scoring rule instead" in note
