"""adacal.interpretation.labels: labels that are class values (scikit-learn names the columns of `predict_proba` by
`classes_`, and its labels are those values) looked up by value, with a note; refused in one line naming
--labels-are where both readings fit and differ; never silently by position. A `classes` array the labels do not need
(unreadable, or of another length) is ignored with a note, and refused only where the labels need it.

Files are written as the tools write them: np.savez of `classes_`, a JSON `classes` array, and the CSV text of
`pd.DataFrame(P, columns=clf.classes_).assign(label=y).to_csv(index=False)` written by hand (pandas-free) and, where
pandas and scikit-learn are installed, by them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.interpretation.labels import interpret_labels
from adacal.sources import ReadOptions

from cli_helpers import one_line_error, runner

RNG = np.random.default_rng(3939)
N, K = 200, 3
PROBS = RNG.dirichlet(np.full(K, 0.7), size=N)
POSITIONS = np.array([RNG.choice(K, p=row) for row in PROBS])  # the true column of each sample's class


def figures(probs, labels) -> tuple[float, float]:
    """(error, NLL) computed directly from probabilities and column positions."""
    return (float(np.mean(probs.argmax(axis=1) != labels)),
            float(-np.mean(np.log(probs[np.arange(len(labels)), labels]))))


def assert_truth(pred, probs=PROBS, positions=POSITIONS) -> None:
    np.testing.assert_array_equal(pred.labels, positions)
    np.testing.assert_allclose(pred.logits, probs, rtol=1e-12)
    assert figures(pred.logits, pred.labels) == pytest.approx(figures(probs, positions))


def header_csv(classes, probs, labels) -> str:
    """`pd.DataFrame(probs, columns=classes).assign(label=labels).to_csv(index=False)`, written by hand."""
    lines = [",".join([*map(str, classes), "label"])]
    lines += [",".join([*(repr(float(v)) for v in row), str(label)]) for row, label in zip(probs, labels)]
    return "\n".join(lines) + "\n"


def write(path, classes, labels, probs=PROBS):
    """The predictions in the format of `path`'s suffix, naming their columns by `classes`."""
    classes, labels = np.asarray(classes), np.asarray(labels)
    if path.suffix == ".npz":
        np.savez(path, y_proba=probs, y_true=labels, classes=classes)
    elif path.suffix == ".json":
        path.write_text(json.dumps({"probs": probs.tolist(), "labels": labels.tolist(),
                                    "classes": classes.tolist()}))
    else:
        path.write_text(header_csv(classes, probs, labels))
    return path


@pytest.mark.parametrize("suffix", [".npz", ".json", ".csv"])
@pytest.mark.parametrize("classes", [[1, 2, 3], [10, 20, 30], [-1, 0, 5], ["cat", "dog", "eel"]])
def test_labels_that_are_class_values_are_looked_up_by_value(tmp_path, suffix, classes):
    """Classes not starting at 0 (error 70.8 % instead of 47.5 % read by position) and names: column j is class
    classes[j]."""
    labels = np.asarray(classes)[POSITIONS]
    pred = load_predictions(write(tmp_path / f"p{suffix}", classes, labels))
    assert_truth(pred)
    assert any("class values" in note or "class names mapped" in note for note in pred.notes), pred.notes


@pytest.mark.parametrize("suffix", [".npz", ".json", ".csv"])
def test_class_values_that_are_positions_in_another_order_are_refused_naming_labels_are(tmp_path, suffix):
    """A header `2,0,1,label` (a frame's columns reordered): labels 0..2 are valid values and valid positions, which
    differ; read by position they gave error 86 % instead of 32 %."""
    order = np.array([2, 0, 1])
    path = write(tmp_path / f"p{suffix}", order, order[POSITIONS])
    with pytest.raises(InputError, match="--labels-are values or --labels-are positions") as refused:
        load_predictions(path)
    assert "\n" not in str(refused.value)
    assert_truth(load_predictions(path, options=ReadOptions(labels_are="values")))
    by_position = load_predictions(path, options=ReadOptions(labels_are="positions"))
    np.testing.assert_array_equal(by_position.labels, order[POSITIONS])


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_whether_the_highest_class_occurs_no_longer_decides_the_reading(tmp_path, suffix):
    """Classes [1, 2, 3]: with a 3 among the labels they can only be values; without one (1 and 2 only) they are also
    valid positions: refused, not misread."""
    classes = np.array([1, 2, 3])
    pred = load_predictions(write(tmp_path / f"all{suffix}", classes, classes[POSITIONS]))
    assert_truth(pred)
    probs = PROBS[POSITIONS < 2]
    positions = POSITIONS[POSITIONS < 2]
    path = write(tmp_path / f"low{suffix}", classes, classes[positions], probs)
    with pytest.raises(InputError, match="--labels-are"):
        load_predictions(path)
    assert_truth(load_predictions(path, options=ReadOptions(labels_are="values")), probs, positions)


