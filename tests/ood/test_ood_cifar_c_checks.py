"""`adacal ood` checks before it scores: Hendrycks' CIFAR-10-C files must hold the clean test set's images in order
(checked against the test labels of cifar10.npz: counts, label range, each severity's labels), a set scored against
itself gives exactly 50 % AUROC however few images --limit keeps, and a named OOD set whose inputs a model cannot take
is refused from its spec, before anything is loaded or downloaded."""

import numpy as np
import pytest

from adacal.cli import app
from adacal.data import load_ood_set, write_image_npz
from adacal.data.corruptions import check_cifar_c_arrays, cifar_test_labels
from adacal.errors import InputError
from adacal.commands.ood import run_ood
from adacal.ood import ood_from_model

from cli_helpers import one_line_error, runner, snapshot

N_TEST = 20  # the fake CIFAR-10 test set: CIFAR-10-C files of 5 x 20 images match it


def _cifar_files(root, *, labels=None, per_severity=N_TEST):
    """A fake cifar10.npz (20 test images, labels 0-9 twice) and Hendrycks-layout fog.npy / labels.npy beside it."""
    rng = np.random.default_rng(0)
    test_y = np.arange(N_TEST) % 10
    write_image_npz(root / "cifar10.npz", train_x=rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8),
                    train_y=np.arange(40) % 10, test_x=rng.integers(0, 256, (N_TEST, 32, 32, 3), dtype=np.uint8),
                    test_y=test_y, classes=[f"c{i}" for i in range(10)])
    folder = root / "CIFAR-10-C"
    folder.mkdir(exist_ok=True)
    np.save(folder / "fog.npy", np.zeros((5 * per_severity, 32, 32, 3), dtype=np.uint8))
    np.save(folder / "labels.npy", np.tile(np.arange(per_severity) % 10, 5) if labels is None else labels)
    return test_y


# ------------------------------------------------------------------------------------- the checking function


def test_matching_arrays_pass_and_give_int64_labels():
    test_y = np.arange(N_TEST) % 10
    labels = check_cifar_c_arrays(np.zeros((100, 32, 32, 3), np.uint8), np.tile(test_y, 5).astype(np.uint8),
                                  test_labels=test_y)
    assert labels.dtype == np.int64 and labels.shape == (100,)


@pytest.mark.parametrize("images, labels, match", [
    # CIFAR-100-C labels in a CIFAR-10-C folder: out of CIFAR-10's range.
    ((100, 32, 32, 3), np.tile(np.arange(20) * 5, 5), r"labels\.npy to hold CIFAR-10 labels 0 \.\.\. 9, got values "
                                                      r"from 0 to 95 .*CIFAR-100-C in a CIFAR-10-C folder"),
    # The published 10,000 per severity against a 20-image test set (sizes checked from the header only).
    ((50000, 32, 32, 3), np.tile(np.arange(10000) % 10, 5), r"fog\.npy to hold 5 severities of the 20 CIFAR-10 test "
                                                             r"images of T\.npz, uint8 of shape \(100, 32, 32, 3\), "
                                                             r"got \(50000, 32, 32, 3\)"),
    ((100, 16, 16, 3), np.tile(np.arange(20) % 10, 5), r"uint8 of shape \(100, 32, 32, 3\), got \(100, 16, 16, 3\)"),
    # Another order (sorted by class): the rows are not the test images in order.
    ((100, 32, 32, 3), np.tile(np.sort(np.arange(20) % 10), 5),
     r"each severity of labels\.npy to hold the CIFAR-10 test labels of T\.npz in order, but severity 1 differs in "
     r"18 of 20 rows \(row 1 is 0, not 1\)"),
])
def test_files_that_do_not_match_the_test_set_are_one_line_errors(images, labels, match):
    mapped = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), images, (0,) * 4)  # no 150 MB for 50,000 images
    with pytest.raises(InputError, match=match) as info:
        check_cifar_c_arrays(mapped, labels, test_labels=np.arange(20) % 10, test_source="T.npz",
                             images_path="fog.npy", labels_path="labels.npy")
    assert "\n" not in str(info.value)


def test_without_test_labels_the_severities_must_agree():
    labels = np.tile(np.arange(20) % 10, 5)
    labels[67] = 9  # severity 4, image 7
    with pytest.raises(InputError, match=r"severity 4 differs in 1 of 20 rows \(row 67 is 9, not 7\)"):
        check_cifar_c_arrays(np.zeros((100, 32, 32, 3), np.uint8), labels)


