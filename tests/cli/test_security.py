"""Files from elsewhere are data, never code: a pickle payload in a checkpoint or .pt predictions file is refused by
every command without running, and paths written inside reports or checkpoints are never followed blindly."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot



class CreatesAFile:
    """Unpickling this object opens (creates) `path`: proof that code ran."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, train_tiny_run):
    return train_tiny_run(tmp_path_factory.mktemp("security"))


@pytest.fixture()
def payloads(tmp_path, trained):
    """A run folder whose checkpoints carry a payload (and no predictions.npz, so commands must read a checkpoint),
    and a .pt predictions file with one."""
    marker = tmp_path / "payload-ran.txt"
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    (run / "predictions.npz").unlink()
    checkpoint = torch.load(trained / "checkpoints" / "last.pt", weights_only=True)
    for which in ("last", "best"):
        torch.save({**checkpoint, "payload": CreatesAFile(marker)}, run / "checkpoints" / f"{which}.pt")
    with np.load(trained / "predictions.npz") as arrays:
        logits, labels = torch.from_numpy(arrays["test_logits"]), torch.from_numpy(arrays["test_labels"])
    torch.save({"logits": logits, "labels": labels, "test_logits": logits, "test_labels": labels,
                "val_logits": logits, "val_labels": labels, "payload": CreatesAFile(marker)}, tmp_path / "preds.pt")
    np.savez(tmp_path / "clean.npz", logits=logits.numpy(), labels=labels.numpy())
    return {"marker": marker, "run": run, "preds": tmp_path / "preds.pt", "clean": tmp_path / "clean.npz"}


