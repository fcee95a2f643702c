"""`adacal ood` through CliRunner: saved logits end to end, one-line errors that write nothing, and a trained model."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from adacal.cli import app

from cli_helpers import one_line_error, runner
from tiny_runs import tiny_cifar_run

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
    # only how each file was read (one line each): nothing was assumed
    assert [line.split(" read ")[0] for line in result.stderr.splitlines()][:2] == ["Note: in:", "Note: out:"]
    report = json.loads(report_path.read_text())
    _check_schema(report, ["entropy"], post=False)
    results = report["results"]
    assert results["in"] == {"name": "mine", "n": 120} and results["out"] == {"name": "noise", "n": 80}
    assert results["temperature"] is None and results["temperature_source"] == "none"
    assert report["config"]["in_preds"] == str(in_path) and report["config"]["temperature_source"] == "none"
    in_logits, out_logits = logits
    truth = np.r_[np.zeros(120), np.ones(80)]
    expected = roc_auc_score(truth,
                             np.r_[_entropy(in_logits.astype(np.float64)), _entropy(out_logits.astype(np.float64))])
    assert results["scores"]["entropy"]["pre"]["auroc"] == pytest.approx(expected, abs=1e-9)
    assert "AUROC %" in result.stdout and "as given" in result.stdout and "entropy" in result.stdout
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
    assert "/ T" in result.stdout

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
        "neither": ([], r"Expected --model RUN \(a run folder or checkpoint of the classifier\) or --in-preds and "
                        r"--out-preds\.$"),
        "both": ([*model, "--in-preds", ins, "--out-preds", outs],
                 "either --model or --in-preds/--out-preds, not both"),
        "one preds": (["--in-preds", ins], "both --in-preds and --out-preds"),
        "nan": (["--in-preds", ins, "--out-preds", str(tmp_path / "nan.npz")], "nan.npz:logits to be finite"),
        "k mismatch": (["--in-preds", ins, "--out-preds", str(tmp_path / "k3.npz")],
                       "same number of classes, got 4 and 3"),
        "empty": (["--in-preds", ins, "--out-preds", str(tmp_path / "empty.npz")], "at least one sample"),
        "no logits": (["--in-preds", ins, "--out-preds", str(tmp_path / "small28.npz")],
                      "contain logits or test_logits"),
        "missing file": (["--in-preds", ins, "--out-preds", str(tmp_path / "nope.npz")], "does not exist"),
        "fit without val": (["--in-preds", outs, "--out-preds", outs, "--fit-temperature"],
                            "val_logits and val_labels"),
        "bad temperature": (["--in-preds", ins, "--out-preds", outs, "--temperature", "0"],
                            "--temperature to be a positive"),
        "both temperatures": (["--in-preds", ins, "--out-preds", outs, "--temperature", "2", "--fit-temperature"],
                              "not both"),
        "bad score": (["--in-preds", ins, "--out-preds", outs, "--scores", "entropy,energi"],
                      "Unknown OOD score 'energi'. Did you mean 'energy'"),
        "corruption with preds": (["--in-preds", ins, "--out-preds", outs, "--severity", "3"], "only with --model"),
        "no names": ([*model, "--in", "cifar10"], r"Expected --out \(the OOD set"),
        "unknown in": ([*model, "--in", "cifar1O", "--out", "svhn"], "Unknown dataset 'cifar1O'.*Choices: .*cifar10"),
        "unknown out": ([*model, "--in", "cifar10", "--out", "svhm"],
                        "Unknown OOD dataset 'svhm'. Did you mean 'svhn'"),
        "severity": ([*model, "--in", "cifar10", "--out", "cifar10-c", "--severity", "7"],
                     "--severity to be an integer from 1 to 5, got 7"),
        "missing model": (["--model", str(tmp_path / "nothing"), "--in", "cifar10", "--out", "svhn"], "does not exist"),
        "not a checkpoint": (["--model", outs, "--in", "cifar10", "--out", "svhn"], "readable torch checkpoint"),
        "shape": ([*model, "--in", "cifar10", "--out", str(tmp_path / "small28.npz")],
                  r"Expected OOD inputs of shape \(3, 32, 32\) like the model's input, got \(3, 28, 28\)\."),
        "offline": ([*model, "--in", "cifar10", "--out", "svhn", "--no-download", "--data-dir",
                     str(tmp_path / "empty_data")], "SVHN is not in .* download is off"),
        "corruption without files": ([*model, "--out", "cifar10-c", "--corruption", "snow", "--data-dir",
                                      str(tmp_path / "empty_data")], r"snow\.npy and labels\.npy\), but Hendrycks'"),
        "unknown corruption": ([*model, "--out", "cifar10-c", "--corruption", "gausian_noise"],
                               "Unknown corruption 'gausian_noise'. Did you mean 'gaussian_noise'"),
    }


CASES = ["neither", "both", "one preds", "nan", "k mismatch", "empty", "no logits", "missing file", "fit without val",
         "bad temperature", "both temperatures", "bad score", "corruption with preds", "no names", "unknown in",
         "unknown out", "severity", "missing model", "not a checkpoint", "shape", "offline", "corruption without files",
         "unknown corruption"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_error_and_writes_nothing(tmp_path, pred_files, fake_checkpoint, case):
    import re

    args, match = _bad_inputs(tmp_path, pred_files, fake_checkpoint)[case]
    before = _files(tmp_path)
    result = runner.invoke(app, ["ood", *args, "--json", str(tmp_path / "ood.json")])
    line = one_line_error(result)
    assert re.search(match, line), line
    assert _files(tmp_path) == before


def test_help_has_examples():
    result = runner.invoke(app, ["ood", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "adacal ood --out svhn --model runs/RUN" in text and "ood-cifar10-c-gaussian_noise-5.json" in text
    assert "--in-preds" in text and "--fit-temperature" in text


# ------------------------------------------------------------------------------------------ with a trained model


@pytest.fixture(scope="module")
def one_thread(one_torch_thread):
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, one_thread, real_data_file):
    """resnet20 trained for one epoch on 256 CIFAR-10 images, scored on the first 2,000 test images."""
    real_data = real_data_file("cifar10.npz").parent
    from adacal.training import TrainConfig, train

    out = tmp_path_factory.mktemp("runs")
    result = train(TrainConfig(dataset="cifar10", data_dir=str(real_data), model="resnet20", loss="ce",
                               train_subset=256, epochs=1, batch_size=64, val_size=256, test_subset=2000, out=str(out),
                               device="cpu"))
    return Path(result.run_dir)


def test_trained_model_against_cifar10_c(trained_run, one_thread, tmp_path, real_data_file):
    real_data = real_data_file("cifar10.npz").parent
    before = _files(trained_run)
    result = runner.invoke(app, ["ood", "--in", "cifar10", "--out", "cifar10-c", "--severity", "5", "--model",
                                 str(trained_run), "--data-dir", str(real_data), "--limit", "1000", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    name = "ood-cifar10-c-gaussian_noise-5.json"
    report = json.loads((trained_run / name).read_text())
    assert _files(trained_run) == sorted([*before, Path(name)])  # nothing train wrote is touched
    _check_schema(report, ["entropy"], post=False)
    results = report["results"]
    assert results["in"]["n"] == 1000 and results["out"] == {"name": "cifar10-c gaussian_noise s5", "n": 1000}
    assert report["config"]["corruption"] == "gaussian_noise" and report["config"]["severity"] == 5
    assert report["config"]["in_source"] == "predictions.npz" and report["config"]["out_source"] == "generated"
    # The run was scored on a 2,000-image test subset: the OOD side is the corrupted copies of those images.
    assert report["config"]["out_subsample"]["from"] == 10000 and report["config"]["out_subsample"]["to"] == 2000
    assert "AUROC %" in result.stdout

    # A checkpoint outside its run folder: the model scores the test and validation sets itself. Its logits must
    # equal those training saved, which checks the normalisation and the split (same seed, same validation size).
    from adacal.ood import ood_from_model
    from adacal.predictions import load_split_predictions

    lone = tmp_path / "lone.pt"
    shutil.copy(trained_run / "checkpoints" / "last.pt", lone)
    in_logits, out_logits, info = ood_from_model(lone, in_name="cifar10", out_name="cifar10-c", data_dir=real_data,
                                                 device="cpu", limit=300, seed=3, with_val=True)
    saved = load_split_predictions(trained_run / "predictions.npz")
    picked = np.sort(np.random.default_rng(3).permutation(2000)[:300])  # the run's 2,000 test images
    assert info["in_source"] == "model" and info["run"] is None and out_logits.shape == (300, 10)
    np.testing.assert_allclose(in_logits, saved["test"].logits[picked], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(info["val"].logits, saved["val"].logits, atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(info["val"].labels, saved["val"].labels)


# ------------------------------------------------------------- a tiny model on synthetic CIFAR-shaped data (offline)


@pytest.fixture(scope="module")
def tiny_cifar(tmp_path_factory, one_thread):
    """tiny_runs.tiny_cifar_run (a one-epoch resnet20 on a 40-image test subset, fog s5 in Hendrycks' layout holding
    the clean test set itself), plus other_images.npz: 70 random images as a file OOD set."""
    data = tmp_path_factory.mktemp("tiny-cifar")
    run, _ = tiny_cifar_run(data, tmp_path_factory.mktemp("runs"))
    np.savez(data / "other_images.npz", x=np.random.default_rng(1).integers(0, 256, (70, 32, 32, 3), dtype=np.uint8))
    return run, data


def _ood(*args):
    result = runner.invoke(app, ["ood", "--device", "cpu", *args])
    assert result.exit_code == 0, result.output
    return result


def test_one_report_per_ood_set_beside_what_train_wrote(tiny_cifar, one_thread):
    run, data = tiny_cifar
    before = _files(run)
    generated = _ood("--out", "cifar10-c", "--model", str(run), "--data-dir", str(data), "--no-download")  # no file
    from_files = _ood("--out", "cifar10-c", "--corruption", "fog", "--model", str(run), "--data-dir", str(data))
    images = _ood("--out", str(data / "other_images.npz"), "--model", str(run))
    names = ["ood-cifar10-c-fog-5.json", "ood-cifar10-c-gaussian_noise-5.json", "ood-other_images.json"]
    assert _files(run) == sorted([*before, *map(Path, names)])  # side by side; nothing train wrote is touched
    reports = {name: json.loads((run / name).read_text()) for name in names}
    for report in reports.values():
        _check_schema(report, ["entropy"], post=False)
        assert report["config"]["in"] == "cifar10"  # --in defaulted to the model's dataset
    # Which images were scored is in the report and in the output.
    generated_config = reports["ood-cifar10-c-gaussian_noise-5.json"]["config"]
    assert generated_config["out_source"] == "generated" and generated_config["out_table"] == "cifar"
    assert ("gaussian_noise generated by adacal with Hendrycks' CIFAR-10-C / CIFAR-100-C parameters (32x32)"
            in " ".join(generated.stderr.split()))
    fog = reports["ood-cifar10-c-fog-5.json"]["config"]
    assert fog["out_source"] == "hendrycks-files" and fog["out_files"][0] == str(data / "CIFAR-10-C" / "fog.npy")
    assert "Hendrycks' CIFAR-C file" in " ".join(from_files.stderr.split())
    assert "Wrote " in images.stdout and "ood-other_images.json" in images.stdout

    # `plot roc RUN` finds every report of the run: one curve per OOD set, each labelled apart.
    from adacal.plots import roc_inputs

    inputs = roc_inputs([run])
    assert len(inputs) == 3 and len({item.label for item in inputs}) == 3
    assert sorted(item.results["out"]["name"] for item in inputs) == sorted(
        ["cifar10-c fog s5", "cifar10-c gaussian_noise s5", str(data / "other_images.npz")])
    assert runner.invoke(app, ["plot", "roc", str(run), "--out", str(data / "roc.png")]).exit_code == 0


def test_a_test_subset_run_is_compared_with_as_many_ood_images(tiny_cifar, one_thread):
    run, data = tiny_cifar
    from adacal.ood import ood_from_model

    # CIFAR-10-C: the corrupted copies of the very 40 test images the model was scored on. Severity 5 of this 'fog'
    # is the clean test set, so both sides are the same images: equal logits row by row, AUROC exactly 0.5.
    in_logits, out_logits, info = ood_from_model(run, out_name="cifar10-c", corruption="fog", data_dir=data,
                                                 device="cpu")
    assert in_logits.shape == out_logits.shape == (40, 10)
    np.testing.assert_allclose(out_logits, in_logits, atol=1e-4, rtol=1e-4)
    assert info["out_subsample"]["from"] == 60 and info["out_subsample"]["to"] == 40 and info["out_size"] == 60
    result = _ood("--out", "cifar10-c", "--corruption", "fog", "--model", str(run), "--data-dir", str(data),
                  "--json", str(data / "fog.json"))
    report = json.loads((data / "fog.json").read_text())
    assert report["results"]["in"]["n"] == report["results"]["out"]["n"] == 40
    assert report["results"]["scores"]["entropy"]["pre"]["auroc"] == pytest.approx(0.5, abs=1e-6)
    assert "OOD set subsampled from 60 to 40" in " ".join(result.stderr.split())

    # Another set: a seeded random 40 of its 70 images; --limit then applies to both sides alike.
    _, out_logits, info = ood_from_model(run, out_name=str(data / "other_images.npz"), device="cpu")
    assert out_logits.shape == (40, 10) and info["out_subsample"]["from"] == 70
    in_logits, out_logits, info = ood_from_model(run, out_name="cifar10-c", corruption="fog", data_dir=data,
                                                 device="cpu", limit=15, seed=2)
    assert in_logits.shape == out_logits.shape == (15, 10)
    np.testing.assert_allclose(out_logits, in_logits, atol=1e-4, rtol=1e-4)  # still the same images, pair by pair
    assert info["out_subsample"]["to"] == 40 and info["out_subsample"]["limited_to"] == 15
    result = _ood("--out", "cifar10-c", "--corruption", "fog", "--model", str(run), "--data-dir", str(data),
                  "--limit", "15", "--json", str(data / "fog15.json"))
    assert "OOD set subsampled from 60 to 40" in " ".join(result.stderr.split())
    assert "then 15 of them by --limit" in " ".join(result.stderr.split())  # the note says what was scored


def test_sets_of_different_sizes_are_said_so(tmp_path, logits):
    in_logits, out_logits = logits
    np.savez(tmp_path / "in.npz", logits=in_logits)
    np.savez(tmp_path / "out.npz", logits=out_logits)
    result = _ood("--in-preds", str(tmp_path / "in.npz"), "--out-preds", str(tmp_path / "out.npz"))
    assert "The sets differ in size (120 in-distribution, 80 OOD)" in " ".join(result.stderr.split())
    np.savez(tmp_path / "out.npz", logits=out_logits[:120] if len(out_logits) >= 120 else in_logits[::-1])
    result = _ood("--in-preds", str(tmp_path / "in.npz"), "--out-preds", str(tmp_path / "out.npz"))
    assert "differ in size" not in result.stdout


def test_a_temperature_fitted_at_the_edge_of_its_grid_is_flagged(tmp_path, logits):
    in_logits, out_logits = logits
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 200)
    # Confident and right half of the time, with logit gaps of 200: even T = 10 (the grid's top) leaves them
    # overconfident, so the ECE-minimising T is the top of the grid, not a true optimum.
    predicted = np.where(rng.random(200) < 0.5, labels, (labels + 1) % 4)
    val_logits = 200.0 * np.eye(4)[predicted]
    np.savez(tmp_path / "in.npz", test_logits=in_logits, val_logits=val_logits, val_labels=labels)
    np.savez(tmp_path / "out.npz", logits=out_logits)
    args = ["--in-preds", str(tmp_path / "in.npz"), "--out-preds", str(tmp_path / "out.npz"), "--json"]
    result = _ood(*args, str(tmp_path / "edge.json"), "--fit-temperature")
    config = json.loads((tmp_path / "edge.json").read_text())["config"]
    assert config["temperature"] == 10.0 and config["temperature_edge"] == {"edge": "upper", "range": [0.1, 10.0]}
    assert "is at the upper edge of its search range [0.1, 10]" in " ".join(result.stderr.split())
    # A T from --temperature is the user's choice, not a fit: never flagged, even on the same value.
    result = _ood(*args, str(tmp_path / "given.json"), "--temperature", "10")
    assert json.loads((tmp_path / "given.json").read_text())["config"]["temperature_edge"] is None
    assert "edge" not in result.stdout


@pytest.mark.parametrize("value, objective, edge", [
    (10.0, "ece-em", "upper"), (0.1, "ece-em", "lower"), (0.1, "ece-ew", "lower"), (1.3, "ece-em", None),
    (9.9, "ece-em", None), (20.0, "nll", "upper"), (19.999999, "nll", "upper"), (0.05, "nll", "lower"),
    (19.0, "nll", None), (0.06, "nll", None),
])
def test_temperature_edges(value, objective, edge):
    from adacal.ood import temperature_edge

    found = temperature_edge(value, objective=objective)
    assert (found and found["edge"]) == edge or (found is None and edge is None)


@pytest.mark.parametrize("out, corruption, severity, name", [
    ("svhn", None, None, "ood-svhn.json"),
    ("cifar10-c", "gaussian_noise", 5, "ood-cifar10-c-gaussian_noise-5.json"),
    ("cifar100-c", "fog", 2, "ood-cifar100-c-fog-2.json"),
    ("/data/sets/My Images.npz", None, None, "ood-My_Images.json"),
    ("svhn_logits.pt", None, None, "ood-svhn_logits.json"),
    ("SVHN", "gaussian_noise", 3, "ood-svhn-gaussian_noise-3.json"),
])
def test_report_names(out, corruption, severity, name):
    from adacal.ood import ood_report_name

    assert ood_report_name(out, corruption, severity) == name


def test_what_reading_the_files_assumed_is_said_and_recorded(tmp_path):
    """One model's decision scores, of which the in-distribution set happens to lie in [0, 1]: read alike (both
    decision scores, as the OOD set proves they are), and each file's reading is a note (stderr with --json -) and
    config.assumed in the report, as evaluate says it."""
    rng = np.random.default_rng(2)
    np.save(tmp_path / "in.npy", rng.random(60))
    np.save(tmp_path / "out.npy", 3.0 * rng.normal(size=60))
    args = ("--in-preds", str(tmp_path / "in.npy"), "--out-preds", str(tmp_path / "out.npy"))
    shown = " ".join(_ood(*args).stderr.split())
    assert ("Note: in.npy: 1-D scores in [0, 1] taken as binary decision scores (logits) s (columns 0, s), as another "
            "set of the same model's scores lies outside [0, 1]") in shown
    assert "Note: out.npy: 1-D scores outside [0, 1] taken as binary decision scores" in shown
    piped = _ood(*args, "--json", "-")
    assert "in.npy: 1-D scores in [0, 1]" in piped.stderr
    assumed = json.loads(piped.stdout)["config"]["assumed"]
    assert len(assumed) == 2 and assumed[0].startswith("in.npy: 1-D scores") and assumed[1].startswith("out.npy")


def test_the_models_own_dataset_as_the_ood_set_is_noted(tmp_path):
    from adacal.commands.ood import ood_notes

    results = {"in": {"n": 10}, "out": {"n": 10}}
    config = {"model": "runs/r", "in": "digits", "out": "digits", "corruption": None}
    assert any("the model's own dataset (digits" in note for note in ood_notes(results, config))
    assert not any("own dataset" in note for note in ood_notes(results, {**config, "out": "svhn"}))
    assert not any("own dataset" in note for note in ood_notes(results, {**config, "model": None}))
