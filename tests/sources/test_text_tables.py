"""adacal.sources.text_tables: CSV / TSV and np.savetxt tables, also gzipped, as spreadsheets, pandas and numpy write
them — headers or none, a label column anywhere, row indices, decimal commas, predicted-class columns — read to the
same arrays as the canonical .npz, or refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_scores
from adacal.sources import ReadOptions

from reading_fixtures import K, LABELS, LOGITS, N, csv_text, same


def test_csv_with_and_without_header_and_label_column_anywhere(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "plain.csv").write_text(csv_text(rows))
    same(load_predictions(tmp_path / "plain.csv"), LOGITS.astype(np.float64))
    (tmp_path / "head.csv").write_text(csv_text(rows, ["a", "b", "c", "d", "label"]))
    same(load_predictions(tmp_path / "head.csv"), LOGITS.astype(np.float64))
    moved = [[row[-1], *row[:-1]] for row in rows]
    (tmp_path / "first.csv").write_text(csv_text(moved, ["target", "a", "b", "c", "d"], sep=";"))
    same(load_predictions(tmp_path / "first.csv"), LOGITS.astype(np.float64))
    (tmp_path / "named.csv").write_text(csv_text(moved, ["truth", "a", "b", "c", "d"]))
    same(load_predictions(tmp_path / "named.csv", options=ReadOptions(labels_key="truth")), LOGITS.astype(np.float64))


@pytest.mark.parametrize("index_name, first", [("", 0), ("Unnamed: 0", 0), ("index", 1), ("id", 1000)])
def test_csv_row_index_column_as_pandas_writes_it_is_dropped_with_a_note(tmp_path, index_name, first):
    # pandas' DataFrame.to_csv() writes the index first, under an empty header cell.
    rows = [[first + i, *map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "pandas.csv").write_text(csv_text(rows, [index_name, "a", "b", "c", "d", "label"]))
    pred = load_predictions(tmp_path / "pandas.csv")
    same(pred, LOGITS.astype(np.float64))
    assert any("row index" in note and "ignored" in note for note in pred.notes), pred.notes


def test_csv_first_column_stays_a_class_unless_it_is_an_index(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    # a class named "id" holding scores, not integers
    (tmp_path / "named.csv").write_text(csv_text(rows, ["id", "b", "c", "d", "label"]))
    pred = load_predictions(tmp_path / "named.csv")
    same(pred, LOGITS.astype(np.float64))
    assert not any("row index" in note for note in pred.notes)
    # integer scores under an ordinary class name are scores
    integer_rows = [[i % 3, 1, 2, 3, int(LABELS[i])] for i in range(N)]
    (tmp_path / "ints.csv").write_text(csv_text(integer_rows, ["a", "b", "c", "d", "label"]))
    assert load_predictions(tmp_path / "ints.csv").logits.shape == (N, K)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("sep", [";", "\t"])
def test_csv_with_decimal_commas_as_spreadsheets_write_them(tmp_path, header, sep):
    rows = [[*(f"{v:.9f}".replace(".", ",") for v in LOGITS[i]), int(LABELS[i])] for i in range(N)]
    (tmp_path / "euro.csv").write_text(csv_text(rows, ["a", "b", "c", "d", "label"] if header else None, sep=sep))
    pred = load_predictions(tmp_path / "euro.csv")
    np.testing.assert_allclose(pred.logits, LOGITS, atol=1e-8)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert any("decimal commas" in note for note in pred.notes)


def test_tsv_is_read_like_csv(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "p.tsv").write_text(csv_text(rows, ["a", "b", "c", "d", "label"], sep="\t"))
    same(load_predictions(tmp_path / "p.tsv"), LOGITS.astype(np.float64))


def test_text_tables_as_np_savetxt_writes_them(tmp_path):
    """np.savetxt's default (space-separated '%.18e', '# ' header) and its delimiter=',' form; labels beside the
    scores (np.savetxt writes them as floats) or from --labels FILE."""
    np.savetxt(tmp_path / "p.txt", LOGITS, header="logits of some model")
    np.savetxt(tmp_path / "p_labels.txt", LABELS)
    pred = load_predictions(tmp_path / "p.txt")
    same(pred)
    assert "p.txt: labels read from p_labels.txt beside it" in pred.notes
    np.savetxt(tmp_path / "c.txt", LOGITS, delimiter=",", fmt="%.9g")
    np.savetxt(tmp_path / "y.txt", LABELS, fmt="%d")
    np.testing.assert_allclose(load_predictions(tmp_path / "c.txt", options=ReadOptions(labels_file=tmp_path / "y.txt")
                                                ).logits, LOGITS, rtol=1e-8)
    np.savetxt(tmp_path / "named.txt", LOGITS, header="cat dog bird fish", comments="")  # a header line of names
    np.savetxt(tmp_path / "named_labels.txt", LABELS, header="label", comments="")
    same(load_predictions(tmp_path / "named.txt"))
    np.savetxt(tmp_path / "binary.txt", np.linspace(0.1, 0.9, N))  # one column: a binary model's scores
    np.savetxt(tmp_path / "labels.txt", LABELS % 2)
    assert load_predictions(tmp_path / "binary.txt").logits.shape == (N, 2)
    with pytest.raises(InputError, match=r"Expected labels for .*c\.txt: give --labels FILE or put them in "
                                         r"c_labels\.txt \(or labels\.txt\)"):
        (tmp_path / "labels.txt").unlink()
        load_predictions(tmp_path / "c.txt")


@pytest.mark.parametrize("text, match", [
    ("0.1 0.9\n0.2\n", "line 2 of .* to have 2 numbers, like line 1, got 1"),
    ("# only a comment\n\n", "a table of numbers, but it is empty"),
    ("0.1 0.9\n0.2 zero\n", "line 2 of .* to hold numbers, got 'zero'"),
])
def test_text_table_refusals(tmp_path, text, match):
    (tmp_path / "p.txt").write_text(text)
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "p.txt", options=ReadOptions(labels_file=tmp_path / "p.txt"))


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".txt", ".json", ".jsonl"])
def test_gzipped_text_formats_read_like_the_plain_file(tmp_path, suffix):
    """pandas' to_csv("preds.csv.gz") compresses by the name alone; any text format may come gzipped."""
    import gzip

    plain = tmp_path / f"p{suffix}"
    rows = [[float(v) for v in LOGITS[i]] for i in range(N)]
    if suffix in (".csv", ".tsv"):
        sep = "," if suffix == ".csv" else "\t"
        plain.write_text("".join(sep.join(map(repr, row)) + f"{sep}{LABELS[i]}\n" for i, row in enumerate(rows)))
    elif suffix == ".txt":
        np.savetxt(plain, LOGITS)
    elif suffix == ".json":
        plain.write_text(json.dumps({"logits": rows, "labels": LABELS.tolist()}))
    else:
        plain.write_text("".join(json.dumps({"logits": row, "label": int(LABELS[i])}) + "\n"
                                 for i, row in enumerate(rows)))
    packed = tmp_path / f"q{suffix}.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    options = ReadOptions(labels_file=tmp_path / "y.txt") if suffix == ".txt" else ReadOptions()
    if suffix == ".txt":
        np.savetxt(tmp_path / "y.txt", LABELS)
    ours, reference = load_predictions(packed, options=options), load_predictions(plain, options=options)
    np.testing.assert_array_equal(ours.logits, reference.logits)
    np.testing.assert_array_equal(ours.labels, reference.labels)