def test_classes_zero_to_k_in_order_read_alike_both_ways_without_a_refusal(tmp_path):
    for suffix in (".npz", ".csv", ".json"):
        pred = load_predictions(write(tmp_path / f"p{suffix}", [0, 1, 2], POSITIONS))
        assert_truth(pred)
        assert not any("class values" in note or "positions" in note for note in pred.notes)


def test_one_changed_label_keeps_the_reading_or_is_refused(tmp_path):
    """Class values 1, 2, 3: one label changed to 0 (a position, no value) leaves no reading of all the labels:
    refused; changed to 4 (neither), the same; changed to 2 (another value), read by value."""
    classes = np.array([1, 2, 3])
    for bad, fragment in ((0, "0 is no class value and 3 no position"), (4, "4 is neither")):
        labels = classes[POSITIONS].copy()
        labels[17] = bad
        with pytest.raises(InputError, match=fragment):
            load_predictions(write(tmp_path / "p.npz", classes, labels))
    labels = classes[POSITIONS].copy()
    labels[17] = 2
    positions = POSITIONS.copy()
    positions[17] = 1
    assert_truth(load_predictions(write(tmp_path / "p.npz", classes, labels)), PROBS, positions)


def test_index_labels_beside_class_values_they_are_not_among_are_positions_with_a_note(tmp_path):
    """A LabelEncoder's indices saved beside the original classes_: 0 is no class value, so positions (noted)."""
    pred = load_predictions(write(tmp_path / "p.npz", [1, 2, 3], POSITIONS))
    assert_truth(pred)
    assert any("read as column positions" in note for note in pred.notes), pred.notes
    assert_truth(load_predictions(tmp_path / "p.npz", options=ReadOptions(labels_are="positions")))
    with pytest.raises(InputError, match=r"--labels-are values\); 0 is not"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(labels_are="values"))


def test_class_names_with_a_shared_prefix_name_the_labels(tmp_path):
    """Columns `prob_cat, prob_dog, prob_eel` beside labels `dog`; `p_1, p_2, p_3` beside labels 1..3."""
    names = np.array(["cat", "dog", "eel"])
    pred = load_predictions(write(tmp_path / "n.csv", [f"prob_{name}" for name in names], names[POSITIONS]))
    assert_truth(pred)
    pred = load_predictions(write(tmp_path / "v.csv", ["p_1", "p_2", "p_3"], POSITIONS + 1))
    assert_truth(pred)
    assert_truth(load_predictions(write(tmp_path / "c.csv", ["c0", "c1", "c2"], POSITIONS)))


def test_a_classes_array_the_labels_do_not_need_is_ignored_with_a_note(tmp_path):
    """scikit-learn's object-dtype classes_ (unreadable without pickle), one of another length, a MATLAB cell array:
    ignored beside index labels, refused beside labels that need it."""
    np.savez(tmp_path / "object.npz", probs=PROBS, labels=POSITIONS,
             classes=np.array(["cat", "dog", "eel"], dtype=object))
    pred = load_predictions(tmp_path / "object.npz")
    assert_truth(pred)
    assert any("classes ignored" in note and "pickle" in note for note in pred.notes), pred.notes
    np.savez(tmp_path / "names.npz", probs=PROBS, labels=np.array(["cat", "dog", "eel"])[POSITIONS],
             classes=np.array(["cat", "dog", "eel"], dtype=object))
    with pytest.raises(InputError, match="to name the classes of .* but it cannot be read"):
        load_predictions(tmp_path / "names.npz")
    np.savez(tmp_path / "short.npz", probs=PROBS, labels=POSITIONS, classes=np.array([1, 2]))
    pred = load_predictions(tmp_path / "short.npz")
    assert_truth(pred)
    assert any("names 2 classes for 3 score columns" in note for note in pred.notes), pred.notes
    sio = pytest.importorskip("scipy.io")
    cell = np.empty((1, 3), dtype=object)
    cell[0, :] = ["cat", "dog", "eel"]
    sio.savemat(tmp_path / "cell.mat", {"probs": PROBS, "labels": POSITIONS, "classes": cell})
    pred = load_predictions(tmp_path / "cell.mat")
    assert_truth(pred)
    assert any("classes ignored" in note for note in pred.notes), pred.notes


def test_interpret_labels_on_arrays():
    labels, notes = interpret_labels(np.array([True, False]), n=2, num_classes=2, name="y", classes=[False, True])
    assert labels.tolist() == [1, 0]
    with pytest.raises(InputError, match="--labels-are"):
        interpret_labels(np.array([True, False]), n=2, num_classes=2, name="y", classes=[True, False])
    labels, _ = interpret_labels([2.0, 1.0], n=2, num_classes=2, name="y", classes=np.array([1.0, 2.0]))
    assert labels.tolist() == [1, 0]
    with pytest.raises(InputError, match="--labels-are to be 'values' or 'positions'"):
        interpret_labels([0], n=1, num_classes=2, name="y", labels_are="names")
    with pytest.raises(InputError, match="--labels-are"):
        ReadOptions(labels_are="names")


