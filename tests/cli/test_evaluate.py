"""`adacal evaluate` through CliRunner, and its library side adacal.evaluation (input resolution, results, report)."""

import json
import re
import sys
import types

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.commands.inputs import resolve_evaluation_input
from adacal.evaluation import calibrated_probs, check_bootstrap, evaluate_predictions, evaluation_report
from adacal.metrics import METRIC_NAMES, compute_metrics, display_name, ece_ew, metric_key
from adacal.predictions import Predictions
from adacal.reports import make_report
from adacal.cli import app

from cli_helpers import one_line_error, runner

N, K = 120, 4


def sample(n=N, k=K, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k)).astype(np.float32)
    logits[np.arange(n), labels] += 1.5
    return logits, labels


@pytest.fixture()
def npz(tmp_path):
    logits, labels = sample()
    path = tmp_path / "preds.npz"
    np.savez(path, logits=logits, labels=labels)
    return path


def invoke(*args):
    return runner.invoke(app, ["evaluate", *map(str, args)])


def make_run(tmp_path, *, with_predictions=True, with_checkpoint=True):
    run = tmp_path / "runs" / "20240101-000000-cifar10-resnet20-adafocal"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    val_logits, val_labels = sample(50, K, 1)
    test_logits, test_labels = sample(80, K, 2)
    if with_predictions:
        np.savez(run / "predictions.npz", val_logits=val_logits, val_labels=val_labels,
                 test_logits=test_logits, test_labels=test_labels)
    if with_checkpoint:
        (run / "checkpoints").mkdir()
        torch.save({"format": "adacal-checkpoint", "format_version": 1, "epoch": 3,
                    "config": {"select": "last", "epochs": 3}}, run / "checkpoints" / "last.pt")
    return run, test_logits, test_labels


@pytest.fixture()
def fake_training(monkeypatch):
    """Stand-in for adacal.training.inference.predict_checkpoint_splits (runs a model in the real thing): records
    its calls, one per split."""
    calls = []
    logits, labels = sample(60, K, 3)

    def predict_checkpoint_splits(path, splits, *, data_dir=None, device="auto", contents=None):
        calls.extend({"path": str(path), "split": split, "device": device} for split in splits)
        return {split: Predictions(logits=logits.astype(np.float64), labels=labels) for split in splits}

    monkeypatch.setattr("adacal.training.inference.predict_checkpoint_splits", predict_checkpoint_splits)
    return calls, logits, labels


class HalfTemperature:
    name = "temperature"

    def transform(self, logits):
        return softmax(np.asarray(logits) / 2.0)


@pytest.fixture()
def fake_calibrators(monkeypatch):
    module = types.ModuleType("adacal.calibrators")
    module.load_calibrator = lambda path: HalfTemperature()
    monkeypatch.setitem(sys.modules, "adacal.calibrators", module)


# ---------------------------------------------------------------------------------------------------- success


def test_default_prints_table_and_writes_nothing(npz):
    result = invoke(npz)
    assert result.exit_code == 0, result.output
    assert "input assumed: logits" in result.stdout
    for name in METRIC_NAMES:
        assert display_name(name) in result.stdout
    assert sorted(p.name for p in npz.parent.iterdir()) == ["preds.npz"]


def test_table_shows_percentages(npz):
    logits, labels = sample()
    value = compute_metrics(logits, labels, names=["ece-em"])["ece_em"]
    result = invoke(npz, "--metrics", "ece-em")
    assert f"{100 * value:.2f}" in result.stdout


def test_json_report(npz, tmp_path):
    out = tmp_path / "out" / "evaluate.json"
    result = invoke(npz, "--json", out, "--n-bins", 10)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["kind"] == "evaluate" and report["schema_version"] == 1
    assert report["input"]["path"] == str(npz)
    assert report["config"]["n_bins"] == 10 and report["config"]["metrics"] == list(METRIC_NAMES)
    results = report["results"]
    assert results["assumed_input"] == "logits"
    assert results["n_samples"] == N and results["num_classes"] == K
    logits, labels = sample()
    expected = compute_metrics(logits, labels, n_bins=10)
    assert results["metrics"] == pytest.approx(expected, abs=1e-12)
    for binning in ("equal_width", "equal_mass"):
        assert sum(results["bins"][binning]["counts"]) == N
        assert len(results["bins"][binning]["counts"]) == 10
    assert "bootstrap" not in results