def test_gzip_refusals(tmp_path, monkeypatch):
    import gzip

    (tmp_path / "bad.csv.gz").write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"bad\.csv\.gz to be a readable gzip file, but it is not \(BadGzipFile\)"):
        load_predictions(tmp_path / "bad.csv.gz")
    (tmp_path / "bomb.csv.gz").write_bytes(gzip.compress(b"0," * (4 << 20)))  # 8 MiB of text from ~8 KiB
    monkeypatch.setattr("adacal.sources.text_tables.memory_budget", lambda: 16 * (4 << 20))
    with pytest.raises(InputError, match=r"bomb\.csv\.gz to fit in memory once decompressed, but it holds more than "
                                         r"4\.0 MiB of text"):
        load_predictions(tmp_path / "bomb.csv.gz")
    (tmp_path / "p.npz.gz").write_bytes(gzip.compress(b"x"))
    with pytest.raises(InputError, match=r"the text ones also \.gz\), got p\.npz\.gz"):
        load_predictions(tmp_path / "p.npz.gz")
    np.savetxt(tmp_path / "s.txt.gz", LOGITS)
    (tmp_path / "s_labels.txt.gz").write_bytes(gzip.compress("\n".join(map(str, LABELS)).encode()))
    same(load_predictions(tmp_path / "s.txt.gz"))  # labels beside it, compressed too


