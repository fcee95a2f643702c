"""`adacal ood --out FILE.npz` for models that do not read images: a digits model scores float feature vectors
(N, 64) given exactly as the digits loader makes them, shapes it cannot take are one-line errors naming (N, 64), a
text model's refusal says what it would need; and --device is checked by name even when no model runs."""

import json

import numpy as np
import pytest
import torch

from adacal.cli import app
from adacal.data import load_dataset, load_ood_set
from adacal.errors import InputError
from adacal.commands.ood import run_ood
from adacal.ood import ood_from_model

from cli_helpers import one_line_error, runner, snapshot


@pytest.fixture(scope="module")
def digits_test():
    """The digits test inputs as the loader makes them: float32 (360, 64) in [0, 1]."""
    return load_dataset("digits").test.inputs.numpy()


def test_the_test_set_given_as_a_file_is_scored_exactly_like_the_in_distribution_set(digits_run, digits_test,
                                                                                     tmp_path, one_torch_thread):
    """No rescaling or normalisation is added to vectors: the model's own test inputs, saved as an OOD file, give the
    very logits of its test set (so the two sets cannot be told apart)."""
    path = tmp_path / "same.npz"
    np.savez(path, x=digits_test)
    with one_torch_thread():
        in_logits, out_logits, info = ood_from_model(digits_run, out_name=str(path), device="cpu")
    assert in_logits.shape == out_logits.shape == (360, 10)
    np.testing.assert_allclose(out_logits, in_logits, atol=1e-5)
    assert info["out_source"] == "file" and info["out_range"]["expected"] == [0.0, 1.0]