def test_probabilities_are_detected_and_reported(tmp_path):
    logits, labels = sample()
    path = tmp_path / "probs.npz"
    np.savez(path, logits=softmax(logits.astype(np.float64)), labels=labels)
    result = invoke(path, "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert "input assumed: probabilities" in result.stdout
    assert json.loads((tmp_path / "r.json").read_text())["results"]["assumed_input"] == "probs"


@pytest.mark.parametrize("low_precision", ["float16 npz", "bfloat16 pt"])
def test_low_precision_probabilities_are_taken_as_probabilities(tmp_path, low_precision):
    # their rows sum to 1 only within float16/bfloat16 rounding (beyond the float32 tolerance)
    logits, labels = sample(n=400, k=10)
    probs = softmax(logits.astype(np.float64))
    if low_precision == "float16 npz":
        path = tmp_path / "probs.npz"
        np.savez(path, logits=probs.astype(np.float16), labels=labels)
    else:
        path = tmp_path / "probs.pt"
        torch.save({"logits": torch.from_numpy(probs).bfloat16(), "labels": torch.from_numpy(labels)}, path)
    result = invoke(path, "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert "input assumed: probabilities" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())["results"]
    assert report["assumed_input"] == "probs"
    assert report["metrics"]["ece_em"] == pytest.approx(compute_metrics(probs, labels)["ece_em"], abs=1e-2)


def test_pt_predictions_and_split_keys(tmp_path):
    logits, labels = sample()
    path = tmp_path / "preds.pt"
    torch.save({"logits": torch.from_numpy(logits), "labels": torch.from_numpy(labels)}, path)
    assert invoke(path, "--quiet").exit_code == 0
    split = tmp_path / "split.npz"
    np.savez(split, val_logits=logits[:20], val_labels=labels[:20], test_logits=logits[20:], test_labels=labels[20:])
    result = invoke(split, "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r.json").read_text())["results"]["n_samples"] == N - 20


def test_metric_selection_and_bootstrap(npz, tmp_path):
    out = tmp_path / "r.json"
    args = [npz, "--metrics", "nll,ece_em", "--bootstrap", 40, "--seed", 1, "--json", out]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "95% CI" in result.stdout
    results = json.loads(out.read_text())["results"]
    assert list(results["metrics"]) == ["nll", "ece_em"]
    assert set(results["bootstrap"]) == {"nll", "ece_em"}
    interval = results["bootstrap"]["ece_em"]
    assert interval["low"] <= interval["high"] and interval["std"] > 0
    assert invoke(*args).exit_code == 0
    assert json.loads(out.read_text())["results"]["bootstrap"] == results["bootstrap"]


def test_quiet_prints_one_summary_line(npz):
    result = invoke(npz, "--quiet")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1 and "ECE-EM" in result.stdout


def test_quiet_summary_shows_the_metrics_asked_for(npz):
    result = invoke(npz, "--quiet", "--metrics", "ece_debias,NLL,ece-sweep-em")
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert [part.split()[0] for part in line.split("  ")] == ["ECE-DEBIAS", "NLL", "ECE-SWEEP-EM"]


def test_run_folder_uses_predictions_and_writes_evaluate_json(tmp_path, fake_training):
    calls, _, _ = fake_training
    run, test_logits, test_labels = make_run(tmp_path)
    before = (run / "predictions.npz").read_bytes()
    result = invoke(run)
    assert result.exit_code == 0, result.output
    assert "Wrote" in result.stdout
    report = json.loads((run / "evaluate.json").read_text())
    assert report["results"]["n_samples"] == 80
    assert report["results"]["metrics"] == pytest.approx(compute_metrics(test_logits, test_labels), abs=1e-12)
    assert report["input"]["path"] == str(run / "predictions.npz")
    assert report["config"]["source"]["kind"] == "run"
    assert (run / "predictions.npz").read_bytes() == before
    assert calls == []


def test_run_folder_keeps_the_evaluate_json_train_wrote(tmp_path, fake_training):
    run, _, _ = make_run(tmp_path)
    (run / "evaluate.json").write_text('{"written": "by train"}')
    out = tmp_path / "again.json"
    result = invoke(run, "--n-bins", "10", "--json", out)
    assert result.exit_code == 0, result.output
    assert (run / "evaluate.json").read_text() == '{"written": "by train"}'
    assert json.loads(out.read_text())["config"]["n_bins"] == 10
    result = invoke(run)
    assert result.exit_code == 0 and "Kept" in result.stdout
    assert (run / "evaluate.json").read_text() == '{"written": "by train"}'


def test_checkpoint_in_run_folder_uses_its_predictions(tmp_path, fake_training):
    calls, _, _ = fake_training
    run, _, _ = make_run(tmp_path)
    result = invoke(run / "checkpoints" / "last.pt", "--quiet")
    assert result.exit_code == 0, result.output
    report = json.loads((run / "evaluate.json").read_text())
    assert report["config"]["source"]["kind"] == "checkpoint"
    assert report["config"]["source"]["source"] == "predictions.npz"
    assert calls == []
    # which epoch's model was scored is said, though the run's predictions.npz described it
    result = invoke(run / "checkpoints" / "last.pt")
    assert "Note: scored last.pt, the model of epoch 3 of 3." in result.stderr, result.stderr
    assert report["config"]["source"]["checkpoint"]["epoch"] == 3


def test_checkpoint_of_another_epoch_runs_itself_not_the_run_predictions(tmp_path, fake_training):
    """predictions.npz holds last.pt's outputs (epoch 3); best.pt from epoch 1 is another model."""
    calls, logits, labels = fake_training
    run, _, _ = make_run(tmp_path)
    torch.save({"format": "adacal-checkpoint", "format_version": 1, "epoch": 1,
                "config": {"select": "last", "epochs": 3}}, run / "checkpoints" / "best.pt")
    out = tmp_path / "best.json"
    result = invoke(run / "checkpoints" / "best.pt", "--json", out, "--quiet")
    assert result.exit_code == 0, result.output
    assert calls == [{"path": str(run / "checkpoints" / "best.pt"), "split": "test", "device": "auto"}]
    report = json.loads(out.read_text())
    assert report["results"]["metrics"] == pytest.approx(compute_metrics(logits, labels), abs=1e-12)
    assert report["config"]["source"]["source"] == "checkpoint"


def test_best_val_run_without_predictions_runs_its_best_checkpoint(tmp_path, fake_training):
    calls, _, _ = fake_training
    run, _, _ = make_run(tmp_path, with_predictions=False)
    (run / "config.json").write_text(json.dumps(make_report("train-config", config={"select": "best-val"}, results={})))
    torch.save({"format": "adacal-checkpoint", "format_version": 1, "epoch": 1}, run / "checkpoints" / "best.pt")
    result = invoke(run, "--quiet")
    assert result.exit_code == 0, result.output
    assert [call["path"] for call in calls] == [str(run / "checkpoints" / "best.pt")]


def test_run_without_predictions_runs_the_checkpoint(tmp_path, fake_training):
    calls, logits, labels = fake_training
    run, _, _ = make_run(tmp_path, with_predictions=False)
    result = invoke(run, "--device", "cpu", "--quiet")
    assert result.exit_code == 0, result.output
    assert calls == [{"path": str(run / "checkpoints" / "last.pt"), "split": "test", "device": "cpu"}]
    report = json.loads((run / "evaluate.json").read_text())
    assert report["results"]["metrics"] == pytest.approx(compute_metrics(logits, labels), abs=1e-12)
    assert report["input"]["path"] == str(run / "checkpoints" / "last.pt")


def test_checkpoint_outside_a_run_folder(tmp_path, fake_training):
    calls, _, _ = fake_training
    path = tmp_path / "model.pt"
    torch.save({"format": "adacal-checkpoint", "format_version": 1}, path)
    result = invoke(path, "--json", tmp_path / "r.json", "--quiet")
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt", "r.json"]


def test_calibrator_output_is_evaluated(npz, tmp_path, fake_calibrators):
    cal = tmp_path / "temperature.json"
    cal.write_text("{}")
    out = tmp_path / "r.json"
    result = invoke(npz, "--calibrator", cal, "--json", out)
    assert result.exit_code == 0, result.output
    assert "calibrated by" in result.stdout
    logits, labels = sample()
    report = json.loads(out.read_text())
    assert report["config"]["calibrator"] == str(cal)
    expected = compute_metrics(softmax(logits.astype(np.float64) / 2.0), labels)
    assert report["results"]["metrics"] == pytest.approx(expected, abs=1e-9)


def test_calibrator_on_a_run_does_not_overwrite_evaluate_json(tmp_path, fake_training, fake_calibrators):
    run, _, _ = make_run(tmp_path)
    cal = tmp_path / "temperature.json"
    cal.write_text("{}")
    result = invoke(run, "--calibrator", cal, "--quiet")
    assert result.exit_code == 0, result.output
    assert not (run / "evaluate.json").exists()


def test_help_has_an_example():
    result = runner.invoke(app, ["evaluate", "--help"])
    assert result.exit_code == 0
    assert "adacal evaluate preds.npz" in " ".join(result.stdout.split())


# ------------------------------------------------------------------------------------------------- bad input


def _write(tmp_path, name, **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


BAD_FILES = {
    "missing": (lambda t: t / "nope.npz", "does not exist"),
    "suffix": (lambda t: (t / "preds.xlsx").write_text("x") and t / "preds.xlsx", "ending in .npz or .pt"),
    "text not numbers": (lambda t: (t / "preds.txt").write_text("x\n") and t / "preds.txt",
                         "table of numbers, but it holds only a line of names ('x')"),
    "corrupt npz": (lambda t: (t / "bad.npz").write_bytes(b"not a zip") and t / "bad.npz", "readable .npz"),
    # (predictions.py reports a garbage .pt as "Refusing to load ...: holds objects other than tensors": torch raises
    # UnpicklingError for it, the same error as for a real pickle; still one clean line.)
    "corrupt pt": (lambda t: (t / "bad.pt").write_bytes(b"garbage") and t / "bad.pt", "bad.pt"),
    "missing keys": (lambda t: _write(t, "a.npz", logits=np.zeros((3, 2))), "labels"),
    "3-D logits": (lambda t: _write(t, "a.npz", logits=np.zeros((3, 2, 2)), labels=np.zeros(3, int)), "2-D"),
    "N mismatch": (lambda t: _write(t, "a.npz", logits=np.zeros((3, 2)), labels=np.zeros(4, int)), "3 entries"),
    "labels out of range": (lambda t: _write(t, "a.npz", logits=np.zeros((3, 2)), labels=[0, 1, 2]), "[0, 1]"),
    "float labels": (lambda t: _write(t, "a.npz", logits=np.zeros((2, 2)), labels=[0.5, 1.0]), "integers"),
    "NaN logits": (lambda t: _write(t, "a.npz", logits=[[np.nan, 0.0]], labels=[0]), "finite"),
    "Inf logits": (lambda t: _write(t, "a.npz", logits=[[np.inf, 0.0]], labels=[0]), "finite"),
    "empty": (lambda t: _write(t, "a.npz", logits=np.zeros((0, 3)), labels=np.zeros(0, int)), "at least one sample"),
    "not a run": (lambda t: (t / "folder").mkdir() or t / "folder", "run folder"),
    "pickle": (lambda t: torch.save({"x": object()}, t / "p.pt") or t / "p.pt", "Refusing to load"),
    "unnormalised probabilities": (
        lambda t: _write(t, "a.npz", logits=[[0.6, 0.3, 0.05], [0.2, 0.2, 0.6]], labels=[0, 2]),
        "to be logits or probabilities whose rows sum to 1",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_input_files(tmp_path, case):
    build, fragment = BAD_FILES[case]
    out = tmp_path / "out.json"
    result = invoke(build(tmp_path), "--json", out)
    one_line_error(result, fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--n-bins", "0"], "Expected --n-bins to be a positive integer, got 0."),
        (["--n-bins", "abc"], "--n-bins"),
        (["--bootstrap", "-1"], "--bootstrap"),
        (["--seed", "-3"], "--seed"),
        (["--metrics", "ece-emm"], "Did you mean 'ece-em'?"),
        (["--metrics", ","], "at least one metric"),
        (["--calibrator", "missing.json"], "--calibrator"),
        (["--unknown-flag"], "No such option"),
    ],
)
def test_bad_options(npz, tmp_path, options, fragment):
    out = tmp_path / "out.json"
    result = invoke(npz, *options, "--json", out)
    one_line_error(result, fragment)
    assert not out.exists()


def test_json_path_that_is_a_folder(npz, tmp_path):
    one_line_error(invoke(npz, "--json", tmp_path), "is a folder")


def test_run_folder_without_predictions_or_checkpoint(tmp_path):
    run, _, _ = make_run(tmp_path, with_predictions=False, with_checkpoint=False)
    one_line_error(invoke(run), "has neither")
    assert not (run / "evaluate.json").exists()


def test_a_calibrator_applies_to_probabilities_when_its_map_allows(tmp_path):
    """Temperature scaling sees logits only through softmax: fitted on logits, it gives the same result on their
    probabilities. Vector scaling's per-class weights do not commute with softmax: probabilities are refused."""
    from adacal.calibrators import build_calibrator, save_calibrator

    logits, labels = sample()
    logits = logits.astype(np.float64)
    probs_path = _write(tmp_path, "probs.npz", probs=softmax(logits), labels=labels)
    logits_path = _write(tmp_path, "logits.npz", logits=logits, labels=labels)
    save_calibrator(build_calibrator("temperature").fit(logits, labels), tmp_path / "ts.json")
    save_calibrator(build_calibrator("vector-scaling").fit(logits, labels), tmp_path / "vs.json")
    reports = {}
    for name, path in (("probs", probs_path), ("logits", logits_path)):
        result = invoke(path, "--calibrator", tmp_path / "ts.json", "--json", tmp_path / f"{name}.json")
        assert result.exit_code == 0, result.output
        reports[name] = json.loads((tmp_path / f"{name}.json").read_text())["results"]["metrics"]
    for key, value in reports["logits"].items():
        assert reports["probs"][key] == pytest.approx(value, abs=1e-9), key
    for name, path in (("probabilities", probs_path), ("logits", logits_path)):  # the input's kind, not the output's
        assert f"input assumed: {name}, calibrated by" in " ".join(
            invoke(path, "--calibrator", tmp_path / "ts.json").stdout.split())
    out = tmp_path / "out.json"
    one_line_error(invoke(probs_path, "--calibrator", tmp_path / "vs.json", "--json", out),
                   "Expected logits for this vector-scaling calibrator, which was fitted on logits, got probabilities")
    assert not out.exists()


# ------------------------------------------------------------------------------------------------ library side


def test_evaluate_predictions_structure():
    logits, labels = sample()
    results = evaluate_predictions(logits, labels, metric_names=["ece-em"], bootstrap=20, n_bins=5)
    assert set(results) == {"metrics", "units", "assumed_input", "n_samples", "num_classes", "bins", "bootstrap"}
    assert list(results["metrics"]) == ["ece_em"] and list(results["bootstrap"]) == ["ece_em"]
    assert len(results["bins"]["equal_mass"]["edges"]) == 6


def test_evaluation_report_envelope(npz):
    logits, labels = sample()
    report = evaluation_report(logits, labels, input_path=npz, source={"kind": "predictions"})
    assert report["kind"] == "evaluate" and report["input"]["path"] == str(npz)
    assert report["config"]["metrics"] == list(METRIC_NAMES)
    assert set(report["results"]["metrics"]) == {metric_key(n) for n in METRIC_NAMES}


def test_resolve_input_kinds(tmp_path, npz, fake_training):
    assert resolve_evaluation_input(npz).kind == "predictions"
    run, _, _ = make_run(tmp_path)
    resolved = resolve_evaluation_input(run)
    assert resolved.kind == "run" and resolved.run.root == run and resolved.source == "predictions.npz"
    with pytest.raises(InputError, match="does not exist"):
        resolve_evaluation_input(tmp_path / "missing")


def test_library_option_checks():
    assert check_bootstrap(0) == 0 and check_bootstrap(5) == 5
    with pytest.raises(InputError, match="non-negative integer"):
        check_bootstrap(-1)
    with pytest.raises(InputError, match="non-negative integer"):
        check_bootstrap(2.5)
    with pytest.raises(InputError, match="return probabilities"):
        calibrated_probs(types.SimpleNamespace(transform=lambda x: np.ones_like(x)), np.zeros((2, 3)) + [0, 1, 2])


@pytest.mark.parametrize("spelling, note", [
    ("one-hot floats", "one-hot rows read as class indices"),
    ("one-hot booleans", "one-hot rows read as class indices"),
    ("index column", "a column (N, 1) of class labels, read as 1-D"),
])
def test_evaluate_reads_one_hot_labels_as_the_class_indices_and_says_so(tmp_path, spelling, note):
    logits, labels = sample()
    if spelling == "index column":
        spelled = labels[:, None].astype(np.uint8)
    else:
        spelled = np.eye(K, dtype=bool if spelling == "one-hot booleans" else np.float32)[labels]
    np.savez(tmp_path / "indices.npz", logits=logits, labels=labels)
    np.savez(tmp_path / "onehot.npz", logits=logits, labels=spelled)
    reports = {}
    for name in ("indices", "onehot"):
        result = invoke(tmp_path / f"{name}.npz", "--json", tmp_path / f"{name}.json")
        assert result.exit_code == 0, result.output
        reports[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert reports["onehot"]["results"]["metrics"] == reports["indices"]["results"]["metrics"]
    assert note in json.dumps(reports["onehot"])


def test_evaluate_reads_boolean_labels_of_binary_scores(tmp_path):
    rng = np.random.default_rng(4)
    truth = rng.random(200) < 0.4
    scores = np.clip(truth * 0.5 + rng.random(200) * 0.5, 0, 1)
    np.savez(tmp_path / "bool.npz", probs=scores, labels=truth)
    np.savez(tmp_path / "int.npz", probs=scores, labels=truth.astype(int))
    outputs = {name: invoke(tmp_path / f"{name}.npz", "--json", "-") for name in ("bool", "int")}
    assert all(r.exit_code == 0 for r in outputs.values()), outputs["bool"].output
    metrics = {name: json.loads(r.stdout)["results"]["metrics"] for name, r in outputs.items()}
    assert metrics["bool"] == metrics["int"]


@pytest.mark.parametrize("rows", [[0.9, 0.1 / 3, 0.1 / 3, 0.1 / 3], [1, 1, 0, 0]])
def test_evaluate_refuses_soft_or_multi_hot_label_rows_in_one_line(tmp_path, rows):
    logits, labels = sample()
    one_hot = np.eye(K)[labels]
    one_hot[5] = rows
    np.savez(tmp_path / "soft.npz", logits=logits, labels=one_hot)
    result = invoke(tmp_path / "soft.npz")
    assert result.exit_code != 0
    assert one_line_error(result) and "soft or multi-hot labels have no class index" in result.output


def test_reports_with_very_many_bins_leave_the_per_bin_statistics_out(tmp_path):
    """--n-bins 10^7 wrote 1.2 GB of JSON for 50 samples: the statistics per bin stop at MAX_REPORTED_BINS; the
    metrics still use every bin, and the note says so."""
    from adacal.evaluation import MAX_REPORTED_BINS

    logits, labels = sample()
    path = _write(tmp_path, "p.npz", logits=logits, labels=labels)
    kept = evaluate_predictions(logits, labels, n_bins=MAX_REPORTED_BINS)
    assert len(kept["bins"]["equal_width"]["counts"]) == MAX_REPORTED_BINS
    many = MAX_REPORTED_BINS + 1
    left_out = evaluate_predictions(logits, labels, n_bins=many)
    assert "bins" not in left_out
    assert left_out["metrics"]["ece_ew"] == pytest.approx(ece_ew(logits, labels, n_bins=many), abs=1e-15)
    result = invoke(path, "--n-bins", str(many), "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert f"are stored only up to {MAX_REPORTED_BINS:,} bins; the metrics use all {many:,}" in result.stderr
    assert (tmp_path / "r.json").stat().st_size < 20_000


def test_huge_nll_prints_in_scientific_notation(tmp_path):
    """Logits near the float limit give an NLL of ~1e300: the table and the -q line print it as 8.22e+299, not as
    three hundred digits."""
    from adacal.cli import app
    from typer.testing import CliRunner

    rng = np.random.default_rng(0)
    path = tmp_path / "huge.npz"
    np.savez(path, logits=rng.normal(size=(200, 3)) * 1e300, labels=rng.integers(0, 3, 200))
    for extra in ([], ["-q"]):
        result = CliRunner().invoke(app, ["evaluate", str(path), *extra])
        assert result.exit_code == 0, result.output
        assert "e+299" in result.output
        assert not any(len(word) > 40 and "/" not in word for word in result.output.split())


def test_number_switches_to_scientific_from_a_million():
    from adacal.cli.common import number

    assert number(0.123456, 4) == "0.1235"
    assert number(999999.0, 2) == "999999.00"
    assert number(1e6, 2) == "1e+06"
    assert number(-8.2e305, 4) == "-8.2e+305"


def test_labels_file_is_the_same_option_as_labels(tmp_path):
    """`plot reliability` spells the labels file --labels-file (its --labels names the panels): evaluate and calibrate
    take that spelling too, with the same result."""
    from typer.testing import CliRunner

    from adacal.cli import app

    rng = np.random.default_rng(0)
    np.save(tmp_path / "scores.npy", rng.normal(size=(50, 3)))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 50))
    outputs = []
    for flag in ("--labels", "--labels-file"):
        result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "scores.npy"), flag, str(tmp_path / "y.npy"),
                                          "-q"])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]


