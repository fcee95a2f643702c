"""`adacal ood` through CliRunner: saved logits end to end, one-line errors that write nothing, and a trained model."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

import adacal
from adacal.cli import app

runner = CliRunner()
SHARED_DATA = Path(adacal.__file__).resolve().parents[2] / "shared" / "data"
METRIC_KEYS = {"auroc", "aupr_in", "aupr_out", "fpr_at_95_tpr", "roc"}


def _entropy(logits):
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return -(p * np.log(p)).sum(axis=1)


@pytest.fixture(scope="module")
def logits():
    rng = np.random.default_rng(0)
    in_logits = rng.normal(0, 1, (120, 4)) + 5.0 * np.eye(4)[rng.integers(0, 4, 120)]
    out_logits = rng.normal(0, 1.5, (80, 4))
    return in_logits.astype(np.float32), out_logits.astype(np.float32)


@pytest.fixture()
def pred_files(tmp_path, logits):
    in_logits, out_logits = logits
    rng = np.random.default_rng(1)
    val_labels = rng.integers(0, 4, 100)
    val_logits = 6.0 * np.eye(4)[np.where(rng.random(100) < 0.7, val_labels, rng.integers(0, 4, 100))]
    # In-distribution like a predictions.npz (val_/test_ keys); OOD with logits only (no labels).
    np.savez(tmp_path / "in.npz", val_logits=val_logits.astype(np.float32), val_labels=val_labels,
             test_logits=in_logits, test_labels=np.zeros(len(in_logits), dtype=np.int64))
    np.savez(tmp_path / "out.npz", logits=out_logits)
    return tmp_path / "in.npz", tmp_path / "out.npz"


def _files(root):
    return sorted(p.relative_to(root) for p in Path(root).rglob("*") if p.is_file())


def _check_schema(report, scores, post):
    assert report["kind"] == "ood" and report["schema_version"] == 1
    assert {"adacal_version", "created", "config", "results"} <= set(report)
    results = report["results"]
    assert set(results) >= {"in", "out", "temperature", "temperature_source", "scores"}
    assert set(results["scores"]) == set(scores)
    for entry in results["scores"].values():
        assert set(entry["pre"]) == METRIC_KEYS
        assert all(0.0 <= entry["pre"][k] <= 1.0 for k in METRIC_KEYS - {"roc"})
        assert (entry["post"] is not None) == post
        if post:
            assert set(entry["post"]) == METRIC_KEYS


def test_preds_end_to_end_writes_ood_json(tmp_path, pred_files, logits):
    in_path, out_path = pred_files
    report_path = tmp_path / "report" / "ood.json"
    result = runner.invoke(app, ["ood", "--in-preds", str(in_path), "--out-preds", str(out_path),
                                 "--in", "mine", "--out", "noise", "--json", str(report_path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    report = json.loads(report_path.read_text())
    _check_schema(report, ["entropy"], post=False)
    results = report["results"]
    assert results["in"] == {"name": "mine", "n": 120} and results["out"] == {"name": "noise", "n": 80}
    assert results["temperature"] is None and results["temperature_source"] == "none"
    assert report["config"]["in_preds"] == str(in_path) and report["config"]["temperature_source"] == "none"
    in_logits, out_logits = logits
    truth = np.r_[np.zeros(120), np.ones(80)]
    expected = roc_auc_score(truth, np.r_[_entropy(in_logits.astype(np.float64)), _entropy(out_logits.astype(np.float64))])
    assert results["scores"]["entropy"]["pre"]["auroc"] == pytest.approx(expected, abs=1e-9)
    assert "AUROC % pre" in result.stdout and "entropy" in result.stdout
    assert f"{100 * expected:.2f}" in result.stdout


def test_preds_without_json_prints_only(tmp_path, pred_files):
    before = _files(tmp_path)
    result = runner.invoke(app, ["ood", "--in-preds", str(pred_files[0]), "--out-preds", str(pred_files[1]),
                                 "--scores", "entropy,max-prob,energy"])
    assert result.exit_code == 0, result.output
    assert _files(tmp_path) == before
    for name in ("entropy", "max-prob", "energy"):
        assert name in result.stdout
    assert "in (n=120) vs out (n=80)" in " ".join(result.stdout.split())


def test_preds_with_temperature_option_and_fitted(tmp_path, pred_files):
    report_path = tmp_path / "ood.json"
    args = ["ood", "--in-preds", str(pred_files[0]), "--out-preds", str(pred_files[1]), "--json", str(report_path),
            "--scores", "entropy,max-prob"]
    result = runner.invoke(app, [*args, "--temperature", "2.5"])
    assert result.exit_code == 0, result.output
    report = json.loads(report_path.read_text())
    _check_schema(report, ["entropy", "max-prob"], post=True)
    assert report["results"]["temperature"] == 2.5 and report["results"]["temperature_source"] == "option"
    entropy = report["results"]["scores"]["entropy"]
    assert entropy["post"]["auroc"] != pytest.approx(entropy["pre"]["auroc"], abs=1e-6)
    assert "AUROC % post" in result.stdout

    result = runner.invoke(app, [*args, "--fit-temperature", "--quiet"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1 and "AUROC" in result.stdout  # -q: one summary line
    report = json.loads(report_path.read_text())
    assert report["results"]["temperature_source"] == "fitted" and report["results"]["temperature"] > 1.0


@pytest.fixture()
def fake_checkpoint(tmp_path):
    """An adacal checkpoint for a CIFAR-shaped model (never run: these errors come before any compute)."""
    from adacal.training.checkpoints import make_checkpoint, save_checkpoint

    checkpoint = make_checkpoint(model_name="resnet20", model_options={}, dataset="cifar10", num_classes=10,
                                 input_shape=(3, 32, 32), config={"seed": 0}, epoch=1, model_state={})
    return save_checkpoint(checkpoint, tmp_path / "model.pt")


def _bad_inputs(tmp_path, pred_files, fake_checkpoint):
    nan = np.ones((5, 4), dtype=np.float32)
    nan[2, 1] = np.nan
    np.savez(tmp_path / "nan.npz", logits=nan)
    np.savez(tmp_path / "k3.npz", logits=np.zeros((5, 3), dtype=np.float32))
    np.savez(tmp_path / "empty.npz", logits=np.zeros((0, 4), dtype=np.float32))
    np.savez(tmp_path / "small28.npz", x=np.zeros((6, 28, 28, 3), dtype=np.uint8))
    (tmp_path / "empty_data").mkdir()
    ins, outs = str(pred_files[0]), str(pred_files[1])
    model = ["--model", str(fake_checkpoint)]
    return {
        "neither": ([], r"Expected --model \(with --in and --out\) or --in-preds and --out-preds"),
        "both": ([*model, "--in-preds", ins, "--out-preds", outs], "either --model or --in-preds/--out-preds, not both"),
        "one preds": (["--in-preds", ins], "both --in-preds and --out-preds"),
        "nan": (["--in-preds", ins, "--out-preds", str(tmp_path / "nan.npz")], "nan.npz:logits to be finite"),
        "k mismatch": (["--in-preds", ins, "--out-preds", str(tmp_path / "k3.npz")], "same number of classes, got 4 and 3"),
        "empty": (["--in-preds", ins, "--out-preds", str(tmp_path / "empty.npz")], "at least one sample"),
        "no logits": (["--in-preds", ins, "--out-preds", str(tmp_path / "small28.npz")], "contain logits or test_logits"),
        "missing file": (["--in-preds", ins, "--out-preds", str(tmp_path / "nope.npz")], "does not exist"),
        "fit without val": (["--in-preds", outs, "--out-preds", outs, "--fit-temperature"], "val_logits and val_labels"),
        "bad temperature": (["--in-preds", ins, "--out-preds", outs, "--temperature", "0"], "--temperature to be a positive"),
        "both temperatures": (["--in-preds", ins, "--out-preds", outs, "--temperature", "2", "--fit-temperature"],
                              "not both"),
        "bad score": (["--in-preds", ins, "--out-preds", outs, "--scores", "entropy,energi"],
                      "Unknown OOD score 'energi'. Did you mean 'energy'"),
        "corruption with preds": (["--in-preds", ins, "--out-preds", outs, "--severity", "3"], "only with --model"),
        "no names": ([*model], "Expected --in and --out"),
        "unknown in": ([*model, "--in", "cifar1O", "--out", "svhn"], "Unknown dataset 'cifar1O'.*Choices: .*cifar10"),
        "unknown out": ([*model, "--in", "cifar10", "--out", "svhm"], "Unknown OOD dataset 'svhm'. Did you mean 'svhn'"),
        "severity": ([*model, "--in", "cifar10", "--out", "cifar10-c", "--severity", "7"],
                     "--severity to be an integer from 1 to 5, got 7"),
        "missing model": (["--model", str(tmp_path / "nothing"), "--in", "cifar10", "--out", "svhn"], "does not exist"),
        "not a checkpoint": (["--model", outs, "--in", "cifar10", "--out", "svhn"], "readable torch checkpoint"),
        "shape": ([*model, "--in", "cifar10", "--out", str(tmp_path / "small28.npz")],
                  r"Expected OOD images of shape \(3, 32, 32\) like the model's input, got \(3, 28, 28\)\."),
        "offline": ([*model, "--in", "cifar10", "--out", "svhn", "--no-download", "--data-dir",
                     str(tmp_path / "empty_data")], "SVHN is not in .* download is off"),
    }


CASES = ["neither", "both", "one preds", "nan", "k mismatch", "empty", "no logits", "missing file", "fit without val",
         "bad temperature", "both temperatures", "bad score", "corruption with preds", "no names", "unknown in",
         "unknown out", "severity", "missing model", "not a checkpoint", "shape", "offline"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_error_and_writes_nothing(tmp_path, pred_files, fake_checkpoint, case):
    import re

    args, match = _bad_inputs(tmp_path, pred_files, fake_checkpoint)[case]
    before = _files(tmp_path)
    result = runner.invoke(app, ["ood", *args, "--json", str(tmp_path / "ood.json")])
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    assert re.search(match, lines[0]), lines[0]
    assert "Traceback" not in result.output
    assert _files(tmp_path) == before


def test_help_has_examples():
    result = runner.invoke(app, ["ood", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "adacal ood --in cifar10 --out svhn --model runs/RUN" in text
    assert "--in-preds" in text and "--fit-temperature" in text


# ------------------------------------------------------------------------------------------ with a trained model


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread: on a busy 2-core machine a small CNN runs about twice as fast as with two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, one_thread):
    """resnet20 trained for one epoch on 256 CIFAR-10 images, scored on the first 2,000 test images."""
    if not (SHARED_DATA / "cifar10.npz").is_file():
        pytest.skip(f"shared CIFAR-10 not found at {SHARED_DATA}")
    from adacal.training import TrainConfig, train

    out = tmp_path_factory.mktemp("runs")
    result = train(TrainConfig(dataset="cifar10", data_dir=str(SHARED_DATA), model="resnet20", loss="ce",
                               train_subset=256, epochs=1, batch_size=64, val_size=256, test_subset=2000, out=str(out),
                               device="cpu"))
    return Path(result.run_dir)


def test_trained_model_against_cifar10_c(trained_run, one_thread, tmp_path):
    before = _files(trained_run)
    result = runner.invoke(app, ["ood", "--in", "cifar10", "--out", "cifar10-c", "--severity", "5", "--model",
                                 str(trained_run), "--data-dir", str(SHARED_DATA), "--limit", "1000", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads((trained_run / "ood.json").read_text())
    assert _files(trained_run) == sorted([*before, Path("ood.json")])  # nothing train wrote is touched
    _check_schema(report, ["entropy"], post=False)
    results = report["results"]
    assert results["in"]["n"] == 1000 and results["out"] == {"name": "cifar10-c gaussian_noise s5", "n": 1000}
    assert report["config"]["corruption"] == "gaussian_noise" and report["config"]["severity"] == 5
    assert report["config"]["in_source"] == "predictions.npz"
    assert "AUROC % pre" in result.stdout

    # A checkpoint outside its run folder: the model scores the test and validation sets itself. Its logits must
    # equal those training saved, which checks the normalisation and the split (same seed, same validation size).
    from adacal.ood import ood_from_model
    from adacal.predictions import load_split_predictions

    lone = tmp_path / "lone.pt"
    shutil.copy(trained_run / "checkpoints" / "last.pt", lone)
    in_logits, out_logits, info = ood_from_model(lone, in_name="cifar10", out_name="cifar10-c", data_dir=SHARED_DATA,
                                                 device="cpu", limit=300, seed=3, with_val=True)
    saved = load_split_predictions(trained_run / "predictions.npz")
    picked = np.sort(np.random.default_rng(3).permutation(2000)[:300])  # the run's 2,000 test images
    assert info["in_source"] == "model" and info["run"] is None and out_logits.shape == (300, 10)
    np.testing.assert_allclose(in_logits, saved["test"].logits[picked], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(info["val"].logits, saved["val"].logits, atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(info["val"].labels, saved["val"].labels)