def test_cli_scores_a_file_of_feature_vectors_and_writes_the_report(digits_run, digits_test, tmp_path,
                                                                    one_torch_thread):
    rng = np.random.default_rng(0)
    path = tmp_path / "noise.npz"
    np.savez(path, test_x=rng.random((50, 64)), test_y=rng.integers(0, 10, 50))  # float64 is read as float32
    out = tmp_path / "ood.json"
    with one_torch_thread():
        result = runner.invoke(app, ["ood", "--model", str(digits_run), "--out", str(path), "--json", str(out),
                                     "--device", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["results"]["out"]["n"] == 50 and report["config"]["out_source"] == "file"
    assert 0.0 <= report["results"]["scores"]["entropy"]["pre"]["auroc"] <= 1.0
    assert "beyond the digits training data's range" not in result.output  # values in [0, 1]: nothing to say


def test_features_outside_the_training_range_are_scored_with_a_note(digits_run, tmp_path, one_torch_thread):
    """sklearn's raw digits (0-16, not divided by 16) are a likely slip: scored as given, and said so."""
    from sklearn.datasets import load_digits

    path = tmp_path / "raw.npz"
    np.savez(path, x=load_digits().data[:40])
    with one_torch_thread():
        run = run_ood(model=digits_run, out_name=str(path), device="cpu", json_path=tmp_path / "raw.json")
    assert run.config["out_range"]["max"] == 16.0
    assert any("span [0, 16], beyond the digits training data's range [0, 1]" in note for note in run.notes)


@pytest.mark.parametrize("array, found", [
    (np.zeros((5, 8, 8, 1), dtype=np.uint8), "got uint8 of shape (5, 8, 8, 1)"),  # an image file
    (np.zeros((5, 63), dtype=np.float32), "got float32 of shape (5, 63)"),
    (np.zeros((5, 64, 1), dtype=np.float32), "got float32 of shape (5, 64, 1)"),
    (np.zeros(64, dtype=np.float32), "got float32 of shape (64,)"),
    (np.zeros((5, 64), dtype=np.int64), "got dtype int64"),  # raw 0-16 counts
])
def test_inputs_a_vector_model_cannot_take_are_one_line_errors_naming_the_shape(digits_run, tmp_path, array, found):
    path = tmp_path / "bad.npz"
    np.savez(path, x=array)
    before = snapshot(digits_run)
    result = runner.invoke(app, ["ood", "--model", str(digits_run), "--out", str(path), "--device", "cpu"])
    one_line_error(result, "(N, 64)", found, "bad.npz")
    assert snapshot(digits_run) == before


@pytest.mark.parametrize("array, message", [
    (np.zeros((0, 64), dtype=np.float32), "at least one sample"),
    (np.full((3, 64), np.nan, dtype=np.float32), "NaN or infinity"),
    (np.full((3, 64), 1e300), "NaN or infinity"),  # beyond float32
])
def test_empty_or_non_finite_vectors_are_refused(tmp_path, array, message):
    path = tmp_path / "v.npz"
    np.savez(path, x=array)
    with pytest.raises(InputError, match=message):
        load_ood_set(str(path), input_kind="vector", input_shape=(64,))


def test_vectors_cannot_be_corrupted(digits_run, digits_test, tmp_path):
    path = tmp_path / "v.npz"
    np.savez(path, x=digits_test[:10])
    result = runner.invoke(app, ["ood", "--model", str(digits_run), "--out", str(path), "--corruption",
                                 "gaussian_noise", "--device", "cpu"])
    one_line_error(result, "Expected images for corruption 'gaussian_noise'", "feature vectors")


def test_a_text_model_refuses_an_ood_file_saying_what_it_would_need(tmp_path):
    from adacal.models import build_model
    from adacal.training.checkpoints import make_checkpoint, save_checkpoint

    model = build_model("textcnn", num_classes=4, input_shape=(20,), vocab_size=50, embedding_dim=8, num_filters=2,
                        kernel_sizes=[3])
    options = {"vocab_size": 50, "embedding_dim": 8, "num_filters": 2, "kernel_sizes": [3]}
    checkpoint = save_checkpoint(make_checkpoint(
        model_name="textcnn", model_options=options, dataset="20newsgroups", num_classes=4, input_shape=(20,),
        config={}, epoch=1, model_state=model.state_dict()), tmp_path / "text.pt")
    path = tmp_path / "texts.npz"
    np.savez(path, x=np.zeros((3, 20), dtype=np.int64))
    result = runner.invoke(app, ["ood", "--model", str(checkpoint), "--out", str(path), "--device", "cpu"])
    one_line_error(result, "text model", "token ids (N, 20) of its training vocabulary", "--in-preds/--out-preds")


def test_an_image_file_still_reads_as_before_for_the_library_default(tmp_path):
    path = tmp_path / "img.npz"
    np.savez(path, x=np.zeros((4, 8, 8, 3), dtype=np.uint8))
    ood = load_ood_set(str(path))
    assert ood.shape == (3, 8, 8) and ood.split.inputs.dtype == torch.uint8


# ------------------------------------------------------------------------------------------------------- --device


@pytest.fixture
def saved_logits(tmp_path):
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "a.npz", logits=rng.normal(size=(20, 3)))
    np.savez(tmp_path / "b.npz", logits=rng.normal(size=(15, 3)))
    return tmp_path / "a.npz", tmp_path / "b.npz"


@pytest.mark.parametrize("device", ["foo", "gpu", "cuda:x", ""])
def test_a_device_typo_is_refused_even_when_no_model_runs(saved_logits, device):
    a, b = saved_logits
    result = runner.invoke(app, ["ood", "--in-preds", str(a), "--out-preds", str(b), "--device", device])
    one_line_error(result, "Expected --device to be auto, cpu, cuda or cuda:N", repr(device))


@pytest.mark.parametrize("device", ["auto", "CPU", " cuda:1 "])
def test_a_device_name_is_accepted_with_saved_logits_whether_or_not_it_exists(saved_logits, device):
    """As `adacal evaluate`: the name is checked; whether that CUDA device exists only matters when a model runs."""
    a, b = saved_logits
    result = runner.invoke(app, ["ood", "--in-preds", str(a), "--out-preds", str(b), "--device", device, "-q"])
    assert result.exit_code == 0, result.output


def test_a_device_typo_is_refused_before_a_model_is_loaded(digits_run):
    with pytest.raises(InputError, match="Expected --device to be auto, cpu, cuda or cuda:N, got 'foo'"):
        run_ood(model=digits_run, out_name="digits", device="foo")
    with pytest.raises(InputError, match="got 'foo'"):
        ood_from_model(digits_run, out_name="digits", device="foo")