def test_a_clipped_debiased_ece_is_shown_as_at_most_zero_with_its_estimate_in_the_json(tmp_path):
    """Confidences 0.9, 0.9, 0.8, 0.8 with 2 equal-mass bins: (0.2² − 0·1/1)/2 + (0.4² − 0.5·0.5/1)/2 = −0.025 < 0,
    so ECE-DEBIAS is clipped to 0: the table says ≤ 0, a note says why, the JSON keeps −0.025."""
    np.savez(tmp_path / "p.npz", probs=np.array([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]),
             labels=np.array([0, 1, 1, 1]))
    result = invoke(tmp_path / "p.npz", "--n-bins", "2", "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    assert re.search(r"ECE-DEBIAS\s*│\s*≤ 0\s*│", result.stdout), result.stdout
    assert "Note: ECE-DEBIAS ≤ 0: its estimate of the squared error, -0.025, is below" in result.stderr
    results = json.loads((tmp_path / "e.json").read_text())["results"]
    assert results["metrics"]["ece_debias"] == 0.0 and results["ece_debias_squared"] == pytest.approx(-0.025)
    # a positive estimate is shown as a number, without the note
    np.savez(tmp_path / "q.npz", probs=np.array([[0.99, 0.01]] * 20), labels=np.array([1] * 20))
    result = invoke(tmp_path / "q.npz", "--n-bins", "2")
    assert "≤ 0" not in result.stdout and "ECE-DEBIAS ≤ 0" not in result.stderr
