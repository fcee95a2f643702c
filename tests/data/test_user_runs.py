"""`adacal train --dataset <path>` end to end through the CLI: a run on an image folder, a CSV and an .npz, then
evaluate, calibrate, ood, plot and resume on it; the path recorded absolute with its fingerprint (changed data is
refused); and the one-line errors of the options that go with it."""

import json

import numpy as np
import pytest

from adacal.cli import app

from cli_helpers import one_line_error, runner
from user_data_files import write_csv, write_image_folder

QUICK = ["--epochs", "1", "--device", "cpu", "--batch-size", "16", "--quiet"]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


def _invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _config(run):
    return json.loads((run / "config.json").read_text())


@pytest.mark.slow
def test_an_image_folder_trains_evaluates_calibrates_and_scores_ood(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "pets")
    write_image_folder(tmp_path / "other", per_class=2, classes=("x",), size=(12, 12), seed=9)
    monkeypatch.chdir(tmp_path)  # a relative --dataset is recorded absolute
    result = _invoke("train", "--dataset", "pets", "--model", "resnet20", "--out", "runs", "--name", "r", *QUICK)
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "r"
    config = _config(run)
    assert config["config"]["dataset"] == str(tmp_path / "pets")
    split = config["results"]["split"]
    assert split["classes"] == ["cat", "dog", "eel"] and split["sizes"] == {"train": 27, "val": 2, "test": 7}
    for command in (["evaluate", run], ["calibrate", run], ["ood", "--model", run, "--out", tmp_path / "other"],
                    ["plot", "reliability", run, "--out", tmp_path / "rel.png"]):
        result = _invoke(*command)
        assert result.exit_code == 0, (command, result.output)
    ood = json.loads((run / "ood-other.json").read_text())
    assert ood["results"]["in"] == {"name": str(tmp_path / "pets"), "n": 7} and ood["results"]["out"]["n"] == 2
    assert (run / "calibrate.json").is_file() and (tmp_path / "rel.png").is_file()
    one_line_error(_invoke("shift", run), "registered image dataset")  # its cache is by dataset name


@pytest.mark.slow
def test_a_csv_run_records_its_classes_resumes_and_refuses_changed_data(tmp_path, monkeypatch):
    path = tmp_path / "table.csv"
    write_csv(path, label="species")
    result = _invoke("train", "--dataset", path, "--label-column", "species", "--out", tmp_path / "runs", "--name",
                     "t", *QUICK)
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "t"
    config = _config(run)
    assert config["config"]["label_column"] == "species" and config["config"]["model"] == "mlp"
    assert config["results"]["split"]["classes"] == ["setosa", "versicolor", "virginica"]
    with np.load(run / "predictions.npz") as arrays:
        assert arrays["test_logits"].shape == (12, 3)
    monkeypatch.chdir(tmp_path)  # the path typed again, relative, is the run's own data
    resumed = _invoke("train", "--resume", run, "--dataset", "table.csv", "--epochs", "2", "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert _invoke("calibrate", run).exit_code == 0
    # OOD rows: the training feature columns in another order, no label column; standardised as the training rows.
    (tmp_path / "far.csv").write_text("c,b,a\n" + "".join(f"{50 + i},{60 - i},{70 + i}\n" for i in range(5)))
    result = _invoke("ood", "--model", run, "--out", tmp_path / "far.csv")
    assert result.exit_code == 0, result.output
    assert json.loads((run / "ood-far.json").read_text())["results"]["out"]["n"] == 5
    one_line_error(_invoke("ood", "--model", run, "--out", tmp_path / "runs"), "got an image folder")
    with open(path, "a") as handle:
        handle.write("1,2,setosa,3\n")
    one_line_error(_invoke("train", "--resume", run, "--epochs", "3"), "content changed since")


def test_an_npz_run_and_print_config(tmp_path):
    path = tmp_path / "arrays.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.normal(size=(40, 5)).astype(np.float32), y=np.arange(40) % 2)
    printed = _invoke("train", "--dataset", path, "--print-config")
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout)["model"] == "mlp"
    result = _invoke("train", "--dataset", path, "--out", tmp_path / "runs", "--name", "n", *QUICK)
    assert result.exit_code == 0, result.output
    assert _invoke("evaluate", tmp_path / "runs" / "n").exit_code == 0


def test_dataset_path_errors_are_one_line(tmp_path):
    one_line_error(_invoke("train", "--dataset", "no-such-set", "--print-config"), "A path to your own data")
    write_image_folder(tmp_path / "pets", per_class=2)
    one_line_error(_invoke("train", "--dataset", tmp_path / "pets", "--label-column", "y", "--print-config"),
                   "--label-column applies to a CSV")
    (tmp_path / "notes.txt").write_text("hello")
    one_line_error(_invoke("train", "--dataset", tmp_path / "notes.txt", "--print-config"), "a .txt file")
    one_line_error(_invoke("train", "--dataset", tmp_path / "pets", "--out", tmp_path / "runs", *QUICK),
                   "at least 3 samples of each class")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    one_line_error(_invoke("train", "--dataset", tmp_path / "moved" / "pets", "--print-config"),
                   "that path does not exist")
    write_image_folder(tmp_path / "gray", per_class=4, mode="L", size=(16, 16))
    one_line_error(_invoke("train", "--dataset", tmp_path / "gray", "--model", "torchvision:resnet18", "--out",
                           tmp_path / "runs", *QUICK), "reads RGB images")