COMMANDS = {
    "evaluate checkpoint": lambda p: ["evaluate", str(p["run"] / "checkpoints" / "last.pt")],
    "evaluate run": lambda p: ["evaluate", str(p["run"])],
    "calibrate run": lambda p: ["calibrate", str(p["run"])],
    "ood model": lambda p: ["ood", "--model", str(p["run"]), "--in", "digits", "--out", "digits"],
    "plot reliability": lambda p: ["plot", "reliability", str(p["preds"]), "--out", str(p["run"].parent / "r.png")],
    "train resume": lambda p: ["train", "--resume", str(p["run"]), "--epochs", "2"],
    "evaluate pt predictions": lambda p: ["evaluate", str(p["preds"])],
    "calibrate pt predictions": lambda p: ["calibrate", str(p["preds"])],
    "ood in-preds": lambda p: ["ood", "--in-preds", str(p["preds"]), "--out-preds", str(p["clean"])],
    "ood out-preds": lambda p: ["ood", "--in-preds", str(p["clean"]), "--out-preds", str(p["preds"])],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_pickle_payloads_are_refused_and_never_run(payloads, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    line = one_line_error(runner.invoke(app, COMMANDS[command](payloads)))
    assert "Refusing to load" in line and "weights_only=True" in line, line
    assert not payloads["marker"].exists()
    assert snapshot(tmp_path) == before


def test_the_payload_does_run_when_unpickled_without_weights_only(payloads):
    """The control: the payload is real, so the refusals above are what kept it from running."""
    torch.load(payloads["preds"], weights_only=False)
    assert payloads["marker"].exists()


def test_a_payload_inside_a_numpy_object_array_is_refused_and_never_runs(tmp_path, monkeypatch):
    """numpy arrays of numbers and strings load from .pt files; an object array's elements are pickled objects, and
    the restricted unpickler still refuses them (the payload's global and the object dtype are not allowlisted)."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "payload-ran.txt"
    payload = np.empty(1, dtype=object)
    payload[0] = CreatesAFile(marker)
    logits = np.random.default_rng(0).normal(size=(5, 3))
    torch.save({"logits": logits, "labels": np.arange(5) % 3, "extra": payload}, tmp_path / "preds.pt")
    before = snapshot(tmp_path)
    line = one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "preds.pt")]))
    assert "Refusing to load" in line and "weights_only=True" in line, line
    assert not marker.exists() and snapshot(tmp_path) == before
    torch.load(tmp_path / "preds.pt", weights_only=False)  # the control: the payload is real
    assert marker.exists()


# ------------------------------------------------------------------------------------- paths inside reports


def _with_paths(report: dict, payload: Path, target: Path) -> dict:
    """A report whose path fields point at a payload to read and at a file to (not) write."""
    report = json.loads(json.dumps(report))
    report["input"] = {"path": str(payload), "sha256": "0" * 64}
    report["config"].update({"model": str(payload), "checkpoint": str(payload), "in_preds": str(payload),
                             "out_preds": str(payload), "input": str(payload), "json": str(target),
                             "out": str(target), "data_dir": str(target.parent / "new-data-folder")})
    return report


def test_paths_inside_reports_are_never_read_or_written(payloads, trained, tmp_path, monkeypatch):
    """plot roc / plot reliability / ood read only the numbers of the reports they are given; the paths a report
    names (its input, model, predictions, output) are neither opened nor written."""
    from adacal.ood import detect_ood, ood_report
    from adacal.reports import write_json

    monkeypatch.chdir(tmp_path)
    target = tmp_path / "written-because-a-report-said-so.json"
    run = tmp_path / "run_with_reports"
    shutil.copytree(trained, run)
    with np.load(run / "predictions.npz") as arrays:
        test_logits, val_logits = arrays["test_logits"], arrays["val_logits"]
    ood = ood_report(detect_ood(test_logits, val_logits, temperature=1.5), config={"in": "digits", "out": "x"})
    write_json(tmp_path / "ood.json", _with_paths(ood, payloads["preds"], target))
    evaluate = json.loads((run / "evaluate.json").read_text())
    write_json(tmp_path / "evaluate.json", _with_paths(evaluate, payloads["preds"], target))
    assert runner.invoke(app, ["calibrate", str(run), "--quiet"]).exit_code == 0
    calibrate = json.loads((run / "calibrate.json").read_text())
    write_json(run / "calibrate.json", _with_paths(calibrate, payloads["preds"], target))
    before = snapshot(tmp_path)

    results = [
        runner.invoke(app, ["plot", "roc", str(tmp_path / "ood.json"), "--out", str(tmp_path / "roc.png")]),
        runner.invoke(app, ["plot", "reliability", str(tmp_path / "evaluate.json"), "--out", str(tmp_path / "r.png")]),
        runner.invoke(app, ["plot", "reliability", str(run), "--calibrated", str(run / "calibrate.json"),
                            "--out", str(tmp_path / "c.png")]),
        runner.invoke(app, ["ood", "--model", str(run), "--in", "digits", "--out", "digits", "--quiet"]),
    ]
    for result in results:
        assert result.exit_code == 0, result.output
    assert not payloads["marker"].exists() and not target.exists()
    assert not (tmp_path / "new-data-folder").exists()
    after = snapshot(tmp_path)
    changed = {Path(p).name for p in after if after[p] != before.get(p)}
    assert changed == {tmp_path.name, "roc.png", "r.png", "c.png", "ood-digits.json", run.name}, changed
    assert json.loads((run / "ood-digits.json").read_text())["results"]["temperature_source"] == "calibrate.json"


def _tiny_cifar10(folder: Path) -> Path:
    """A 30 + 10 image cifar10.npz in `folder` (made here), for a checkpoint to find its training data in."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    np.savez(folder / "cifar10.npz", train_x=rng.integers(0, 255, (30, 32, 32, 3), dtype=np.uint8),
             train_y=np.arange(30) % 10, test_x=rng.integers(0, 255, (10, 32, 32, 3), dtype=np.uint8),
             test_y=np.arange(10), classes=np.array([f"c{i}" for i in range(10)]))
    return folder


def _resnet20_checkpoint(path: Path, data_dir: Path) -> Path:
    """An untrained CIFAR ResNet-20 checkpoint whose config records `data_dir` as its data folder."""
    from adacal.models import build_model
    from adacal.training.checkpoints import make_checkpoint, save_checkpoint

    torch.manual_seed(0)
    model = build_model("resnet20", num_classes=10, input_shape=(3, 32, 32))
    checkpoint = make_checkpoint(model_name="resnet20", model_options={}, dataset="cifar10", num_classes=10,
                                 input_shape=(3, 32, 32), epoch=1, model_state=model.state_dict(),
                                 config={"seed": 0, "val_size": 10, "data_dir": str(data_dir)})
    save_checkpoint(checkpoint, path)
    return path


def test_a_data_folder_named_in_a_checkpoint_is_not_created(tmp_path, monkeypatch):
    """A checkpoint records the data folder its run used; one that does not exist here is ignored (the default data
    folder is used) instead of being created and downloaded into."""
    monkeypatch.setenv("ADACAL_DATA", str(_tiny_cifar10(tmp_path / "data")))
    monkeypatch.chdir(tmp_path)
    _resnet20_checkpoint(tmp_path / "model.pt", tmp_path / "somewhere" / "else")
    result = runner.invoke(app, ["evaluate", str(tmp_path / "model.pt"), "--device", "cpu", "--quiet"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "somewhere").exists()


def test_ood_never_downloads_into_the_data_folder_a_checkpoint_records(tmp_path, monkeypatch):
    """The recorded folder exists and holds the training set but not SVHN: `ood --out svhn` refuses, naming
    --data-dir, instead of downloading into it (a path inside a file is not the user's word to write there)."""
    from adacal.data import vision

    def no_download(root):  # a download attempted would be a failure of this test
        raise AssertionError(f"download attempted into {root}")

    monkeypatch.setitem(vision.SPECS, "svhn", dataclasses.replace(vision.SPECS["svhn"], fetch=no_download))
    recorded = _tiny_cifar10(tmp_path / "recorded")
    _resnet20_checkpoint(tmp_path / "model.pt", recorded)
    before = sorted(p.name for p in recorded.iterdir())
    result = runner.invoke(app, ["ood", "--model", str(tmp_path / "model.pt"), "--out", "svhn", "--device", "cpu"])
    one_line_error(result, "SVHN is not in", "recorded in model.pt", "never downloads into", "--data-dir DIR")
    assert sorted(p.name for p in recorded.iterdir()) == before


def test_a_file_named_in_a_checkpoints_model_options_is_never_read(tmp_path):
    """Init-only model options (a GloVe embeddings file) inside a checkpoint are ignored: the weights are in it."""
    from adacal.models import build_model
    from adacal.training import build_model_from_checkpoint
    from adacal.training.checkpoints import make_checkpoint

    model = build_model("textcnn", num_classes=3, input_shape=(12,), vocab_size=40)
    named = tmp_path / "glove-that-is-not-there.txt"
    checkpoint = make_checkpoint(model_name="textcnn", dataset="20newsgroups", num_classes=3, input_shape=(12,),
                                 model_options={"vocab_size": 40, "embeddings": str(named), "vocab": ["a", "b"]},
                                 config={}, epoch=1, model_state=model.state_dict())
    rebuilt, _ = build_model_from_checkpoint(checkpoint)
    for key, value in model.state_dict().items():
        assert torch.equal(rebuilt.state_dict()[key], value)


@pytest.mark.parametrize("option", ["evaluate --calibrator", "plot reliability --calibrated"])
def test_calibrators_and_reports_are_read_as_json_never_unpickled(payloads, tmp_path, monkeypatch, option):
    import pickle

    calibrator = tmp_path / "calibrator.json"
    calibrator.write_bytes(pickle.dumps(CreatesAFile(payloads["marker"])))
    command, flag = option.rsplit(" ", 1)
    args = [*command.split(), str(payloads["clean"]), flag, str(calibrator)]
    if command.startswith("plot"):
        args += ["--out", str(tmp_path / "r.png")]
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    line = one_line_error(runner.invoke(app, args))
    assert "could not be parsed" in line, line
    assert not payloads["marker"].exists()
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "fifo"])
@pytest.mark.parametrize("command", ["evaluate", "calibrator", "ood", "resume"])
def test_a_link_to_an_endless_file_is_refused_without_reading(tmp_path, monkeypatch, target, command):
    """A predictions file, calibrator or checkpoint that is a symlink to a device or FIFO would never end (or never
    start): it is refused from its stat, in one line, before anything is read."""
    import os

    monkeypatch.chdir(tmp_path)
    if target == "fifo":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    good = tmp_path / "good.npz"
    np.savez(good, logits=np.eye(3), labels=np.arange(3))
    link = tmp_path / ("link.json" if command == "calibrator" else "link.pt" if command == "resume" else "link.npz")
    link.symlink_to(target)
    argv = {"evaluate": ["evaluate", str(link)], "calibrator": ["evaluate", str(good), "--calibrator", str(link)],
            "ood": ["ood", "--in-preds", str(good), "--out-preds", str(link)],
            "resume": ["train", "--resume", str(link)]}[command]
    before = snapshot(tmp_path)
    line = one_line_error(runner.invoke(app, argv))
    assert "regular file" in line and str(link) in line
    assert snapshot(tmp_path) == before


