"""`adacal.commands.shift.run_shift`: a tiny CIFAR-shaped model scored under shift, checked against the metrics of
the same logits computed independently, Hendrycks' files preferred where present, and bad input refused before any
work."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from adacal.errors import InputError
from tiny_runs import tiny_cifar_run


@pytest.fixture(scope="module")
def one_thread(one_torch_thread):
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, one_thread):
    """tiny_runs.tiny_cifar_run: a one-epoch resnet20 on a 40-image test subset, and fog s5 in Hendrycks' layout
    holding the clean test set itself."""
    data = tmp_path_factory.mktemp("tiny-cifar")
    run, _ = tiny_cifar_run(data, tmp_path_factory.mktemp("runs"))
    return run, data


def _shift(run, tmp_path, **options):
    from adacal.commands.shift import run_shift

    options.setdefault("device", "cpu")
    options.setdefault("cache_dir", tmp_path / "cache")
    return run_shift(run, **options)


def test_each_set_is_the_metrics_of_its_logits_and_fog_s5_from_the_files_is_the_clean_set(tiny_run, tmp_path):
    from adacal.interpretation import load_split_predictions
    from adacal.metrics import compute_metrics
    from adacal.sources.documents import read_report

    run, data = tiny_run
    shifted = _shift(run, tmp_path, corruptions="gaussian_noise,fog", severities="1,5", temperature=1.7)
    results = shifted.results
    assert shifted.written == run / "shift-gaussian_noise+fog-s1+5.json"
    assert read_report(shifted.written, kind="shift")["results"]["n"] == 40  # the run's 40-image test subset

    # The clean row is the run's saved test predictions, before and after T.
    saved = load_split_predictions(run / "predictions.npz")["test"]
    for stage, logits in (("pre", saved.logits), ("post", saved.logits / 1.7)):
        expected = compute_metrics(logits, saved.labels, names=["error", "nll", "ece-em", "ece-ew", "ece-debias"])
        for key, value in expected.items():
            assert results["clean"][stage][key] == pytest.approx(value, abs=1e-12)

    sets = {(e["corruption"], e["severity"]): e for e in results["sets"]}
    assert sorted(sets) == [("fog", 1), ("fog", 5), ("gaussian_noise", 1), ("gaussian_noise", 5)]
    # fog is read from Hendrycks' files; severity 5 there holds the clean images: the clean metrics (to float noise
    # of another batch composition).
    assert sets["fog", 5]["source"] == "hendrycks-files" and sets["gaussian_noise", 5]["source"] == "generated"
    for key in ("error", "ece_em", "nll"):
        assert sets["fog", 5]["pre"][key] == pytest.approx(results["clean"]["pre"][key], abs=1e-5)
    # gaussian_noise s5 scored independently: the public generator on the whole clean test set, written as a data
    # folder whose test split is the corrupted images, then the ordinary checkpoint evaluation (same test subset).
    from adacal.data import corrupt, read_image_npz, write_image_npz
    from adacal.training.inference import predict_checkpoint

    arrays = read_image_npz(data / "cifar10.npz")
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    write_image_npz(noisy / "cifar10.npz", train_x=arrays["train_x"], train_y=arrays["train_y"],
                    test_x=corrupt(arrays["test_x"], "gaussian_noise", severity=5, seed=0), test_y=arrays["test_y"],
                    classes=[f"c{i}" for i in range(10)])
    independent = predict_checkpoint(run / "checkpoints" / "last.pt", data_dir=noisy, device="cpu")
    expected = compute_metrics(independent.logits, independent.labels, names=["error", "ece-em", "nll"])
    for key, value in expected.items():
        assert sets["gaussian_noise", 5]["pre"][key] == pytest.approx(value, abs=1e-5)

    # The summary per severity is the spread over the corruptions' sets.
    block = results["by_severity"]["5"]
    values = [sets[c, 5]["post"]["ece_em"] for c in ("gaussian_noise", "fog")]
    assert block["sets"] == 2 and block["post"]["ece_em"]["mean"] == pytest.approx(np.mean(values))
    assert block["post"]["ece_em"]["std"] == pytest.approx(np.std(values, ddof=1))
    assert results["sources"] == {"generated": ["gaussian_noise"], "hendrycks-files": ["fog"]}
    assert any("Hendrycks" in note for note in shifted.notes) and any("Generated" in note for note in shifted.notes)


def test_temperature_comes_from_calibrate_json_else_is_fitted_on_clean_validation(tiny_run, tmp_path):
    from adacal.interpretation import load_split_predictions
    from adacal.ood.scores import fit_temperature

    run, _ = tiny_run
    first = _shift(run, tmp_path, corruptions="gaussian_noise", severities="5", json_path=tmp_path / "a.json")
    val = load_split_predictions(run / "predictions.npz")["val"]
    assert first.results["temperature_source"] == "fitted"
    assert first.results["temperature"] == pytest.approx(fit_temperature(val.logits, val.labels))
    calibration = {"schema_version": 1, "kind": "calibrate", "results": {"calibrators": {
        "temperature": {"params": {"temperature": 2.5}}}, "best": "temperature"}}
    (run / "calibrate.json").write_text(json.dumps(calibration))
    try:
        second = _shift(run, tmp_path, corruptions="gaussian_noise", severities="5", json_path=tmp_path / "b.json")
        forced = _shift(run, tmp_path, corruptions="gaussian_noise", severities="5", json_path=tmp_path / "c.json",
                        fit_temperature=True)
    finally:
        (run / "calibrate.json").unlink()
    assert (second.results["temperature"], second.results["temperature_source"]) == (2.5, "calibrate.json")
    assert forced.results["temperature_source"] == "fitted"


def test_a_second_call_reads_the_cached_sets_and_gives_the_same_figures(tiny_run, tmp_path):
    run, _ = tiny_run
    options = {"corruptions": "gaussian_noise,contrast", "severities": "2", "temperature": 1.0}
    first = _shift(run, tmp_path, json_path=tmp_path / "first.json", **options)
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*.npy"))
    assert len(cached) == 2  # one uint8 array per generated set
    second = _shift(run, tmp_path, json_path=tmp_path / "second.json", **options)
    assert first.results["sets"] == second.results["sets"]
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*.npy")) == cached


def test_limit_scores_the_same_images_in_every_set(tiny_run, tmp_path):
    run, _ = tiny_run
    shifted = _shift(run, tmp_path, corruptions="fog", severities="5", limit=15, seed=3, temperature=1.0)
    assert shifted.results["n"] == 15 and shifted.results["sets"][0]["n"] == 15
    # fog s5 is the clean set in the files: the same 15 images give the same figures.
    for key in ("error", "ece_em"):
        assert shifted.results["sets"][0]["pre"][key] == pytest.approx(shifted.results["clean"]["pre"][key], abs=1e-5)
    assert shifted.written.name == "shift-fog-s5-n15.json"


def _count_images(monkeypatch):
    """Record the number of images of every split the model is run on (`CheckpointModel.predict`, the one path from
    a checkpoint to logits)."""
    from adacal.training.inference import CheckpointModel

    seen: list[int] = []
    predict = CheckpointModel.predict

    def counting(self, split, **options):
        seen.append(len(split))
        return predict(self, split, **options)

    monkeypatch.setattr(CheckpointModel, "predict", counting)
    return seen


@pytest.mark.parametrize("saved", [True, False], ids=["clean-from-predictions.npz", "clean-scored"])
def test_limit_runs_the_model_on_the_limited_images_only_and_scores_them_as_directly(tiny_run, tmp_path,
                                                                                     monkeypatch, saved):
    """--limit 15 of the run's 40 test images: the model sees 15 images per set (and for the clean set, when it is
    scored rather than read from predictions.npz), and each set's figures are those of scoring the same 15 images
    directly: the ordinary checkpoint evaluation of a data folder holding the corrupted images, at the rows --limit
    picks (a seeded sample of the 40)."""
    from adacal.commands.shift import _ModelScorer
    from adacal.data import corrupt, read_image_npz, write_image_npz
    from adacal.interpretation import load_split_predictions
    from adacal.metrics import compute_metrics
    from adacal.ood.model import limit_indices
    from adacal.training.inference import predict_checkpoint

    run, data = tiny_run
    names = ["error", "nll", "ece_em", "ece_ew", "ece_debias"]
    # Scored before the model is wrapped: the 40 test-subset images of gaussian_noise s2, generated with --seed 3
    # (the seed of the corruptions and of --limit).
    independent = {}
    arrays = read_image_npz(data / "cifar10.npz")
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    write_image_npz(noisy / "cifar10.npz", train_x=arrays["train_x"], train_y=arrays["train_y"],
                    test_x=corrupt(arrays["test_x"], "gaussian_noise", severity=2, seed=3), test_y=arrays["test_y"],
                    classes=[f"c{i}" for i in range(10)])
    independent["gaussian_noise"] = predict_checkpoint(run / "checkpoints" / "last.pt", data_dir=noisy, device="cpu")
    clean = load_split_predictions(run / "predictions.npz")["test"]

    if not saved:
        monkeypatch.setattr(_ModelScorer, "_saved_predictions", lambda self: None)
    seen = _count_images(monkeypatch)
    shifted = _shift(run, tmp_path, corruptions="gaussian_noise,fog", severities="2,5", limit=15, seed=3,
                     temperature=1.5)
    assert seen == ([] if saved else [15]) + [15] * 4  # clean (when scored), then 2 corruptions x 2 severities

    rows = limit_indices(40, 15, 3)
    assert len(rows) == 15 and shifted.results["n"] == 15
    for stage, scale in (("pre", 1.0), ("post", 1.5)):
        expected = compute_metrics(clean.logits[rows] / scale, clean.labels[rows], names=names)
        for key, value in expected.items():
            assert shifted.results["clean"][stage][key] == pytest.approx(value, abs=1e-5)
    sets = {(e["corruption"], e["severity"]): e for e in shifted.results["sets"]}
    direct = independent["gaussian_noise"]
    expected = compute_metrics(direct.logits[rows], direct.labels[rows], names=names)
    for key, value in expected.items():
        assert sets["gaussian_noise", 2]["pre"][key] == pytest.approx(value, abs=1e-5)
    for key in names:  # fog s5 in the files is the clean images: the clean figures of the same 15
        assert sets["fog", 5]["pre"][key] == pytest.approx(shifted.results["clean"]["pre"][key], abs=1e-5)


@pytest.mark.parametrize("kept, message", [
    (30, r"to hold the 40 clean test images in order, but it holds 30: generated"),
    (50, r"to hold the clean test images in order \(its labels differ from the test labels\): generated"),
])
def test_a_shifted_set_that_is_not_the_test_images_is_refused_before_the_model_runs_on_it(tiny_run, tmp_path,
                                                                                           monkeypatch, kept, message):
    """A set that does not hold the run's test images is refused in one line naming it, with or without --limit, and
    the model never scores it: cut to 30 of the 60 (fewer than the run's 40), or to 50, of which the test subset's
    rule keeps 40 others (labels in another order)."""
    import dataclasses

    import adacal.data.corruptions as corruptions

    run, _ = tiny_run
    load = corruptions.load_shifted_set

    def cut(*args, **options):
        found = load(*args, **options)
        return dataclasses.replace(found, split=found.split.subset(np.arange(kept)))

    monkeypatch.setattr(corruptions, "load_shifted_set", cut)
    for limit in (None, 15):
        seen = _count_images(monkeypatch)
        with pytest.raises(InputError, match=r"^Expected the brightness severity-1 set " + message):
            _shift(run, tmp_path, corruptions="brightness", severities="1", temperature=1.0, limit=limit)
        assert seen == []


def test_without_limit_the_model_sees_every_test_image_once_per_set(tiny_run, tmp_path, monkeypatch):
    run, _ = tiny_run
    seen = _count_images(monkeypatch)
    shifted = _shift(run, tmp_path, corruptions="brightness", severities="1,3", temperature=1.0)
    assert seen == [40, 40] and shifted.results["n"] == 40


@pytest.mark.parametrize("options, message", [
    ({"corruptions": "fgo"}, "fog"),
    ({"corruptions": "fog,fog"}, "once"),
    ({"corruptions": ""}, "--corruptions"),
    ({"severities": "0"}, "--severities"),
    ({"severities": "6"}, "--severities"),
    ({"severities": "1,1"}, "once"),
    ({"severities": "a"}, "--severities"),
    ({"temperature": -1.0}, "--temperature"),
    ({"temperature": 2.0, "fit_temperature": True}, "not both"),
    ({"limit": 0}, "--limit"),
    ({"batch_size": 0}, "--batch-size"),
    ({"n_bins": 1}, "--bins"),
    ({"device": "gpu0"}, "device"),
])
def test_bad_options_are_refused_before_any_work(tiny_run, tmp_path, options, message):
    run, _ = tiny_run
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(InputError, match=message):
        _shift(run, tmp_path, **options)
    assert sorted(p.name for p in run.iterdir()) == before and not (tmp_path / "cache").exists()


def test_a_vector_model_is_refused_naming_why(tmp_path, one_thread):
    from adacal.training import TrainConfig, train

    result = train(TrainConfig(dataset="digits", device="cpu", epochs=1, train_subset=64, batch_size=32,
                               out=str(tmp_path / "runs")))
    with pytest.raises(InputError, match="image model"):
        _shift(result.run_dir, tmp_path)


def test_a_tiny_imagenet_run_is_shifted_with_the_tiny_imagenet_table_and_says_so(tmp_path, one_thread):
    """A 64 x 64 run takes Hendrycks' Tiny-ImageNet-C parameters (not CIFAR's), recorded per set and in the notes;
    each set equals the public generator's output with that table, scored by the ordinary checkpoint evaluation."""
    from adacal.data import corrupt, read_image_npz, write_image_npz
    from adacal.training import TrainConfig, train
    from adacal.training.inference import predict_checkpoint

    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(4)
    write_image_npz(data / "tiny-imagenet.npz", train_x=rng.integers(0, 256, (48, 64, 64, 3), dtype=np.uint8),
                    train_y=np.arange(48) % 4, test_x=rng.integers(0, 256, (12, 64, 64, 3), dtype=np.uint8),
                    test_y=np.arange(12) % 4, classes=[f"n{i}" for i in range(4)])
    run = Path(train(TrainConfig(dataset="tiny-imagenet", data_dir=str(data), model="resnet20", loss="ce", epochs=1,
                                 batch_size=16, val_size=16, out=str(tmp_path / "runs"), device="cpu")).run_dir)
    shifted = _shift(run, tmp_path, corruptions="gaussian_noise", severities="5", temperature=1.0)
    results = shifted.report["results"]
    (entry,) = results["sets"]
    assert entry["table"] == "tiny-imagenet" and results["table"] == "tiny-imagenet"
    assert any("Tiny-ImageNet-C parameters (64x64; each image saved as JPEG quality 85" in note
               for note in shifted.notes)

    arrays = read_image_npz(data / "tiny-imagenet.npz")
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    made = corrupt(arrays["test_x"], "gaussian_noise", severity=5, seed=0, table="tiny-imagenet")
    assert not np.array_equal(made, corrupt(arrays["test_x"], "gaussian_noise", severity=5, seed=0))
    write_image_npz(noisy / "tiny-imagenet.npz", train_x=arrays["train_x"], train_y=arrays["train_y"],
                    test_x=made, test_y=arrays["test_y"], classes=[f"n{i}" for i in range(4)])
    independent = predict_checkpoint(run / "checkpoints" / "last.pt", data_dir=noisy, device="cpu")
    from adacal.metrics import compute_metrics

    expected = compute_metrics(independent.logits, independent.labels, names=("error", "ece_em"))
    assert entry["pre"]["error"] == pytest.approx(expected["error"])
    assert entry["pre"]["ece_em"] == pytest.approx(expected["ece_em"], abs=1e-6)


