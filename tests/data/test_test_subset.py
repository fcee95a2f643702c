"""`--test-subset N` (`Dataset.limit_test`): a fixed seeded sample of N test samples with every class in it, N from the
number of classes to the test split's size (anything else refused like --train-subset); runs recorded with the plain
random sample of earlier versions keep it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adacal.cli import app
from adacal.data import load_dataset
from adacal.data.base import TEST_SUBSET_SEED, subset_test_rows
from adacal.errors import InputError
from cli_helpers import one_line_error, runner


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", seed=0)


def _legacy_rows(total: int, n: int) -> np.ndarray:
    """The sample earlier versions kept: numpy default_rng(TEST_SUBSET_SEED).choice, sorted."""
    return np.sort(np.random.default_rng(TEST_SUBSET_SEED).choice(total, size=n, replace=False))


def test_every_class_is_in_the_sample_for_every_n_from_the_number_of_classes(digits):
    labels = digits.test.labels.numpy()
    for n in range(10, 80):
        rows = subset_test_rows(labels, n)
        assert len(rows) == n == len(set(rows.tolist())), n
        assert np.all(np.diff(rows) > 0)  # the test split's own order
        assert set(labels[rows].tolist()) == set(range(10)), n


def test_the_digits_sample_of_ten_holds_one_of_each_class_and_is_the_same_for_every_seed():
    first = load_dataset("digits", seed=0).limit_test(10)
    other = load_dataset("digits", seed=3).limit_test(10)
    assert sorted(first.test.labels.tolist()) == list(range(10))
    assert torch.equal(first.test.inputs, other.test.inputs)
    assert first.split_info["test_subset"] == 10 and first.split_info["test_subset_method"] == "every-class"
    assert first.split_info["sizes"]["test"] == 10


def test_a_sample_that_already_held_every_class_is_the_one_earlier_versions_kept(digits):
    labels = digits.test.labels.numpy()
    for n in (40, 100, 359):
        legacy = _legacy_rows(len(labels), n)
        assert set(labels[legacy].tolist()) == set(range(10))
        np.testing.assert_array_equal(subset_test_rows(labels, n), legacy)
    # The plain random sample is kept for runs recorded with it: for 10 it misses classes.
    np.testing.assert_array_equal(subset_test_rows(labels, 10, method="random"), _legacy_rows(len(labels), 10))
    assert len(set(labels[_legacy_rows(len(labels), 10)].tolist())) < 10


def test_imbalanced_labels_keep_every_class(digits):
    labels = np.array([0] * 500 + [1] * 3 + [2] * 1 + [3] * 496)
    rows = subset_test_rows(labels, 4)
    assert sorted(labels[rows].tolist()) == [0, 1, 2, 3]
    rows = subset_test_rows(labels, 20)
    assert set(labels[rows].tolist()) == {0, 1, 2, 3} and len(rows) == 20


@pytest.mark.parametrize(
    "n, message",
    [(100000, r"Expected test_subset at most 360 \(the test split of digits\), got 100000\."),
     (361, r"at most 360"),
     (5, r"Expected test_subset at least 10 \(one sample of each class in the test split of digits\), got 5\.")],
)
def test_check_test_subset_refuses_what_cannot_be_kept(digits, n, message):
    with pytest.raises(InputError, match=message):
        digits.check_test_subset(n)
    digits.check_test_subset(10)
    digits.check_test_subset(360)
    digits.check_test_subset(None)


@pytest.mark.parametrize("n, fragment", [("100000", "at most 360"), ("5", "at least 10")])
def test_train_refuses_a_test_subset_it_cannot_keep_before_creating_a_run(tmp_path, n, fragment):
    result = runner.invoke(app, ["train", "--epochs", "1", "--train-subset", "32", "--device", "cpu", "--out",
                                 str(tmp_path / "runs"), "--test-subset", n])
    one_line_error(result, f"Expected --test-subset to be {fragment}")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_train_scores_one_test_sample_of_each_class(tmp_path, one_torch_thread):
    with one_torch_thread():
        result = runner.invoke(app, ["train", "--epochs", "1", "--train-subset", "32", "--device", "cpu", "--out",
                                     str(tmp_path), "--name", "t", "--test-subset", "10", "--quiet"])
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "t" / "predictions.npz") as arrays:
        assert sorted(arrays["test_labels"].tolist()) == list(range(10))
    split = json.loads((tmp_path / "t" / "config.json").read_text())["results"]["split"]
    assert split["test_subset"] == 10 and split["test_subset_method"] == "every-class"


def test_a_run_recorded_with_the_random_sample_keeps_it_on_resume_and_evaluate(tmp_path, one_torch_thread):
    """A checkpoint without `split` (written before it was recorded) resumes and is evaluated on the plain random
    sample it was scored on, not on the one that holds every class."""
    from adacal.commands.evaluate import run_evaluate
    from adacal.training import TrainConfig, load_checkpoint, train
    from adacal.training.checkpoints import checkpoint_test_subset_method, save_checkpoint

    with one_torch_thread():
        train(TrainConfig(dataset="digits", device="cpu", epochs=1, train_subset=32, test_subset=10, out=str(tmp_path),
                          name="old"))
        run = tmp_path / "old"
        for which in ("last", "best"):
            checkpoint = load_checkpoint(run / "checkpoints" / f"{which}.pt")
            assert checkpoint_test_subset_method(checkpoint) == "every-class"
            del checkpoint["split"]
            assert checkpoint_test_subset_method(checkpoint) == "random"
            save_checkpoint(checkpoint, run / "checkpoints" / f"{which}.pt")
        labels = load_dataset("digits").test.labels.numpy()
        legacy = labels[_legacy_rows(len(labels), 10)]
        (run / "predictions.npz").unlink()
        (run / "evaluate.json").unlink()
        evaluated = run_evaluate(run, device="cpu", json_path=tmp_path / "e.json")
        assert evaluated.report["results"]["n_samples"] == 10
        np.testing.assert_array_equal(evaluated.source.predictions.labels, legacy)
        (run / "evaluate.json").unlink()
        train(TrainConfig(resume=str(run), epochs=2))
    with np.load(run / "predictions.npz") as arrays:
        np.testing.assert_array_equal(arrays["test_labels"], legacy)