def test_a_csv_of_scores_only_with_a_labels_file_keeps_every_column(tmp_path):
    """With --labels FILE, a table with no column named as labels holds no labels: its last column is a class, not
    labels (it used to be taken as labels, leaving K − 1 classes and a confusing range error)."""
    np.savetxt(tmp_path / "y.txt", LABELS, fmt="%d")
    options = ReadOptions(labels_file=tmp_path / "y.txt")
    np.savetxt(tmp_path / "bare.csv", LOGITS, delimiter=",", fmt="%.9g")
    np.savetxt(tmp_path / "named.csv", LOGITS, delimiter=",", fmt="%.9g", header="a,b,c,d", comments="")
    for name in ("bare.csv", "named.csv"):
        pred = load_predictions(tmp_path / name, options=options)
        np.testing.assert_allclose(pred.logits, LOGITS, rtol=1e-7)
        np.testing.assert_array_equal(pred.labels, LABELS)
    # A column named as labels is still the labels' column, left out of the scores (the labels file wins).
    rows = np.column_stack([LOGITS, (LABELS + 1) % K])
    np.savetxt(tmp_path / "with_label.csv", rows, delimiter=",", fmt="%.9g", header="a,b,c,d,label", comments="")
    pred = load_predictions(tmp_path / "with_label.csv", options=options)
    assert pred.logits.shape == (N, K)
    np.testing.assert_array_equal(pred.labels, LABELS)
    np.savetxt(tmp_path / "one.csv", np.linspace(0.1, 0.9, N), fmt="%.6f")  # a binary model's one column
    np.savetxt(tmp_path / "y2.txt", LABELS % 2, fmt="%d")
    assert load_predictions(tmp_path / "one.csv", options=ReadOptions(labels_file=tmp_path / "y2.txt")).logits.shape \
        == (N, 2)


def test_ood_scores_from_a_csv_without_labels_keep_every_column(tmp_path):
    """An OOD set's table of logits has no labels: its last column (not integers) is a class. A last column of class
    indices is still read as the labels and left out."""
    np.savetxt(tmp_path / "logits.csv", LOGITS, delimiter=",", fmt="%.9g")
    np.testing.assert_allclose(load_scores(tmp_path / "logits.csv"), LOGITS, rtol=1e-7)
    np.savetxt(tmp_path / "labelled.csv", np.column_stack([LOGITS, LABELS]), delimiter=",", fmt="%.9g")
    np.testing.assert_allclose(load_scores(tmp_path / "labelled.csv"), LOGITS, rtol=1e-7)
    with pytest.raises(InputError, match=r"last column is read as its labels; give --labels FILE if it holds only "
                                         r"scores\)\.$"):
        load_predictions(tmp_path / "logits.csv")  # labels needed: the last column is not labels, and it says why