def test_paths_that_look_like_rich_markup_print_as_they_are(tmp_path):
    """A folder or file name such as `r[/x]` or `p[red]` is not rich markup: evaluate, calibrate and ood print it
    verbatim (a closing tag crashed evaluate after the metrics were computed; `[red]` vanished from ood's title)."""
    from typer.testing import CliRunner

    from adacal.cli import app

    folder = tmp_path / "r[" / "x]"  # "r[/x]" as a path
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    scores = folder / "p[red].npz"
    np.savez(scores, val_logits=rng.normal(size=(60, 3)), val_labels=rng.integers(0, 3, 60),
             test_logits=rng.normal(size=(60, 3)), test_labels=rng.integers(0, 3, 60))
    other = folder / "o[bold].npz"
    np.savez(other, logits=rng.normal(size=(30, 3)))
    runner = CliRunner()
    commands = {  # command line, what its output must show verbatim
        "evaluate": (["evaluate", str(scores), "--logits-key", "test_logits", "--labels-key", "test_labels"],
                     "r[/x]/p[red].npz"),
        "calibrate": (["calibrate", str(scores), "--json", str(folder / "c.json")], "r[/x]/c.json"),
        "ood": (["ood", "--in-preds", str(scores), "--out-preds", str(other), "--json", str(folder / "o.json")],
                "p[red] (n=60) vs o[bold] (n=30)"),
    }
    for name, (args, shown) in commands.items():
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (name, result.output)
        assert shown in result.output, name