def test_cifar100_c_is_checked_against_its_100_classes():
    test_y = np.arange(N_TEST) * 5
    check_cifar_c_arrays(np.zeros((100, 32, 32, 3), np.uint8), np.tile(test_y, 5), dataset="cifar100",
                         test_labels=test_y)


# ---------------------------------------------------------------------- loading, pointed at a small test set


def test_the_test_labels_are_read_from_cifar10_npz_and_the_files_checked_against_them(tmp_path):
    test_y = _cifar_files(tmp_path)
    found, path = cifar_test_labels("cifar10", tmp_path)
    np.testing.assert_array_equal(found, test_y)
    assert path == tmp_path / "cifar10.npz" and cifar_test_labels("cifar10", tmp_path / "none") is None
    ood = load_ood_set("cifar10-c", data_dir=tmp_path, corruption="fog", test_labels=found, download=False)
    assert ood.source == "hendrycks-files" and ood.size == N_TEST
    np.testing.assert_array_equal(ood.split.labels.numpy(), test_y)

    np.save(tmp_path / "CIFAR-10-C" / "labels.npy", np.tile(np.roll(test_y, 1), 5))
    with pytest.raises(InputError, match=r"labels\.npy to hold the CIFAR-10 test labels of .*cifar10\.npz in order"):
        load_ood_set("cifar10-c", data_dir=tmp_path, corruption="fog", test_labels=found, test_source=str(path),
                     download=False)


# ------------------------------------------------------------------------------------ through a trained model


@pytest.mark.parametrize("limit, seed, batch_size", [(1, 0, 512), (1, 5, 7), (3, 1, 2), (None, 0, 512)])
def test_the_models_own_test_set_against_itself_is_exactly_one_half(digits_run, tmp_path, one_torch_thread, limit,
                                                                    seed, batch_size):
    """In-distribution logits from predictions.npz, the OOD side once recomputed with another batch size: float noise
    ranked the same image apart (AUROC 0 or 100 % with --limit 1)."""
    with one_torch_thread():
        run = run_ood(model=digits_run, out_name="digits", device="cpu", limit=limit, seed=seed,
                      batch_size=batch_size, scores="entropy,max-prob,energy", json_path=tmp_path / "self.json")
    assert run.config["in_source"] == "predictions.npz"
    assert run.results["in"]["n"] == run.results["out"]["n"] == (limit or 360)
    for entry in run.results["scores"].values():
        assert entry["pre"]["auroc"] == 0.5


def test_a_file_of_other_inputs_is_still_scored_by_the_model(digits_run, one_torch_thread, tmp_path):
    path = tmp_path / "noise.npz"
    np.savez(path, x=np.random.default_rng(0).random((5, 64)).astype(np.float32))
    with one_torch_thread():
        in_logits, out_logits, _ = ood_from_model(digits_run, out_name=str(path), device="cpu", limit=5)
    assert in_logits.shape == out_logits.shape == (5, 10) and not np.allclose(in_logits, out_logits)


@pytest.mark.parametrize("out", ["svhn", "cifar10", "cifar100-c", "20newsgroups"])
def test_a_named_set_of_another_shape_is_refused_before_it_is_loaded(digits_run, tmp_path, monkeypatch, out):
    """A digits model reads (64,): SVHN's (3, 32, 32) is known from its spec, so nothing is loaded or downloaded."""
    import adacal.data.corruptions.ood_sets as corruptions  # where the OOD sets are loaded
    import adacal.data.text as text

    def never(*args, **kwargs):
        raise AssertionError("the set was loaded")

    monkeypatch.setattr(corruptions, "load_image_arrays", never)
    monkeypatch.setattr(corruptions, "load_dataset", never)
    monkeypatch.setattr(text, "load_newsgroup_records", never)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["ood", "--model", str(digits_run), "--out", out, "--data-dir", str(tmp_path / "d"),
                                 "--device", "cpu"])
    found = f"got {out}, a text dataset" if out == "20newsgroups" else f"got (3, 32, 32) ({out})"
    one_line_error(result, "Expected OOD inputs of shape (64,) like the model's input", found)
    assert snapshot(tmp_path) == before


def test_an_in_distribution_set_of_another_shape_is_refused_before_it_is_loaded(digits_run, monkeypatch):
    import adacal.data.corruptions.ood_sets as corruptions

    monkeypatch.setattr(corruptions, "load_image_arrays", lambda *a, **k: pytest.fail("the OOD set was loaded"))
    with pytest.raises(InputError, match=r"Expected in-distribution inputs of shape \(64,\) .* got \(3, 32, 32\) "
                                         r"\(cifar10\)"):
        ood_from_model(digits_run, in_name="cifar10", out_name="digits", device="cpu")