def test_csv_files_as_pandas_writes_them_without_column_names(tmp_path):
    """`pd.DataFrame(array).to_csv(index=False)` writes 0, 1, 2, ... as a header and `pd.Series(y).to_csv(index=False)`
    a first line 0: they were read as a sample (501 samples, or a label K out of range)."""
    from adacal.sources.text_tables import read_csv_with_notes

    columns = ",".join(str(i) for i in range(K))
    body = "\n".join(",".join(f"{v:.9g}" for v in row) for row in LOGITS) + "\n"
    (tmp_path / "scores.csv").write_text(columns + "\n" + body)
    (tmp_path / "bare.csv").write_text(body)
    (tmp_path / "labels.csv").write_text("0\n" + "\n".join(map(str, LABELS)) + "\n")
    pred = load_predictions(tmp_path / "bare.csv", options=ReadOptions(labels_file=tmp_path / "labels.csv"))
    same(pred)
    assert any("labels.csv: first line '0' read as pandas' column name" in note for note in pred.notes)
    # Scores only (no label column): a first line 0,1,2,3 may be pandas' column numbers or a sample of logits
    # (text_tables rule 3): refused, and --header reads it.
    with pytest.raises(InputError, match=r"first line 0,1,2,3 is either pandas' column numbers or a sample: pass "
                                         r"--header or --no-header\.$"):
        load_predictions(tmp_path / "scores.csv", options=ReadOptions(labels_file=tmp_path / "labels.csv"))
    table, _ = read_csv_with_notes(tmp_path / "scores.csv", scores_only=True, header=True)
    np.testing.assert_allclose(table["scores"], LOGITS, rtol=1e-6)
    assert table["classes"].tolist() == columns.split(",")
    stacked = np.column_stack([LOGITS, LABELS.astype(float)])
    (tmp_path / "stack.csv").write_text(",".join(str(i) for i in range(K + 1)) + "\n"
                                        + "\n".join(",".join(f"{v:.9g}" for v in row) for row in stacked) + "\n")
    same(load_predictions(tmp_path / "stack.csv"))
    # A labels file as long as the scores keeps its first 0: it is a label
    (tmp_path / "plain.csv").write_text("\n".join(map(str, np.r_[0, LABELS[1:]])) + "\n")
    labelled = load_predictions(tmp_path / "bare.csv", options=ReadOptions(labels_file=tmp_path / "plain.csv"))
    np.testing.assert_array_equal(labelled.labels, np.r_[0, LABELS[1:]])


def test_csv_column_of_predicted_classes_beside_the_scores_is_dropped(tmp_path):
    probs = softmax(LOGITS.astype(np.float64))
    lines = ["p0,p1,p2,p3,pred,label"] + [",".join(f"{v:.17g}" for v in row) + f",{row.argmax()},{y}"
                                         for row, y in zip(probs, LABELS)]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    pred = load_predictions(tmp_path / "p.csv")
    same(pred, probs)
    assert "p.csv: column 'pred' (predicted classes, integers) ignored: the class scores give the prediction" \
        in pred.notes


def test_csv_boolean_labels_and_an_empty_label_cell(tmp_path):
    rows = "\n".join(f"{1 - p:.3f},{p:.3f},{label}" for p, label in [(0.8, "True"), (0.1, "False"), (0.6, "True")])
    (tmp_path / "b.csv").write_text("s0,s1,label\n" + rows + "\n")
    np.testing.assert_array_equal(load_predictions(tmp_path / "b.csv").labels, [1, 0, 1])
    (tmp_path / "e.csv").write_text("p0,p1,label\n0.2,0.8,1\n0.9,0.1,\n0.4,0.6,1\n")
    with pytest.raises(InputError, match=r"Expected a label on line 3 of .*e\.csv, got an empty cell"):
        load_predictions(tmp_path / "e.csv")


@pytest.mark.parametrize("text, match", [
    ("a,b,label\n0.1,0.9,1\n0.2,0.8\n", "line 3 of .* to have 3 columns, got 2"),
    ("a,b,label\n0.1,x,1\n", "scores on line 2 of .* to be numbers, got 'x'"),
    ("a,b,label\n", "only a header"),
    ("", "empty"),
    ("a,a,label\n1,2,0\n", "column names .* differ"),
    ("a,b,label\n0.1,0.9,1.5\n", "integers, got non-integer values"),
    ("0,1,label\n0.1,0.9,1\n", None),  # numeric class names: the label column's name tells the header
    ("a,b,label\n0.1,0.9,1\n", None),
])
def test_csv_refusals(tmp_path, text, match):
    (tmp_path / "t.csv").write_text(text)
    if match is None:
        assert load_predictions(tmp_path / "t.csv").logits.shape == (1, 2)
        return
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "t.csv")