def test_scikit_learn_predict_proba_with_its_classes_reads_to_the_truth(tmp_path):
    """LogisticRegression fitted on labels 1, 2, 3 / strings / -1, 1: `predict_proba` columns are `classes_`."""
    linear_model = pytest.importorskip("sklearn.linear_model")
    features = RNG.normal(size=(N, 2))
    for values in ([1, 2, 3], ["cat", "dog", "eel"], [-1, 1]):
        values = np.array(values)
        y = values[(features[:, 0] > 0).astype(int) + ((features[:, 1] > 0.5) & (len(values) == 3))]
        model = linear_model.LogisticRegression().fit(features, y)
        probs = model.predict_proba(features)
        positions = np.searchsorted(model.classes_, y)
        path = tmp_path / f"{values[0]}.npz"
        np.savez(path, y_proba=probs, y_true=y, classes=model.classes_)
        assert_truth(load_predictions(path), probs, positions)
        path.with_suffix(".csv").write_text(header_csv(model.classes_, probs, y))
        assert_truth(load_predictions(path.with_suffix(".csv")), probs, positions)


def test_pandas_frames_named_by_classes_read_to_the_truth(tmp_path):
    pd = pytest.importorskip("pandas")
    for classes in ([1, 2, 3], ["cat", "dog", "eel"], [2, 0, 1]):
        labels = np.array(classes)[POSITIONS]
        frame = pd.DataFrame(PROBS, columns=classes).assign(label=labels)
        text = frame.to_csv(index=False)
        assert text == header_csv(classes, PROBS, labels)
        path = tmp_path / "p.csv"
        path.write_text(text)
        if classes == [2, 0, 1]:
            with pytest.raises(InputError, match="--labels-are"):
                load_predictions(path)
        else:
            assert_truth(load_predictions(path))


def test_cli_refuses_in_one_line_and_the_options_choose(tmp_path):
    from adacal.cli import app

    order = np.array([2, 0, 1])
    path = write(tmp_path / "p.csv", order, order[POSITIONS])
    one_line_error(runner.invoke(app, ["evaluate", str(path), "-q"]), "--labels-are values")
    result = runner.invoke(app, ["evaluate", str(path), "-q", "--labels-are", "values"])
    assert result.exit_code == 0, result.output
    error = figures(PROBS, POSITIONS)[0]
    assert f"error {100 * error:.2f}%" in result.stdout
    bare = tmp_path / "bare.csv"
    entropy = -(PROBS * np.log(PROBS)).sum(axis=1)
    bare.write_text("".join(",".join([*(repr(float(v)) for v in row), repr(float(h)), str(label)]) + "\n"
                            for row, h, label in zip(PROBS, entropy, POSITIONS)))
    one_line_error(runner.invoke(app, ["evaluate", str(bare), "-q"]), "--score-columns")
    result = runner.invoke(app, ["evaluate", str(bare), "-q", "--score-columns", "0:3"])
    assert result.exit_code == 0, result.output
    assert f"error {100 * error:.2f}%" in result.stdout


def test_json_lines_naming_their_choices_on_every_line(tmp_path):
    """An evaluation harness's records, each with its `classes` (the same choices) and a label among them."""
    names = ["A", "B", "C"]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"probs": row.tolist(), "label": names[label], "classes": names}) + "\n"
                            for row, label in zip(PROBS, POSITIONS)))
    assert_truth(load_predictions(path))
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join(json.dumps({"probs": row.tolist(), "label": names[label],
                                            "classes": names[::-1] if i == 5 else names}) + "\n"
                                for i, (row, label) in enumerate(zip(PROBS, POSITIONS))))
    with pytest.raises(InputError, match="differently from one sample to another"):
        load_predictions(shuffled)


def test_a_labels_file_of_class_values_uses_the_scores_files_classes(tmp_path):
    """Scores under a header `1,2,3` (no label column) and the labels 1..3 in a file of their own."""
    (tmp_path / "scores.csv").write_text("1,2,3\n" + "".join(",".join(repr(float(v)) for v in row) + "\n"
                                                             for row in PROBS))
    np.save(tmp_path / "y.npy", POSITIONS + 1)
    options = ReadOptions(labels_file=tmp_path / "y.npy", header=True)
    pred = load_predictions(tmp_path / "scores.csv", options=options)
    assert_truth(pred)
    assert any("class values" in note for note in pred.notes), pred.notes
