"""Inputs that used to pass adacal's checks or fail with a traceback, class by class: non-numeric numpy dtypes as
scores or labels, an evaluate.json whose bin statistics are out of range, a config.json whose `results.resumes` or
`config` has the wrong type, and a checkpoint whose saved options do.

Each is refused in one sentence naming the input, what was expected and what was found: `pytest.raises` at the
library level, and through the CLI an exit code of 2, exactly one `Error:` line and no traceback. Well-formed inputs
beside them are still read, to the values they hold.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.arrays import binary_score_columns, check_labels, check_score_shape, check_scores, to_numpy
from adacal.cli import app
from adacal.errors import CheckpointError, InputError
from adacal.runs import RunFolder, run_config

from cli_helpers import one_line_error, runner, snapshot

LOGITS = np.array([[2.0, 0.5, -1.0], [0.1, 1.5, 0.3], [-0.5, 0.2, 2.2], [1.0, 1.1, 0.9]])
LABELS = np.array([0, 1, 2, 1])

# numpy dtypes that are not real numbers (numpy counts timedelta64 as an integer: np.issubdtype(..., np.integer)).
NON_REAL = {
    "timedelta64[ns]": lambda a: a.astype(np.int64).astype("m8[ns]"),
    "timedelta64[D]": lambda a: a.astype(np.int64).astype("m8[D]"),
    "datetime64[s]": lambda a: a.astype(np.int64).astype("M8[s]"),
    "complex128": lambda a: a.astype(complex),
    "|V8": lambda a: np.zeros(a.shape, dtype="V8"),
    "[('a', '<f8')]": lambda a: np.zeros(a.shape, dtype=[("a", "<f8")]),
}


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


# ------------------------------------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("dtype", list(NON_REAL))
def test_scores_of_non_real_dtypes_are_refused(dtype):
    scores = NON_REAL[dtype](LOGITS.round())
    message = _escaped(f"Expected logits to be real numbers, got dtype {dtype}.")
    with pytest.raises(InputError, match=message):
        check_score_shape(scores)
    with pytest.raises(InputError, match=message):
        check_scores(scores)
    with pytest.raises(InputError, match=_escaped(f"Expected scores to be real numbers, got dtype {dtype}.")):
        binary_score_columns(scores[:, 0])


@pytest.mark.parametrize("dtype", list(NON_REAL))
def test_labels_of_non_real_dtypes_are_refused_also_as_one_hot_rows(dtype):
    message = _escaped(f"Expected labels to be integers, got dtype {dtype}.")
    with pytest.raises(InputError, match=message):
        check_labels(NON_REAL[dtype](LABELS), num_classes=3)
    with pytest.raises(InputError, match=message):  # one-hot rows: argmax would take timedelta64 or complex values
        check_labels(NON_REAL[dtype](np.eye(3)[LABELS]), num_classes=3)
    with pytest.raises(InputError, match=message):  # a column (N, 1)
        check_labels(NON_REAL[dtype](LABELS[:, None]), num_classes=3)


def test_real_numbers_and_labels_are_still_read_as_they_are():
    for dtype in (np.float16, np.float32, np.float64, np.int8, np.int64):
        np.testing.assert_array_equal(check_score_shape(LOGITS.round().astype(dtype)), LOGITS.round())
    np.testing.assert_array_equal(check_score_shape(np.abs(LOGITS.round()).astype(np.uint8)), np.abs(LOGITS.round()))
    for dtype in (np.int8, np.int64, np.uint16, np.float32, np.float64):
        np.testing.assert_array_equal(check_labels(LABELS.astype(dtype), num_classes=3), LABELS)
    np.testing.assert_array_equal(check_labels(np.eye(3, dtype=bool)[LABELS], num_classes=3), LABELS)
    np.testing.assert_array_equal(check_labels(np.array([True, False]), num_classes=2), [1, 0])
    columns, probabilities = binary_score_columns(np.array([0.25, 0.5], dtype=np.float32))
    assert probabilities and np.allclose(columns, [[0.75, 0.25], [0.5, 0.5]])
    assert check_labels(np.array([], dtype=np.float64)).shape == (0,)


def test_torch_dtypes_numpy_cannot_hold_are_one_line_errors():
    import warnings

    with pytest.raises(InputError, match=r"Expected logits to be real numbers, got dtype complex64\."):
        check_score_shape(torch.zeros(2, 3, dtype=torch.complex64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex32 is experimental and quantized tensors deprecated: torch warns
        half = torch.zeros(2, 3, dtype=torch.complex32)
        quantized = torch.quantize_per_tensor(torch.zeros(2, 3), 0.1, 0, torch.qint8)
    with pytest.raises(InputError, match=r"Expected labels to be integers, got dtype complex64\."):
        check_labels(half[:, 0])  # numpy has no complex32: read as complex64, refused by name
    with pytest.raises(InputError, match=r"Expected logits to be real numbers, got a quantized tensor \(dtype qint8\)"):
        check_score_shape(quantized)
    assert to_numpy(torch.tensor([1, 2], dtype=torch.uint16)).tolist() == [1, 2]


@pytest.mark.parametrize("dtype", ["timedelta64[ns]", "datetime64[s]", "complex128", "|V8"])
def test_evaluate_refuses_non_real_predictions_files_in_one_line(tmp_path, dtype):
    convert = NON_REAL[dtype]
    np.savez(tmp_path / "scores.npz", logits=convert(LOGITS.round()), labels=LABELS)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "scores.npz")]), "scores.npz:logits",
                   f"got dtype {dtype}")
    np.savez(tmp_path / "labels.npz", logits=LOGITS, labels=convert(LABELS))
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "labels.npz")]), "labels.npz:labels",
                   f"got dtype {dtype}")
    np.save(tmp_path / "p.npy", convert(LOGITS.round()))
    np.save(tmp_path / "p_labels.npy", LABELS)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "p.npy")]), "p.npy", f"got dtype {dtype}")


def test_evaluate_still_reads_integer_logits(tmp_path):
    np.savez(tmp_path / "ok.npz", logits=LOGITS.round().astype(np.int64), labels=LABELS)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "ok.npz"), "--json", str(tmp_path / "ok.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "ok.json").read_text())["results"]["n_samples"] == 4


# ------------------------------------------------------------------------------------------------ evaluate.json bins


@pytest.fixture(scope="module")
def evaluate_json(tmp_path_factory):
    """An evaluate.json `adacal evaluate` wrote for 200 samples of 4 classes."""
    root = tmp_path_factory.mktemp("evaluate-json")
    rng = np.random.default_rng(0)
    np.savez(root / "preds.npz", logits=rng.normal(size=(200, 4)), labels=rng.integers(0, 4, 200))
    result = runner.invoke(app, ["evaluate", str(root / "preds.npz"), "--json", str(root / "evaluate.json")])
    assert result.exit_code == 0, result.output
    return json.loads((root / "evaluate.json").read_text())


def _report_with(tmp_path: Path, report: dict, field: str, index: int, value, *, binning: str = "equal_width") -> Path:
    changed = json.loads(json.dumps(report))
    changed["results"]["bins"][binning][field][index] = value
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(changed))
    return path


BAD_BINS = [
    ("counts", 10**30, "to add up to results.n_samples (200), got 1e+30"),
    ("counts", 2**63, "to add up to results.n_samples (200), got 9.22e+18"),
    ("counts", 2**62, "to add up to results.n_samples (200), got 4.61e+18"),
    ("counts", -1, "to be an integer >= 0, got a number -1"),
    ("counts", 1.5, "to be an integer >= 0, got a number 1.5"),
    ("counts", True, "to be an integer >= 0, got true/false true"),
    ("counts", None, "to be an integer >= 0, got null"),
    ("edges", 1e308, "edges of results.bins.equal_width in"),
    ("edges", -0.5, "to rise from 0 to 1"),
    ("mean_confidence", 5.0, "mean_confidence in"),
    ("accuracy", -3.0, "accuracy in"),
]


@pytest.mark.parametrize("field, value, message", BAD_BINS)
def test_plot_reliability_refuses_bad_bin_statistics(tmp_path, evaluate_json, field, value, message):
    from adacal.plots import ReliabilityRequest, reliability_inputs

    path = _report_with(tmp_path, evaluate_json, field, 1, value)
    with pytest.raises(InputError, match=_escaped(message)):
        reliability_inputs(ReliabilityRequest([path]))
    out = tmp_path / "rel.png"
    one_line_error(runner.invoke(app, ["plot", "reliability", str(path), "--out", str(out)]), "ev.json", message)
    assert not out.exists()


def test_counts_without_n_samples_are_bounded_too(tmp_path, evaluate_json):
    from adacal.plots import ReliabilityRequest, reliability_inputs

    report = json.loads(json.dumps(evaluate_json))
    del report["results"]["n_samples"]
    report["results"]["bins"]["equal_mass"]["counts"][0] = 10**30
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(report))
    with pytest.raises(InputError, match=r"results\.bins\.equal_mass in .* to add up to at most 2\*\*53 samples, "
                                         r"got 1e\+30"):
        reliability_inputs(ReliabilityRequest([path], binning="equal-mass"))
    report["results"]["bins"]["equal_mass"]["counts"] = []
    path.write_text(json.dumps(report))
    with pytest.raises(InputError, match=r"to hold at least one bin"):
        reliability_inputs(ReliabilityRequest([path], binning="equal-mass"))


def test_the_report_as_written_is_drawn_with_its_own_counts(tmp_path, evaluate_json):
    from adacal.plots import ReliabilityRequest, reliability_inputs

    path = tmp_path / "ev.json"
    path.write_text(json.dumps(evaluate_json))
    for binning in ("equal-width", "equal-mass"):
        (panel,) = reliability_inputs(ReliabilityRequest([path], binning=binning))
        stored = evaluate_json["results"]["bins"][binning.replace("-", "_")]
        assert panel.stats.counts.tolist() == stored["counts"] and sum(stored["counts"]) == 200
        np.testing.assert_allclose(panel.stats.edges, stored["edges"])
    out = tmp_path / "rel.png"
    assert runner.invoke(app, ["plot", "reliability", str(path), "--out", str(out)]).exit_code == 0
    assert out.is_file()


# ------------------------------------------------------------------------------------------------ config.json


@pytest.fixture(scope="module")
def trained(tmp_path_factory, one_torch_thread):
    """A digits/mlp/ce run of one epoch (train_subset 64): copied by each test that changes it."""
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        result = train(TrainConfig(dataset="digits", model="mlp", loss="ce", epochs=1, train_subset=64,
                                   batch_size=32, device="cpu", out=str(tmp_path_factory.mktemp("runs"))))
    return result.run_dir


def _copy(run: Path, tmp_path: Path, name: str = "run") -> Path:
    target = tmp_path / name
    shutil.copytree(run, target)
    return target


def _edit_config(run: Path, edit) -> None:
    report = json.loads((run / "config.json").read_text())
    edit(report)
    (run / "config.json").write_text(json.dumps(report))


def _set(path: str, value):
    def edit(report: dict) -> None:
        *parents, last = path.split(".")
        holder = report
        for key in parents:
            holder = holder[key]
        holder[last] = value
    return edit


BAD_CONFIGS = [
    ("config", [], "Expected 'config' in {config} to be an object, got a list."),
    ("config", "adafocal", "Expected 'config' in {config} to be an object, got a string \"adafocal\"."),
    ("config", 3, "Expected 'config' in {config} to be an object, got a number 3."),
    ("config", None, "Expected 'config' in {config} to be an object, got null"),
    ("config.select", 3, "Expected 'config.select' in {config} to be"),
    ("config.select", "best", "Expected 'config.select' in {config} to be one of \"last\", \"best-val\""),
    ("config.epochs", "many", "Expected 'config.epochs' in {config} to be an integer >= 0"),
    ("config.milestones", "15,25", "Expected 'config.milestones' in {config} to be a list"),
    ("config.milestones", [1.5], "Expected 'config.milestones[0]' in {config} to be an integer >= 0"),
    ("config.test_subset", "all", "Expected 'config.test_subset' in {config} to be an integer >= 1"),
    ("config.lr", "fast", "Expected 'config.lr' in {config} to be a number"),
    ("config.amp", "yes", "Expected 'config.amp' in {config} to be true or false"),
    ("config.update_every", [1], "Expected 'config.update_every' in {config} to be 'epoch', 'paper', a schedule"),
    ("config.data_dir", 5, "Expected 'config.data_dir' in {config} to be a string"),
    ("results.split", [], "Expected 'results.split' in {config} to be an object, got a list."),
    ("results.split.sizes.test", "360", "Expected 'results.split.sizes.test' in {config} to be an integer >= 0"),
    ("results.run_id", 5, "Expected 'results.run_id' in {config} to be a string, got a number 5."),
    ("results.run_id", "not-an-id", "Expected 'results.run_id' in {config} to be a run id (32 lowercase hex"),
]


@pytest.mark.parametrize("field, value, message", BAD_CONFIGS)
def test_a_run_config_json_of_the_wrong_shape_is_refused_where_it_is_read(tmp_path, trained, field, value, message):
    run = _copy(trained, tmp_path)
    _edit_config(run, _set(field, value))
    message = message.format(config=run / "config.json")
    with pytest.raises(InputError, match=_escaped(message)):
        run_config(RunFolder(run))
    before = snapshot(run)
    for argv in (["evaluate", str(run)], ["calibrate", str(run)], ["plot", "reliability", str(run), "--out",
                                                                   str(tmp_path / "r.png")]):
        one_line_error(runner.invoke(app, argv), message)
    assert snapshot(run) == before and not (tmp_path / "r.png").exists()


def test_config_json_that_records_nothing_or_is_intact_is_read(tmp_path, trained):
    run = _copy(trained, tmp_path)
    report = run_config(RunFolder(run))
    assert report["config"]["loss"] == "ce" and report["results"]["split"]["sizes"]["test"] == 360
    (run / "config.json").write_text("{}")  # records nothing to check: the run's files are read without it
    assert run_config(RunFolder(run)) is None
    with pytest.raises(InputError, match="has no schema_version/results"):
        run_config(RunFolder(run), required=True)
    result = runner.invoke(app, ["evaluate", str(run), "--json", str(tmp_path / "e.json")])
    assert result.exit_code == 0, result.output
    (run / "config.json").write_text("[1, 2]")  # not an object: not a config.json adacal or anyone wrote for a run
    one_line_error(runner.invoke(app, ["evaluate", str(run)]), "config.json to be an adacal report")


# ------------------------------------------------------------------------------------------------ train --resume


BAD_RESUMES = [
    (5, "Expected 'results.resumes' in {config} to be a list, got a number 5."),
    (-1, "Expected 'results.resumes' in {config} to be a list, got a number -1."),
    (2.5, "Expected 'results.resumes' in {config} to be a list, got a number 2.5."),
    (10**30, "Expected 'results.resumes' in {config} to be a list, got a number 1000000000000000000000000000000."),
    ("twice", "Expected 'results.resumes' in {config} to be a list, got a string \"twice\"."),
    (None, "Expected 'results.resumes' in {config} to be a list, got null"),
    ({"from_epoch": 1}, "Expected 'results.resumes' in {config} to be a list, got an object."),
    ([5], "Expected 'results.resumes[0]' in {config} to be an object, got a number 5."),
    ([{"from_epoch": "one"}], "Expected 'results.resumes[0].from_epoch' in {config} to be an integer >= 0"),
]


@pytest.mark.parametrize("value, message", BAD_RESUMES)
def test_resume_refuses_a_bad_resumes_record_before_anything_is_written(tmp_path, trained, value, message):
    run = _copy(trained, tmp_path)
    _edit_config(run, _set("results.resumes", value))
    message = message.format(config=run / "config.json")
    with pytest.raises(InputError, match=_escaped(message)):
        run_config(RunFolder(run), required=True)
    before = snapshot(run)
    one_line_error(runner.invoke(app, ["train", "--resume", str(run), "--epochs", "2", "--device", "cpu"]), message)
    assert snapshot(run) == before


def test_resume_appends_to_the_resumes_it_finds(tmp_path, trained, one_torch_thread):
    run = _copy(trained, tmp_path)
    earlier = {"from_epoch": 0, "epochs": 1, "versions": {"adacal": "0.0.1"}}
    _edit_config(run, _set("results.resumes", [earlier]))
    with one_torch_thread():
        result = runner.invoke(app, ["train", "--resume", str(run), "--epochs", "2", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    resumes = json.loads((run / "config.json").read_text())["results"]["resumes"]
    assert resumes[0] == earlier and len(resumes) == 2
    assert resumes[1]["from_epoch"] == 1 and resumes[1]["epochs"] == 2


# ------------------------------------------------------------------------------------------------ checkpoint options


@pytest.mark.parametrize("change, message", [
    ({"milestones": "15"}, "Expected milestones to be a sequence of epoch numbers such as (15, 25), got '15'"),
    ({"milestones": 5}, "Expected milestones to be a sequence of epoch numbers such as (15, 25), got 5"),
    ({"milestones": [1.5]}, "Expected milestones to be a sequence of epoch numbers such as (15, 25), got [1.5]"),
    ({"loss_options": [1]}, "Expected loss_options to be a dict of option names and values, got [1]"),
    ({"model_options": 3}, "Expected model_options to be a dict of option names and values, got 3"),
    ({"data_dir": 5}, "Expected data_dir to be a path (a string), got 5"),
])
def test_resume_refuses_a_checkpoint_whose_saved_options_have_the_wrong_type(tmp_path, trained, change, message):
    from adacal.training import TrainConfig
    from adacal.training.resume_config import merge_resume_config

    run = _copy(trained, tmp_path)
    checkpoint = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    with pytest.raises(CheckpointError, match=_escaped(f"{message} (in the options saved in ckpt.pt).")):
        merge_resume_config({**checkpoint["config"], **change}, TrainConfig(epochs=2), source="ckpt.pt")
    checkpoint["config"].update(change)
    torch.save(checkpoint, run / "checkpoints" / "last.pt")
    # config.json without those options (another adacal version): nothing to compare them with, so they are read.
    _edit_config(run, lambda report: [report["config"].pop(key) for key in change])
    before = snapshot(run)
    one_line_error(runner.invoke(app, ["train", "--resume", str(run), "--epochs", "2", "--device", "cpu"]),
                   message, "last.pt")
    assert snapshot(run) == before


# ------------------------------------------------------------------------------------------------ history.jsonl values


@pytest.fixture(scope="module")
def adafocal_run(tmp_path_factory, one_torch_thread):
    """A digits/mlp/adafocal run of one epoch: its history holds one AdaFocal γ-update."""
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        result = train(TrainConfig(dataset="digits", model="mlp", loss="adafocal", epochs=1, train_subset=64,
                                   batch_size=32, device="cpu", out=str(tmp_path_factory.mktemp("runs"))))
    return result.run_dir


@pytest.mark.parametrize("field, index, value, message", [
    ("counts", 0, 10**30, "'adafocal.updates[0].counts' of epoch 1 in {history} to be bin counts adding up to at "
                          "most 2**53, got 1e+30."),
    ("gammas", 0, 1e308, "'adafocal.updates[0].gammas' of epoch 1 in {history} to be within float32's range"),
    ("val_confidence", 0, 7.0, "'adafocal.updates[0].val_confidence' of epoch 1 in {history} to be fractions in "
                               "[0, 1]"),
    ("val_accuracy", 0, -0.5, "'adafocal.updates[0].val_accuracy' of epoch 1 in {history} to be fractions"),
    ("edges", 1, 5.0, "'adafocal.updates[0].edges' of epoch 1 in {history} to be edges rising from 0 to 1"),
])
def test_plots_of_adafocal_refuse_out_of_range_history_values(tmp_path, adafocal_run, field, index, value, message):
    from adacal.plots import read_adafocal_run

    run = _copy(adafocal_run, tmp_path)
    record = json.loads((run / "history.jsonl").read_text().splitlines()[0])
    record["adafocal"]["updates"][0][field][index] = value
    (run / "history.jsonl").write_text(json.dumps(record) + "\n")
    message = message.format(history=run / "history.jsonl")
    with pytest.raises(InputError, match=_escaped(message)):
        read_adafocal_run(run)
    for command in ("gamma", "correspondence"):
        out = tmp_path / f"{command}.png"
        one_line_error(runner.invoke(app, ["plot", command, str(run), "--out", str(out)]), message)
        assert not out.exists()


def test_plots_of_adafocal_draw_an_intact_history(tmp_path, adafocal_run):
    from adacal.plots import read_adafocal_run

    info, history = read_adafocal_run(adafocal_run)
    stored = json.loads((adafocal_run / "history.jsonl").read_text().splitlines()[0])
    assert history[0]["adafocal"]["updates"] == stored["adafocal"]["updates"]
    out = tmp_path / "gamma.png"
    assert runner.invoke(app, ["plot", "gamma", str(adafocal_run), "--out", str(out)]).exit_code == 0
    assert out.is_file()
