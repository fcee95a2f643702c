"""Other frameworks' outputs as real tools write them, each read to the numbers the file holds or refused in one
sentence: JSON Lines with Unicode line separators inside strings, upper-case .NPY siblings, Hugging Face's tuple of
model outputs, hard predictions stored as floats, pandas' string and header-less row indices, label columns named as
in the other formats, and .mat files that are HDF5 or Octave text."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adacal.cli import app
from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_scores

from cli_helpers import one_line_error, runner, snapshot

RNG = np.random.default_rng(7)
N, K = 8, 3
LOGITS = RNG.normal(size=(N, K))
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
LABELS = np.array([0, 1, 2, 1, 0, 2, 2, 1])
NAMES = np.array(["ant", "bee", "cat"])


def _csv(path, header, rows):
    lines = ([",".join(header)] if header is not None else []) + [",".join(map(str, row)) for row in rows]
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------ JSON Lines


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_jsonl_lines_end_at_newlines_only_not_at_unicode_line_separators(tmp_path, separator):
    """json.dumps(ensure_ascii=False) leaves U+2028, U+2029 and NEL raw inside strings (a prompt beside the scores);
    str.splitlines broke such a record in two."""
    path = tmp_path / "harness.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for row, label in zip(PROBS, LABELS):
            record = {"doc": f"first{separator}second", "probs": row.tolist(), "label": int(label)}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    assert separator in path.read_text(encoding="utf-8")
    predictions = load_predictions(path)
    np.testing.assert_allclose(predictions.logits, PROBS, rtol=1e-12)
    np.testing.assert_array_equal(predictions.labels, LABELS)


def test_jsonl_with_crlf_and_a_unicode_separator_via_the_cli(tmp_path):
    path = tmp_path / "harness.jsonl"
    path.write_bytes("".join(json.dumps({"q": "a\u2028b", "logits": row.tolist(), "label": int(label)},
                                        ensure_ascii=False) + "\r\n"
                             for row, label in zip(LOGITS, LABELS)).encode("utf-8"))
    result = runner.invoke(app, ["evaluate", str(path), "--json", "-", "--metrics", "error"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["results"]["n_samples"] == N
    expected = float((LOGITS.argmax(axis=1) != LABELS).mean())
    assert report["results"]["metrics"]["error"] == pytest.approx(expected)


# ------------------------------------------------------------------------------------------------ .npy siblings


@pytest.mark.parametrize("suffix", [".NPY", ".Npy"])
def test_npy_labels_beside_scores_with_the_same_upper_case_suffix(tmp_path, suffix):
    scores = tmp_path / f"SCORES{suffix}"
    with scores.open("wb") as handle:  # np.save would append ".npy" to a name not ending in it
        np.save(handle, LOGITS)
    with (tmp_path / f"SCORES_labels{suffix}").open("wb") as handle:
        np.save(handle, LABELS)
    predictions = load_predictions(scores)
    np.testing.assert_array_equal(predictions.logits, LOGITS)
    np.testing.assert_array_equal(predictions.labels, LABELS)
    assert any(f"SCORES_labels{suffix}" in note for note in predictions.notes)


def test_stem_labels_still_win_over_labels_beside_an_upper_case_npy(tmp_path):
    with (tmp_path / "X.NPY").open("wb") as handle:
        np.save(handle, LOGITS)
    np.save(tmp_path / "X_labels.npy", LABELS)
    with (tmp_path / "labels.NPY").open("wb") as handle:
        np.save(handle, LABELS[::-1].copy())
    np.testing.assert_array_equal(load_predictions(tmp_path / "X.NPY").labels, LABELS)


# ------------------------------------------------------------------------------------------------ Hugging Face


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("extra_shape", [(N, 4, 5), (N, K)])
def test_hugging_face_tuple_of_model_outputs_reads_its_first_item(tmp_path, kind, extra_shape):
    """Trainer.predict's `predictions` is a tuple (logits, hidden states, ...) when the model outputs more than
    logits; its examples use predictions[0]. Saved with torch.save(output._asdict()) it was read as batches."""
    extra = np.zeros(extra_shape, dtype=np.float32)
    logits = LOGITS.astype(np.float32)
    if kind == "torch":
        predictions, label_ids = (torch.from_numpy(logits), torch.from_numpy(extra)), torch.from_numpy(LABELS)
    else:
        predictions, label_ids = (logits, extra), LABELS
    path = tmp_path / "trainer_predict.pt"
    torch.save({"predictions": predictions, "label_ids": label_ids, "metrics": {"test_loss": 0.5}}, path)
    read = load_predictions(path)
    np.testing.assert_array_equal(read.logits, logits.astype(np.float64))
    np.testing.assert_array_equal(read.labels, LABELS)
    assert any("tuple of 2 arrays" in note for note in read.notes)


def test_hugging_face_tuple_without_labels_for_ood_scores(tmp_path):
    path = tmp_path / "ood.pt"
    torch.save({"predictions": (torch.from_numpy(LOGITS), torch.zeros(N, 2, 7))}, path)
    np.testing.assert_array_equal(load_scores(path), LOGITS)


def test_per_batch_lists_under_predictions_are_still_concatenated(tmp_path):
    path = tmp_path / "batches.pt"
    torch.save({"predictions": [torch.from_numpy(LOGITS[:5]), torch.from_numpy(LOGITS[5:])],
                "label_ids": [torch.from_numpy(LABELS[:5]), torch.from_numpy(LABELS[5:])]}, path)
    read = load_predictions(path)
    np.testing.assert_array_equal(read.logits, LOGITS)
    np.testing.assert_array_equal(read.labels, LABELS)


# ------------------------------------------------------------------------------------------------ hard predictions


@pytest.mark.parametrize("key, values", [
    ("preds", np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0])),  # y_pred.astype(float) of a binary model
    ("y_pred", np.eye(K, dtype=np.float32)[LABELS]),  # keras.utils.to_categorical(y_pred)
    ("predictions", np.eye(K)[LABELS[::-1]]),  # np.eye(K)[y_pred]
    ("y_pred", np.array([[0.0], [1.0], [1.0], [0.0], [1.0], [0.0], [0.0], [1.0]])),
])
def test_hard_predictions_stored_as_floats_are_refused(tmp_path, key, values):
    """Before, 0.0 / 1.0 passed for probabilities and every metric described the hard predictions."""
    labels = LABELS if np.ndim(values) == 2 and np.shape(values)[1] == K else (LABELS % 2)
    np.savez(tmp_path / "p.npz", **{key: values, "y_true": labels})
    with pytest.raises(InputError, match="hard class predictions carry no confidence"):
        load_predictions(tmp_path / "p.npz")


@pytest.mark.parametrize("key", ["preds", "y_pred", "predictions"])
def test_float_scores_under_prediction_keys_are_still_read(tmp_path, key):
    binary = np.array([0.1, 0.9, 0.5, 0.0, 1.0, 0.2, 0.3, 0.7])
    np.savez(tmp_path / "p.npz", **{key: PROBS, "y_true": LABELS})
    np.testing.assert_allclose(load_predictions(tmp_path / "p.npz").logits, PROBS)
    np.savez(tmp_path / "b.npz", **{key: binary, "y_true": LABELS % 2})
    np.testing.assert_allclose(load_predictions(tmp_path / "b.npz").logits[:, 1], binary)


def test_float_hard_predictions_refused_through_the_cli(tmp_path):
    np.savez(tmp_path / "p.npz", y_pred=np.eye(K, dtype=np.float32)[LABELS], y_true=LABELS)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "p.npz")])
    one_line_error(result, "hard class predictions")
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------------ CSV


def test_pandas_string_index_named_id_is_dropped(tmp_path):
    """df.set_index('id').to_csv(): sample ids (file names) first, under 'id'; before, read as scores and refused."""
    rows = [[f"img_{i:03d}.png", *row, NAMES[label]] for i, (row, label) in enumerate(zip(PROBS, LABELS))]
    _csv(tmp_path / "p.csv", ["id", *NAMES, "label"], rows)
    read = load_predictions(tmp_path / "p.csv")
    np.testing.assert_allclose(read.logits, PROBS, rtol=1e-12)
    np.testing.assert_array_equal(read.labels, LABELS)
    assert read.classes == tuple(NAMES)
    assert any("row index" in note for note in read.notes)


def test_pandas_unnamed_string_index_is_dropped(tmp_path):
    rows = [[f"s{i}", *row, label] for i, (row, label) in enumerate(zip(LOGITS, LABELS))]
    _csv(tmp_path / "p.csv", ["", "a", "b", "c", "label"], rows)
    read = load_predictions(tmp_path / "p.csv")
    np.testing.assert_allclose(read.logits, LOGITS, rtol=1e-12)
    np.testing.assert_array_equal(read.labels, LABELS)


def test_pandas_index_without_header_is_dropped(tmp_path):
    """df.to_csv(header=False) keeps the row numbers 0..N-1: before, they became a fourth class's scores."""
    rows = [[i, *row, label] for i, (row, label) in enumerate(zip(PROBS, LABELS))]
    _csv(tmp_path / "p.csv", None, rows)
    read = load_predictions(tmp_path / "p.csv")
    assert read.logits.shape == (N, K)
    np.testing.assert_allclose(read.logits, PROBS, rtol=1e-12)
    np.testing.assert_array_equal(read.labels, LABELS)
    assert any("row index" in note for note in read.notes)