def test_severity_and_corruption_parsing():
    from adacal.commands.shift import parse_corruptions, parse_severities
    from adacal.data.corruptions import shift_corruptions

    assert parse_severities("4-5") == [4, 5] and parse_severities("5,1") == [1, 5] and parse_severities(None) == [
        1, 2, 3, 4, 5]
    assert parse_corruptions("all") == list(shift_corruptions()) and parse_corruptions("Fog, contrast") == [
        "fog", "contrast"]


def test_report_names_say_what_a_partial_report_holds():
    from adacal.shift import shift_report_name

    suite = ["a", "b"]
    assert shift_report_name(["a", "b"], [1, 2, 3, 4, 5], suite=suite, limit=None) == "shift.json"
    assert shift_report_name(["a", "b"], [1, 2, 3, 4, 5], suite=suite, limit=100) == "shift-all-s1-5-n100.json"
    assert shift_report_name(["b"], [2, 4], suite=suite, limit=None) == "shift-b-s2+4.json"


def test_a_real_cifar10_model_under_shift(tmp_path, one_thread, real_data_file):
    """On real CIFAR-10: a ResNet-20 trained briefly, scored on 300 test images under two generated corruptions.
    Contrast at severity 5 leaves about 40 % of the dynamic range: the model's error there is no better than clean."""
    from adacal.sources.documents import read_report
    from adacal.training import TrainConfig, train

    real_data = real_data_file("cifar10.npz").parent
    result = train(TrainConfig(dataset="cifar10", data_dir=str(real_data), model="resnet20", loss="ce",
                               train_subset=512, epochs=2, batch_size=64, val_size=256, test_subset=1000,
                               out=str(tmp_path / "runs"), device="cpu", channels_last=True))
    shifted = _shift(result.run_dir, tmp_path, corruptions="contrast,jpeg_compression", severities="1,5", limit=300)
    results = read_report(shifted.written, kind="shift")["results"]
    assert results["n"] == 300 and results["temperature_source"] == "fitted"
    assert results["sources"] == {"generated": ["contrast", "jpeg_compression"]}
    sets = {(e["corruption"], e["severity"]): e for e in results["sets"]}
    assert sets["contrast", 5]["pre"]["error"] >= results["clean"]["pre"]["error"] - 0.02
    for entry in results["sets"]:
        assert entry["pre"]["error"] == entry["post"]["error"]  # T never changes the argmax


def test_kept_logits_are_the_ones_each_set_was_scored_from_and_write_false_writes_nothing(tiny_run, tmp_path):
    from adacal.metrics import compute_metrics

    run, _ = tiny_run
    before = sorted(p.name for p in run.iterdir())
    shifted = _shift(run, tmp_path, corruptions="gaussian_noise", severities="2,5", temperature=1.3, write=False,
                     keep_logits=True)
    assert shifted.written is None and sorted(p.name for p in run.iterdir()) == before
    assert sorted(shifted.logits) == ["clean", "gaussian_noise s2", "gaussian_noise s5"]
    for entry in shifted.results["sets"]:
        logits = shifted.logits[f"{entry['corruption']} s{entry['severity']}"]
        assert logits.shape == (40, 10)
        expected = compute_metrics(logits, shifted.labels, names=["ece-em", "nll"])
        assert entry["pre"]["ece_em"] == pytest.approx(expected["ece_em"], abs=1e-12)
        assert entry["pre"]["nll"] == pytest.approx(expected["nll"], abs=1e-12)
    assert _shift(run, tmp_path, corruptions="gaussian_noise", severities="5", temperature=1.3,
                  write=False).logits is None
