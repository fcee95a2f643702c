"""adacal.sources.table_columns (rule 8 of docs/inputs.md "Text files"): which columns of a text table hold class
scores. Tables as pandas writes them — a filtered frame's index with and without a header, a named index, extra
per-sample columns (entropy, margin, sample_weight, epoch, features), a row counter, a second label column — read to
the figures computed directly from the probabilities and labels, or refused in one line naming --score-columns.

Every table is written by hand (`frame_csv`, the bytes pandas' `to_csv` writes, so CI without pandas checks the rules);
`test_frame_csv_writes_what_pandas_writes` checks those bytes against pandas itself where it is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_scores
from adacal.sources import ReadOptions
from adacal.sources.table_columns import parse_score_columns, probability_rows, score_columns

RNG = np.random.default_rng(39)
N, K = 300, 3
PROBS = RNG.dirichlet(np.full(K, 0.7), size=N)
LABELS = np.array([RNG.choice(K, p=row) for row in PROBS])
ENTROPY = -(PROBS * np.log(PROBS)).sum(axis=1)
TOP2 = np.sort(PROBS, axis=1)
MARGIN = TOP2[:, -1] - TOP2[:, -2]
SCORE_NAMES = [f"c{i}" for i in range(K)]


def truth(probs=PROBS, labels=LABELS) -> tuple[float, float]:
    """(error, NLL) computed directly from the probabilities and labels."""
    return float(np.mean(probs.argmax(axis=1) != labels)), float(-np.mean(np.log(probs[np.arange(len(labels)),
                                                                                        labels])))


def assert_truth(pred, probs=PROBS, labels=LABELS) -> None:
    """The file read to the same N x K probabilities and labels, hence the same error and NLL."""
    assert pred.logits.shape == probs.shape, (pred.logits.shape, pred.notes)
    np.testing.assert_array_equal(pred.labels, labels)
    error, nll = truth(pred.logits, pred.labels)
    expected = truth(probs, labels)
    assert error == pytest.approx(expected[0], abs=1e-12) and nll == pytest.approx(expected[1], rel=1e-12)


def frame_csv(columns: dict[str, np.ndarray], index: np.ndarray | None = None, index_name: str = "",
              header: bool = True) -> str:
    """The text `pd.DataFrame(columns, index=index).rename_axis(index_name or None).to_csv(index=index is not None,
    header=header)` writes: floats as their shortest round-trip repr, integers as digits, lines ending in "\\n"."""
    def cell(value) -> str:
        return repr(float(value)) if isinstance(value, (float, np.floating)) else str(int(value))

    lines = []
    if header:
        lines.append(",".join(([index_name] if index is not None else []) + list(columns)))
    for row in range(len(next(iter(columns.values())))):
        cells = ([cell(index[row])] if index is not None else []) + [cell(values[row]) for values in columns.values()]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def scores(names=SCORE_NAMES, probs=PROBS) -> dict[str, np.ndarray]:
    return {name: probs[:, i] for i, name in enumerate(names)}


FILTERED = np.arange(210, 210 + N)  # df[df.split == "test"]: the test rows of a frame, the last N of it
GAPPED = np.sort(RNG.choice(np.arange(5 * N), size=N, replace=False))  # an interleaved split: rising, with gaps


@pytest.mark.parametrize("case", [
    "filtered index, header", "filtered index, no header", "gapped index, no header", "named index",
    "named index, no header", "row counter from 1", "entropy", "margin after the label", "sample_weight", "epoch",
    "features", "image_id", "second label column", "copy of the labels", "two extra columns", "prob_ names",
])
def test_columns_that_are_not_class_scores_are_dropped_with_a_note(tmp_path, case):
    columns = {**scores(), "label": LABELS}
    index, index_name, header = None, "", True
    if case == "filtered index, header":
        index = FILTERED
    elif case == "filtered index, no header":
        index, header = FILTERED, False
    elif case == "gapped index, no header":
        index, header = GAPPED, False
    elif case == "named index":
        index, index_name = FILTERED, "sample_id"
    elif case == "named index, no header":
        index, index_name, header = np.arange(N), "sample_id", False
    elif case == "row counter from 1":
        columns = {"row": np.arange(1, N + 1), **columns}
    elif case == "entropy":
        columns = {**scores(), "entropy": ENTROPY, "label": LABELS}
    elif case == "margin after the label":
        columns = {**columns, "margin": MARGIN}
    elif case == "sample_weight":
        columns = {**columns, "sample_weight": np.ones(N)}
    elif case == "epoch":
        columns = {**scores(), "epoch": np.full(N, 5), "label": LABELS}
    elif case == "features":
        columns = {**scores(), "features": RNG.normal(size=N), "label": LABELS}
    elif case == "image_id":
        columns = {"image_id": RNG.permutation(N) + 1000, **columns}
    elif case == "second label column":
        columns = {**columns, "y": LABELS}
    elif case == "copy of the labels":
        columns = {**scores(), "truth": LABELS, "label": LABELS}
    elif case == "two extra columns":
        columns = {**scores(), "entropy": ENTROPY, "margin": MARGIN, "label": LABELS}
    elif case == "prob_ names":
        columns = {**scores([f"prob_{i}" for i in range(K)]), "max_prob": PROBS.max(axis=1), "label": LABELS}
    path = tmp_path / "p.csv"
    path.write_text(frame_csv(columns, index, index_name, header))
    pred = load_predictions(path)
    assert_truth(pred)
    assert any("ignored" in note for note in pred.notes), pred.notes


def test_the_same_frame_reads_alike_with_and_without_its_header_and_index(tmp_path):
    """NLL 170 where the same frame with its header gave 1.24 (issue 39): every way pandas writes one frame reads to
    the same figures."""
    columns = {**scores(), "label": LABELS}
    readings = []
    for index in (None, FILTERED, GAPPED):
        for header in (True, False):
            path = tmp_path / f"{index is None}-{header}.csv"
            path.write_text(frame_csv(columns, index, "", header))
            readings.append(truth(*(lambda p: (p.logits, p.labels))(load_predictions(path))))
    assert readings == [truth()] * len(readings)


def test_a_class_column_is_kept_when_the_values_say_it_is_one(tmp_path):
    """A margin on the rule: a column named like a figure or unlike the others stays a class when the columns form
    probability rows with it and not without it; a class named `id` holding scores stays a class."""
    four = RNG.dirichlet(np.ones(4), size=N)
    labels = four.argmax(axis=1)
    for names in (["c0", "c1", "c2", "other"], ["cat", "dog", "eel", "margin"], ["id", "b", "c", "d"]):
        path = tmp_path / f"{names[-1]}.csv"
        path.write_text(frame_csv({**scores(names, four), "label": labels}))
        pred = load_predictions(path)
        assert_truth(pred, four, labels)
        assert not any("ignored" in note for note in pred.notes), pred.notes
    logits = RNG.normal(size=(N, 4))
    path = tmp_path / "logits.csv"
    path.write_text(frame_csv({**scores(["id", "b", "c", "d"], logits), "label": labels}))
    assert load_predictions(path).logits.shape == (N, 4)


@pytest.mark.parametrize("case, fragment", [
    ("logits beside a column named apart", "named unlike the class columns"),
    ("headerless figure beside probabilities", "form probability rows without the column at position 3"),
    ("headerless copy of the labels", "the column at position 3 holds the labels again"),
    ("headerless logits and a copy of the labels", "the column at position 3 holds the labels again"),
    ("rising integers named like a class", "rising integers"),
])
def test_what_the_rule_cannot_decide_is_refused_naming_score_columns(tmp_path, case, fragment):
    header = True
    if case == "logits beside a column named apart":
        columns = {**scores(probs=RNG.normal(size=(N, K))), "temp": RNG.normal(size=N), "label": LABELS}
    elif case == "headerless figure beside probabilities":
        columns, header = {**scores(), "entropy": ENTROPY, "label": LABELS}, False
    elif case == "headerless copy of the labels":
        columns, header = {**scores(), "y": LABELS, "label": LABELS}, False
    elif case == "headerless logits and a copy of the labels":
        columns, header = {**scores(probs=RNG.normal(size=(N, K))), "y": LABELS, "label": LABELS}, False
    else:
        columns = {"c0": np.arange(N) + 7, "c1": PROBS[:, 1], "c2": PROBS[:, 2], "label": LABELS}
    path = tmp_path / "p.csv"
    path.write_text(frame_csv(columns, header=header))
    with pytest.raises(InputError, match="--score-columns") as refused:
        load_predictions(path)
    assert fragment in str(refused.value) and "\n" not in str(refused.value)
    if case != "rising integers named like a class":
        spec = "0:3" if not header or case != "logits beside a column named apart" else "c0,c1,c2"
        pred = load_predictions(path, options=ReadOptions(score_columns=spec))
        assert pred.logits.shape == (N, K)
        np.testing.assert_array_equal(pred.labels, LABELS)
        assert any("--score-columns" in note for note in pred.notes)


@pytest.mark.parametrize("spec", ["1:4", "c0,c1,c2", "c*", ":4"])
def test_score_columns_selects_by_range_names_or_prefix(tmp_path, spec):
    path = tmp_path / "p.csv"
    columns = {**scores(), "entropy": ENTROPY, "note_count": np.arange(N) % 3, "label": LABELS}
    path.write_text(frame_csv(columns, FILTERED))
    if spec == ":4":  # columns 0 to 3, the index among them: the option wins, as written
        pred = load_predictions(path, options=ReadOptions(score_columns=spec, scores_kind="logits"))
        written = np.column_stack([FILTERED, PROBS])
        np.testing.assert_allclose(pred.logits - pred.logits[:, :1], written - written[:, :1])
        assert pred.logits.shape == (N, 4)
        return
    pred = load_predictions(path, options=ReadOptions(score_columns=spec))
    assert_truth(pred)
    assert "p.csv: score columns c0, c1, c2 (--score-columns); 3 other columns ignored" in pred.notes


def test_score_columns_syntax_errors_are_one_line(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(frame_csv({**scores(), "label": LABELS}))
    for spec, fragment in (("c9", "Expected a column named 'c9' (--score-columns)"), ("3:1", "selects none"),
                           ("a:b", "Expected --score-columns as 2:12"), ("label,c0", "leave out the label"),
                           ("c0,c0", "one twice")):
        options = ReadOptions(score_columns=spec, labels_key="label" if spec == "label,c0" else None)
        with pytest.raises(InputError, match=re.escape(fragment)):
            load_predictions(path, options=options)
    with pytest.raises(InputError, match="--score-columns"):
        ReadOptions(score_columns=" ")
    bare = tmp_path / "bare.csv"
    bare.write_text(frame_csv({**scores(), "label": LABELS}, header=False))
    with pytest.raises(InputError, match="a header naming the columns"):
        load_predictions(bare, options=ReadOptions(score_columns="c*"))
    assert_truth(load_predictions(bare, options=ReadOptions(score_columns="0,1,2")))
    np.savez(tmp_path / "p.npz", probs=PROBS, labels=LABELS)
    with pytest.raises(InputError, match="--score-columns only with a .csv, .tsv or .txt table"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(score_columns="0:3"))


def test_parse_score_columns_counts_every_column_as_written():
    names = ["", "a", "b", "c", "label"]
    assert parse_score_columns(Path("p.csv"), "1:4", names, 5) == [1, 2, 3]
    assert parse_score_columns(Path("p.csv"), "1:", None, 5) == [1, 2, 3, 4]
    assert parse_score_columns(Path("p.csv"), "c,a", names, 5) == [3, 1]
    assert parse_score_columns(Path("p.csv"), "2,0", None, 5) == [2, 0]


def test_probability_rows_and_the_rule_on_arrays():
    assert probability_rows(PROBS) and probability_rows(np.round(PROBS, 4))
    assert not probability_rows(np.column_stack([PROBS, ENTROPY]))
    assert not probability_rows(PROBS[:, :1])
    notes: list[str] = []
    values = np.column_stack([FILTERED, PROBS, ENTROPY])
    names = ["sample_id", *SCORE_NAMES, "entropy"]
    assert score_columns(Path("p.csv"), names, values, LABELS.astype(float), [0, 1, 2, 3, 4], notes) == [1, 2, 3]
    assert len(notes) == 2
    # A table of logits without a header: nothing to drop, nothing refused.
    logits = RNG.normal(size=(N, 5))
    assert score_columns(Path("p.csv"), None, logits, None, list(range(5)), []) == list(range(5))


def test_ood_scores_without_labels_follow_the_rule(tmp_path):
    """A table of scores only (an OOD set): its row index is dropped too."""
    path = tmp_path / "ood.csv"
    path.write_text(frame_csv(scores(), FILTERED))
    np.testing.assert_allclose(load_scores(path), PROBS)


def test_frame_csv_writes_what_pandas_writes():
    pd = pytest.importorskip("pandas")
    columns = {**scores(), "entropy": ENTROPY, "epoch": np.full(N, 5), "label": LABELS}
    frame = pd.DataFrame(columns)
    assert frame.to_csv(index=False) == frame_csv(columns)
    filtered = frame.set_axis(FILTERED)
    assert filtered.to_csv() == frame_csv(columns, FILTERED)
    assert filtered.to_csv(header=False) == frame_csv(columns, FILTERED, header=False)
    assert filtered.rename_axis("sample_id").to_csv() == frame_csv(columns, FILTERED, "sample_id")
    assert frame.set_axis(GAPPED).to_csv(header=False) == frame_csv(columns, GAPPED, header=False)


def test_pandas_frames_of_a_split_read_to_the_truth(tmp_path):
    """As users write them: the test rows of a frame (`df[df.split == "test"]`), with and without header, a named
    index, extra columns."""
    pd = pytest.importorskip("pandas")
    whole = pd.DataFrame({**scores(probs=np.vstack([RNG.dirichlet(np.ones(K), size=N), PROBS])),
                          "entropy": np.r_[np.zeros(N), ENTROPY], "label": np.r_[np.zeros(N, dtype=int), LABELS],
                          "split": ["train"] * N + ["test"] * N})
    test = whole[whole.split == "test"].drop(columns="split")
    assert test.index[0] == N
    for name, write in (("header", lambda p: test.to_csv(p)), ("bare", lambda p: test.to_csv(p, header=False)),
                        ("named", lambda p: test.rename_axis("sample_id").to_csv(p))):
        path = tmp_path / f"{name}.csv"
        write(path)
        if name == "bare":  # (no header: an entropy column beside probabilities cannot be told from a class)
            with pytest.raises(InputError, match="--score-columns"):
                load_predictions(path)
            assert_truth(load_predictions(path, options=ReadOptions(score_columns="1:4")))
        else:
            assert_truth(load_predictions(path))


def test_a_row_index_of_names_under_any_header_is_dropped(tmp_path):
    """`df.set_index("file").to_csv()`: unique names under any header are a row index; names that repeat (labels)
    are not."""
    files = [f"img_{i:04d}.png" for i in range(N)]
    lines = ["file,c0,c1,c2,label"] + [",".join([name, *map(repr, map(float, row)), str(label)])
                                       for name, row, label in zip(files, PROBS, LABELS)]
    path = tmp_path / "named.csv"
    path.write_text("\n".join(lines) + "\n")
    pred = load_predictions(path)
    assert_truth(pred)
    assert "named.csv: first column 'file' read as a row index and ignored" in pred.notes
    species = np.array(["a", "b", "c"])[LABELS]
    lines = ["species,c0,c1,c2"] + [",".join([name, *map(repr, map(float, row))]) for name, row in zip(species, PROBS)]
    path = tmp_path / "species.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError):
        load_predictions(path)  # (a column of repeating names is no index; the last column holds no labels)


def test_a_binary_table_with_a_row_index_reads_to_one_score_column(tmp_path):
    positive = PROBS[:, 0] / (PROBS[:, 0] + PROBS[:, 1])
    labels = (positive > 0.5).astype(int)
    path = tmp_path / "b.csv"
    path.write_text(frame_csv({"p": positive, "label": labels}, FILTERED))
    pred = load_predictions(path)
    np.testing.assert_allclose(pred.logits, np.column_stack([1 - positive, positive]))
    assert not any("classes ignored" in note for note in pred.notes), pred.notes


def test_a_column_of_text_is_refused_naming_score_columns_which_reads_past_it(tmp_path):
    """An evaluation table with a `split` (or prompt) column of text: refused in one line naming --score-columns,
    which selects the scores and leaves the text unread."""
    lines = ["c0,c1,c2,split,label"] + [",".join([*map(repr, map(float, row)), "test", str(label)])
                                        for row, label in zip(PROBS, LABELS)]
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="got 'test' .*pass --score-columns"):
        load_predictions(path)
    assert_truth(load_predictions(path, options=ReadOptions(score_columns="c*")))


def test_an_np_savetxt_table_follows_the_rule_without_a_header(tmp_path):
    """`np.savetxt` of a row index beside the scores (labels beside it in `<stem>_labels.txt`): the index dropped; an
    entropy column beside them refused naming --score-columns, which selects the scores."""
    np.savetxt(tmp_path / "x.txt", np.column_stack([FILTERED, PROBS]))
    np.savetxt(tmp_path / "x_labels.txt", LABELS, fmt="%d")
    pred = load_predictions(tmp_path / "x.txt")
    np.testing.assert_array_equal(pred.labels, LABELS)
    np.testing.assert_allclose(pred.logits, PROBS, rtol=1e-15)
    np.savetxt(tmp_path / "e.txt", np.column_stack([PROBS, ENTROPY]))
    np.savetxt(tmp_path / "e_labels.txt", LABELS, fmt="%d")
    with pytest.raises(InputError, match="--score-columns"):
        load_predictions(tmp_path / "e.txt")
    pred = load_predictions(tmp_path / "e.txt", options=ReadOptions(score_columns="0:3"))
    np.testing.assert_allclose(pred.logits, PROBS, rtol=1e-15)


def test_a_shuffled_frames_index_is_refused_not_read_as_a_class(tmp_path):
    """`df.sample(frac=1).to_csv(header=False)`: the index is distinct whole numbers in no order; beside logits no
    rule can drop it, and read as a class it would win every row: refused naming --score-columns. Under pandas'
    empty header it is dropped (rule 5)."""
    order = RNG.permutation(N)
    logits = RNG.normal(size=(N, K))
    columns = {**scores(probs=logits[order]), "label": LABELS[order]}
    path = tmp_path / "shuffled.csv"
    path.write_text(frame_csv(columns, order, header=False))
    with pytest.raises(InputError, match="shuffled row index.*--score-columns"):
        load_predictions(path)
    pred = load_predictions(path, options=ReadOptions(score_columns="1:4"))
    np.testing.assert_allclose(pred.logits - pred.logits.max(axis=1, keepdims=True),
                               logits[order] - logits[order].max(axis=1, keepdims=True), atol=1e-12)
    path.write_text(frame_csv(columns, order))
    assert load_predictions(path).logits.shape == (N, K)