def test_headerless_first_column_that_is_not_a_row_count_is_kept(tmp_path):
    scores = np.c_[np.array([3, 1, 4, 1, 5, 9, 2, 6]), LOGITS]
    _csv(tmp_path / "p.csv", None, [[*row, label] for row, label in zip(scores, LABELS % 4)])
    read = load_predictions(tmp_path / "p.csv")
    np.testing.assert_allclose(read.logits, scores, rtol=1e-12)


@pytest.mark.parametrize("name", ["y_true", "label_ids", "true_labels"])
def test_label_column_named_as_in_other_formats_is_found_anywhere(tmp_path, name):
    rows = [[label, *row] for row, label in zip(LOGITS, LABELS)]
    _csv(tmp_path / "p.csv", [name, "a", "b", "c"], rows)
    read = load_predictions(tmp_path / "p.csv")
    np.testing.assert_allclose(read.logits, LOGITS, rtol=1e-12)
    np.testing.assert_array_equal(read.labels, LABELS)
    assert read.classes == ("a", "b", "c")


# ------------------------------------------------------------------------------------------------ .mat


def test_mat_that_is_plain_hdf5_gets_the_v7_hint(tmp_path):
    (tmp_path / "p.mat").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(1024))
    with pytest.raises(InputError, match="HDF5.*-v7"):
        load_predictions(tmp_path / "p.mat")


def test_octave_text_mat_gets_a_hint_through_the_cli(tmp_path):
    (tmp_path / "p.mat").write_text("# Created by Octave 8.4.0, Mon Jan 01 00:00:00 2024 UTC <u@h>\n# name: logits\n"
                                    "# type: matrix\n# rows: 2\n# columns: 2\n 1 2\n 3 4\n")
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "p.mat")])
    one_line_error(result, "Octave's text format", "-v7")
    assert snapshot(tmp_path) == before