@pytest.mark.parametrize("command", [
    ["evaluate", "MODEL", "--device", "cpu", "--quiet"],
    ["ood", "--model", "MODEL", "--out", "cifar10-c", "--device", "cpu"],
    ["shift", "MODEL", "--corruptions", "contrast", "--severities", "5", "--device", "cpu"],
])
def test_a_gone_recorded_data_folder_is_named_when_the_default_one_lacks_the_set(tmp_path, monkeypatch, command):
    """The data folder a checkpoint records no longer exists (moved, another machine) and the default folder has no
    CIFAR-10 either: the one-line error names the recorded folder, so the fallback is not a mystery."""
    from adacal.data import vision

    def no_download(root):
        raise OSError("offline")

    monkeypatch.setitem(vision.SPECS, "cifar10", dataclasses.replace(vision.SPECS["cifar10"], fetch=no_download))
    monkeypatch.setenv("ADACAL_DATA", str(tmp_path / "empty-default"))
    monkeypatch.setenv("ADACAL_CACHE", str(tmp_path / "cache"))
    _resnet20_checkpoint(tmp_path / "model.pt", tmp_path / "moved-away")
    args = [str(tmp_path / "model.pt") if part == "MODEL" else part for part in command]
    result = runner.invoke(app, args)
    one_line_error(result, "recorded in model.pt", str(tmp_path / "moved-away"), "no longer exists")
