"""adacal.interpretation.labels: labels from any spelling — class names through a `classes` array or a CSV header,
indices written as text, a labels file or one beside the scores — and a validation file's classes put in the test
file's order by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.commands.inputs import resolve_calibration_input
from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.sources import ReadOptions

from reading_fixtures import K, LABELS, LOGITS, N, csv_text, same


def test_npy_with_labels_file_or_sibling(tmp_path):
    np.save(tmp_path / "logits.npy", LOGITS)
    with pytest.raises(InputError, match=r"give --labels FILE or put them in logits_labels.npy \(or labels.npy\)"):
        load_predictions(tmp_path / "logits.npy")
    np.save(tmp_path / "labels.npy", (LABELS + 2) % K)
    same(load_predictions(tmp_path / "logits.npy"), labels=(LABELS + 2) % K)  # the CIFAR-10-C layout
    np.save(tmp_path / "logits_labels.npy", LABELS)  # <stem>_labels.npy wins over labels.npy
    pred = load_predictions(tmp_path / "logits.npy")
    same(pred)
    assert pred.notes[-1].endswith("labels read from logits_labels.npy beside it")
    np.savez(tmp_path / "lab.npz", targets=LABELS)
    np.save(tmp_path / "logits_labels.npy", (LABELS + 1) % K)  # the explicit file wins over the sibling
    same(load_predictions(tmp_path / "logits.npy", options=ReadOptions(labels_file=tmp_path / "lab.npz")))
    (tmp_path / "lab.csv").write_text("label\n" + "\n".join(map(str, LABELS)) + "\n")
    same(load_predictions(tmp_path / "logits.npy", options=ReadOptions(labels_file=tmp_path / "lab.csv")))


def test_csv_string_labels_map_through_the_header(tmp_path):
    names = ["cat", "dog", "bird", "fish"]
    rows = [[*LOGITS[i], names[LABELS[i]]] for i in range(N)]
    (tmp_path / "s.csv").write_text(csv_text(rows, [*names, "label"]))
    pred = load_predictions(tmp_path / "s.csv")
    same(pred, LOGITS.astype(np.float64))
    assert any("class names mapped" in note for note in pred.notes)
    rows[5][-1] = "zebra"
    (tmp_path / "bad.csv").write_text(csv_text(rows, [*names, "label"]))
    with pytest.raises(InputError, match="one of the 4 classes in .*'zebra' is not"):
        load_predictions(tmp_path / "bad.csv")


def test_string_labels_with_classes_array(tmp_path):
    names = np.array(["ant", "bee", "cow", "doe"])
    np.savez(tmp_path / "s.npz", logits=LOGITS, labels=names[LABELS], classes=names)
    same(load_predictions(tmp_path / "s.npz"))
    np.savez(tmp_path / "none.npz", logits=LOGITS, labels=names[LABELS])
    with pytest.raises(InputError, match="got strings; add a 'classes' array"):
        load_predictions(tmp_path / "none.npz")
    np.savez(tmp_path / "short.npz", logits=LOGITS, labels=names[LABELS], classes=names[:3])
    with pytest.raises(InputError, match="to name the 4 classes, got 3"):
        load_predictions(tmp_path / "short.npz")


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_class_indices_written_as_text_are_read_as_integers(tmp_path, suffix):
    """"3" is class 3 when there are no class names to look it up in (a CSV's cells are read so already)."""
    path = tmp_path / f"t{suffix}"
    text_labels = LABELS.astype(str)
    if suffix == ".npz":
        np.savez(path, logits=LOGITS, labels=text_labels)
    else:
        path.write_text("".join(json.dumps({"logits": row.tolist(), "label": label}) + "\n"
                                for row, label in zip(LOGITS.astype(float), text_labels)))
    pred = load_predictions(path)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert f"{path.name}:label{'s' if suffix == '.npz' else ''}: class indices written as text, read as integers" \
        in pred.notes
    np.savez(tmp_path / "mixed.npz", logits=LOGITS, labels=np.where(LABELS == 0, "cat", text_labels))
    with pytest.raises(InputError, match="got strings; add a 'classes' array"):
        load_predictions(tmp_path / "mixed.npz")
    # With class names, text is always a name: "1" is the class named "1", wherever it is.
    np.savez(tmp_path / "named.npz", logits=LOGITS, labels=text_labels, classes=np.array(["3", "2", "1", "0"]))
    np.testing.assert_array_equal(load_predictions(tmp_path / "named.npz").labels, 3 - LABELS)


def test_a_validation_file_with_its_classes_in_another_order_is_put_in_the_test_files_order(tmp_path):
    """Both files name their columns (CSV headers, `classes` arrays) with the same names in another order: the
    validation columns and labels are permuted by name (vector scaling fitted on the other order scrambled classes)."""
    names = ["cat", "dog", "eel", "fox"]
    probs = softmax(LOGITS.astype(np.float64))

    def write(path, rows, labels, columns):
        lines = [",".join(columns + ["label"])]
        lines += [",".join(f"{v:.17g}" for v in row) + f",{columns[y]}" for row, y in zip(rows, labels)]
        path.write_text("\n".join(lines) + "\n")

    order = [3, 1, 0, 2]
    write(tmp_path / "test.csv", probs[20:], LABELS[20:], names)
    write(tmp_path / "val.csv", probs[:20][:, order], np.argsort(order)[LABELS[:20]], [names[i] for i in order])
    inputs = resolve_calibration_input(tmp_path / "test.csv", val=tmp_path / "val.csv")
    np.testing.assert_allclose(inputs.val.logits, probs[:20], rtol=1e-15)
    np.testing.assert_array_equal(inputs.val.labels, LABELS[:20])
    assert any("val.csv: columns and labels put in test.csv's class order (cat, dog, eel, fox)" in note
               for note in inputs.notes)
    # The same order, or names that differ (another naming), are read by position; the latter with a note
    np.savez(tmp_path / "val.npz", probs=probs[:20], labels=LABELS[:20], classes=np.array(names))
    same(resolve_calibration_input(tmp_path / "test.csv", val=tmp_path / "val.npz").val, probs[:20], LABELS[:20])
    np.savez(tmp_path / "other.npz", probs=probs[:20], labels=LABELS[:20], classes=np.array(["a", "b", "c", "d"]))
    inputs = resolve_calibration_input(tmp_path / "test.csv", val=tmp_path / "other.npz")
    same(inputs.val, probs[:20], LABELS[:20])
    assert any("columns matched by position" in note for note in inputs.notes)
