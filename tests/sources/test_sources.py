"""adacal.sources: every way a user's path becomes data, checked against independent truth.

Formats are compared with the canonical .npz of the same arrays (metrics must be identical); refusals are one
InputError sentence; sizes are refused from their declarations, before allocation (with ADACAL_MEMORY_LIMIT lowering
the budget so the tests need no big machine); non-regular files are refused without blocking.
"""

from __future__ import annotations

import ast
import io
import json
import os
import socket
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.evaluation import evaluate_predictions
from adacal.interpretation import load_predictions, load_scores, load_split_predictions
from adacal.resolve import resolve_calibration_input
from adacal.sources import (
    NpzArchive, ReadOptions, open_regular, parse_json, read_history, read_json, read_npy, read_report,
)
from adacal.sources.documents import MAX_DEPTH, MAX_INT_DIGITS

RNG = np.random.default_rng(7)
N, K = 40, 4
LOGITS = RNG.normal(size=(N, K)).astype(np.float32)
LABELS = RNG.integers(0, K, N).astype(np.int64)
REPO = Path(__file__).resolve().parents[2]


def same(pred, logits=LOGITS, labels=LABELS):
    np.testing.assert_allclose(pred.logits, logits, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(pred.labels, labels)


# ------------------------------------------------------------------------------------------- keys and formats


@pytest.mark.parametrize("score_key, label_key", [
    (s, l) for s in ("logits", "probs", "probabilities", "scores") for l in ("labels", "targets", "y")
] + [("test_logits", "test_labels"), ("test_probs", "test_targets"), ("test_scores", "test_y")])
def test_every_key_spelling(tmp_path, score_key, label_key):
    """A key that names probabilities holds probabilities (its values are checked against the name)."""
    probabilities = "prob" in score_key
    scores = softmax(LOGITS.astype(np.float64)) if probabilities else LOGITS
    np.savez(tmp_path / "p.npz", **{score_key: scores, label_key: LABELS})
    same(load_predictions(tmp_path / "p.npz"), logits=scores)


@pytest.mark.parametrize("score_key, label_key", [
    ("predictions", "label_ids"),  # Hugging Face's Trainer.predict
    ("y_proba", "y_true"), ("y_prob", "y_true"), ("y_score", "label"),  # scikit-learn's names
    ("outputs", "target"), ("test_predictions", "test_label_ids"),
])
def test_other_frameworks_key_spellings(tmp_path, score_key, label_key):
    scores = softmax(LOGITS.astype(np.float64)) if "prob" in score_key else LOGITS
    np.savez(tmp_path / "p.npz", **{score_key: scores, label_key: LABELS})
    same(load_predictions(tmp_path / "p.npz"), logits=scores)


def test_two_spellings_of_the_scores_or_labels_are_refused_and_the_keys_options_choose(tmp_path):
    np.savez(tmp_path / "p.npz", predictions=LOGITS * 0, logits=LOGITS, label=(LABELS + 1) % K, labels=LABELS)
    with pytest.raises(InputError, match=r"one key for the scores in p\.npz, found logits, predictions: pass "
                                         r"--logits-key"):
        load_predictions(tmp_path / "p.npz")
    with pytest.raises(InputError, match=r"one key for the labels in p\.npz, found labels, label: pass --labels-key"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="logits"))
    same(load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="logits", labels_key="labels")))


@pytest.mark.parametrize("scores_key, labels_key", [("pred_probs", "labels"), ("preds", "target"),
                                                    ("y_pred", "y_true"), ("logits", "true_labels")])
def test_cleanlab_torchmetrics_and_keras_key_names(tmp_path, scores_key, labels_key):
    scores = softmax(LOGITS.astype(np.float64)) if "prob" in scores_key else LOGITS
    np.savez(tmp_path / "p.npz", **{scores_key: scores, labels_key: LABELS})
    same(load_predictions(tmp_path / "p.npz"), logits=scores)


@pytest.mark.parametrize("key", ["y_pred", "preds", "test_predictions"])
def test_hard_predictions_under_any_of_their_names_are_refused(tmp_path, key):
    np.savez(tmp_path / "p.npz", **{key: LOGITS.argmax(axis=1), "y_true" if key != "test_predictions" else
                                    "test_labels": LABELS})
    with pytest.raises(InputError, match="hard class predictions carry no confidence"):
        load_predictions(tmp_path / "p.npz")


@pytest.mark.parametrize("suffix, column", [(".npz", False), (".pt", False), (".npz", True), (".npz", "one-hot"),
                                            (".pt", "one-hot")])
def test_hard_class_predictions_are_refused_as_scores(tmp_path, suffix, column):
    hard = LOGITS.argmax(axis=1)[:, None] if column is True else LOGITS.argmax(axis=1)
    if column == "one-hot":
        hard = np.eye(K, dtype=np.int64)[hard]  # read as probabilities of 0 and 1 before
    path = tmp_path / f"hard{suffix}"
    if suffix == ".npz":
        np.savez(path, predictions=hard, label_ids=LABELS)
    else:
        torch.save({"predictions": torch.from_numpy(hard), "label_ids": torch.from_numpy(LABELS)}, path)
    with pytest.raises(InputError, match="hard class predictions carry no confidence"):
        load_predictions(path)


@pytest.mark.parametrize("layout", ["dict", "pair", "batches"])
def test_pt_files_holding_numpy_arrays_read_like_tensors(tmp_path, layout):
    """torch.save of numpy arrays (and numpy scalars beside them): rebuilt by the weights-only unpickler, read as
    the same tensors would be."""
    path = tmp_path / "np.pt"
    if layout == "dict":
        torch.save({"logits": LOGITS, "labels": LABELS, "classes": np.array(list("abcd")), "epoch": np.int64(3)}, path)
    elif layout == "pair":
        torch.save((LOGITS, LABELS), path)
    else:
        torch.save([{"logits": LOGITS[:16], "labels": LABELS[:16]}, {"logits": LOGITS[16:], "labels": LABELS[16:]}],
                   path)
    same(load_predictions(path))


@pytest.mark.parametrize("layout", ["pairs", "dicts", "dict of lists", "tensors + --labels"])
def test_pt_lists_of_per_batch_outputs_are_concatenated(tmp_path, layout):
    # What Lightning's Trainer.predict returns: one output per batch, in the shape predict_step gives it.
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    cuts = [(0, 16), (16, 32), (32, N)]  # uneven last batch
    options = ReadOptions()
    if layout == "pairs":
        data = [(logits[a:b], labels[a:b]) for a, b in cuts]
    elif layout == "dicts":
        data = [{"logits": logits[a:b], "labels": labels[a:b]} for a, b in cuts]
    elif layout == "dict of lists":
        data = {"logits": [logits[a:b] for a, b in cuts], "labels": [labels[a:b] for a, b in cuts]}
    else:
        data = [logits[a:b] for a, b in cuts]
        np.save(tmp_path / "labels.npy", LABELS)
        options = ReadOptions(labels_file=tmp_path / "labels.npy")
    torch.save(data, tmp_path / "batches.pt")
    pred = load_predictions(tmp_path / "batches.pt", options=options)
    same(pred)
    assert any("3 batches" in note and "concatenated" in note for note in pred.notes), pred.notes


@pytest.mark.parametrize("layout", ["pairs, index labels", "pairs, one-hot labels", "pairs, int labels",
                                    "dict of lists", "dict of lists, one-hot", "dicts", "dicts, int labels",
                                    "list beside a labels tensor", "rows alone, --labels"])
def test_pt_lists_of_per_sample_outputs_are_stacked(tmp_path, layout):
    """One (K,) row per item (a per-sample loop's outputs) was concatenated into N·K binary scores; a plain int
    label per item was dropped."""
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    one_hot = torch.nn.functional.one_hot(labels, K)
    rows = [logits[i] for i in range(N)]
    data = {
        "pairs, index labels": [(logits[i], labels[i]) for i in range(N)],
        "pairs, one-hot labels": [(logits[i], one_hot[i]) for i in range(N)],
        "pairs, int labels": [(logits[i], int(labels[i])) for i in range(N)],
        "dict of lists": {"logits": rows, "labels": [labels[i] for i in range(N)]},
        "dict of lists, one-hot": {"logits": rows, "labels": [one_hot[i] for i in range(N)]},
        "dicts": [{"logits": logits[i], "label": labels[i]} for i in range(N)],
        "dicts, int labels": [{"logits": logits[i], "label": int(labels[i])} for i in range(N)],
        "list beside a labels tensor": {"logits": rows, "labels": labels},
        "rows alone, --labels": rows,
    }[layout]
    torch.save(data, tmp_path / "samples.pt")
    options = ReadOptions()
    if layout == "rows alone, --labels":
        np.save(tmp_path / "y.npy", LABELS)
        options = ReadOptions(labels_file=tmp_path / "y.npy")
    if layout in ("pairs, one-hot labels", "dict of lists, one-hot", "rows alone, --labels"):
        # (K,) rows beside one-hot (K,) labels, or alone, are also batches of K binary scores: refused, --pt-items says
        with pytest.raises(InputError, match=r"both readings fit: pass --pt-items batches, samples or pair"):
            load_predictions(tmp_path / "samples.pt", options=options)
        options = ReadOptions(labels_file=options.labels_file, pt_items="samples")
    if layout == "rows alone, --labels":
        np.testing.assert_allclose(load_scores(tmp_path / "samples.pt", options=ReadOptions(pt_items="samples")),
                                   LOGITS, rtol=1e-6)  # an OOD set: no labels
    pred = load_predictions(tmp_path / "samples.pt", options=options)
    same(pred)
    assert any(f"{N} " in note and "one sample" in note for note in pred.notes), pred.notes


def test_pt_pairs_stay_pairs_and_two_score_batches_are_told_apart(tmp_path):
    logits, labels = torch.from_numpy(LOGITS), torch.from_numpy(LABELS)
    torch.save((logits, labels), tmp_path / "pair.pt")
    same(load_predictions(tmp_path / "pair.pt"))
    one_hot = torch.nn.functional.one_hot(labels, K).float()  # float one-hot labels: still a pair
    torch.save((logits, one_hot), tmp_path / "pair_onehot.pt")
    same(load_predictions(tmp_path / "pair_onehot.pt"))
    torch.save([logits[:20], logits[20:]], tmp_path / "two.pt")  # two float (B, K) batches: scores, labels needed
    with pytest.raises(InputError, match="give --labels FILE"):
        load_predictions(tmp_path / "two.pt")
    torch.save([(logits[:20], labels[:20]), (logits[20:, :3], labels[20:])], tmp_path / "ragged.pt")
    with pytest.raises(InputError, match="per-batch logits .* share their shape"):
        load_predictions(tmp_path / "ragged.pt")


def test_npz_saved_without_names_reads_arr_0_as_scores_and_arr_1_as_labels(tmp_path):
    np.savez(tmp_path / "pair.npz", LOGITS, LABELS)  # stored as arr_0, arr_1
    pred = load_predictions(tmp_path / "pair.npz")
    same(pred)
    assert any("unnamed arrays" in note for note in pred.notes)
    np.savez(tmp_path / "one.npz", LOGITS)
    with pytest.raises(InputError, match=r"one unnamed array of scores \(arr_0\): give --labels FILE"):
        load_predictions(tmp_path / "one.npz")
    np.save(tmp_path / "y.npy", LABELS)
    same(load_predictions(tmp_path / "one.npz", options=ReadOptions(labels_file=tmp_path / "y.npy")))
    # beside named arrays, arr_0 is just another unknown key
    np.savez(tmp_path / "mixed.npz", LOGITS, labels=LABELS)
    with pytest.raises(InputError, match="to contain logits"):
        load_predictions(tmp_path / "mixed.npz")


def test_named_keys_win_and_missing_named_key_is_refused(tmp_path):
    np.savez(tmp_path / "p.npz", out=LOGITS, gt=LABELS, logits=LOGITS * 0, labels=(LABELS + 1) % K)
    same(load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="out", labels_key="gt")))
    with pytest.raises(InputError, match=r"contain 'nope' \(--logits-key\); it has: gt, labels, logits, out"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="nope"))
    with pytest.raises(InputError, match=r"contain 'nope' \(--labels-key\)"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(labels_key="nope"))


def test_pt_dict_pair_tuple_and_single_tensor(tmp_path):
    torch.save({"scores": torch.tensor(LOGITS), "targets": torch.tensor(LABELS)}, tmp_path / "d.pt")
    same(load_predictions(tmp_path / "d.pt"))
    torch.save((torch.tensor(LOGITS), torch.tensor(LABELS)), tmp_path / "t.pt")
    same(load_predictions(tmp_path / "t.pt"))
    torch.save([torch.tensor(LOGITS), torch.tensor(LABELS)], tmp_path / "l.pt")
    same(load_predictions(tmp_path / "l.pt"))
    torch.save(torch.tensor(LOGITS), tmp_path / "only.pt")
    np.save(tmp_path / "y.npy", LABELS)
    same(load_predictions(tmp_path / "only.pt", options=ReadOptions(labels_file=tmp_path / "y.npy")))
    torch.save([torch.tensor(LOGITS)], tmp_path / "one.pt")  # one batch of scores: labels needed
    with pytest.raises(InputError, match="holds one tensor of scores: give --labels FILE"):
        load_predictions(tmp_path / "one.pt")
    torch.save([1, 2, 3], tmp_path / "ints.pt")
    with pytest.raises(InputError, match="dict of tensors, a \\(logits, labels\\) pair or one tensor .*got a list of 3"):
        load_predictions(tmp_path / "ints.pt")


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


def _csv(rows, header=None, sep=","):
    lines = [sep.join(header)] if header else []
    lines += [sep.join(str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def test_csv_with_and_without_header_and_label_column_anywhere(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "plain.csv").write_text(_csv(rows))
    same(load_predictions(tmp_path / "plain.csv"), LOGITS.astype(np.float64))
    (tmp_path / "head.csv").write_text(_csv(rows, ["a", "b", "c", "d", "label"]))
    same(load_predictions(tmp_path / "head.csv"), LOGITS.astype(np.float64))
    moved = [[row[-1], *row[:-1]] for row in rows]
    (tmp_path / "first.csv").write_text(_csv(moved, ["target", "a", "b", "c", "d"], sep=";"))
    same(load_predictions(tmp_path / "first.csv"), LOGITS.astype(np.float64))
    (tmp_path / "named.csv").write_text(_csv(moved, ["truth", "a", "b", "c", "d"]))
    same(load_predictions(tmp_path / "named.csv", options=ReadOptions(labels_key="truth")), LOGITS.astype(np.float64))


@pytest.mark.parametrize("index_name, first", [("", 0), ("Unnamed: 0", 0), ("index", 1), ("id", 1000)])
def test_csv_row_index_column_as_pandas_writes_it_is_dropped_with_a_note(tmp_path, index_name, first):
    # pandas' DataFrame.to_csv() writes the index first, under an empty header cell.
    rows = [[first + i, *map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "pandas.csv").write_text(_csv(rows, [index_name, "a", "b", "c", "d", "label"]))
    pred = load_predictions(tmp_path / "pandas.csv")
    same(pred, LOGITS.astype(np.float64))
    assert any("row index" in note and "ignored" in note for note in pred.notes), pred.notes


def test_csv_first_column_stays_a_class_unless_it_is_an_index(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    # a class named "id" holding scores, not integers
    (tmp_path / "named.csv").write_text(_csv(rows, ["id", "b", "c", "d", "label"]))
    pred = load_predictions(tmp_path / "named.csv")
    same(pred, LOGITS.astype(np.float64))
    assert not any("row index" in note for note in pred.notes)
    # integer scores under an ordinary class name are scores
    integer_rows = [[i % 3, 1, 2, 3, int(LABELS[i])] for i in range(N)]
    (tmp_path / "ints.csv").write_text(_csv(integer_rows, ["a", "b", "c", "d", "label"]))
    assert load_predictions(tmp_path / "ints.csv").logits.shape == (N, K)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("sep", [";", "\t"])
def test_csv_with_decimal_commas_as_spreadsheets_write_them(tmp_path, header, sep):
    rows = [[*(f"{v:.9f}".replace(".", ",") for v in LOGITS[i]), int(LABELS[i])] for i in range(N)]
    (tmp_path / "euro.csv").write_text(_csv(rows, ["a", "b", "c", "d", "label"] if header else None, sep=sep))
    pred = load_predictions(tmp_path / "euro.csv")
    np.testing.assert_allclose(pred.logits, LOGITS, atol=1e-8)
    np.testing.assert_array_equal(pred.labels, LABELS)
    assert any("decimal commas" in note for note in pred.notes)


def test_jsonl_one_object_per_sample(tmp_path):
    lines = [json.dumps({"id": i, "logits": [float(v) for v in LOGITS[i]], "label": int(LABELS[i])}) for i in range(N)]
    (tmp_path / "p.jsonl").write_text("\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]) + "\n")  # a blank line
    same(load_predictions(tmp_path / "p.jsonl"))
    probs = softmax(LOGITS.astype(np.float64))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"y_prob": probs[i].tolist(), "y_true": int(LABELS[i])})
                                              + "\n" for i in range(N)))
    np.testing.assert_allclose(load_predictions(tmp_path / "q.jsonl").logits, probs)


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


def test_json_predictions_as_an_object_of_arrays_or_an_array_of_samples(tmp_path):
    columns = {"logits": LOGITS.astype(float).tolist(), "labels": LABELS.tolist(), "model": "resnet20",
               "metrics": {"accuracy": 0.9}}  # keys that are not arrays are ignored
    (tmp_path / "columns.json").write_text(json.dumps(columns))
    same(load_predictions(tmp_path / "columns.json"))
    samples = [{"probs": softmax(LOGITS[i:i + 1].astype(np.float64))[0].tolist(), "label": int(LABELS[i])}
               for i in range(N)]
    (tmp_path / "samples.json").write_text(json.dumps(samples, indent=1))
    np.testing.assert_allclose(load_predictions(tmp_path / "samples.json").logits, softmax(LOGITS.astype(np.float64)))
    hf = {"predictions": LOGITS.astype(float).tolist(), "label_ids": LABELS.tolist()}  # Trainer.predict's fields
    (tmp_path / "hf.json").write_text(json.dumps(hf))
    same(load_predictions(tmp_path / "hf.json"))
    split = {"val_logits": LOGITS[:20].astype(float).tolist(), "val_labels": LABELS[:20].tolist(),
             "test_logits": LOGITS[20:].astype(float).tolist(), "test_labels": LABELS[20:].tolist()}
    (tmp_path / "split.json").write_text(json.dumps(split))
    same(load_split_predictions(tmp_path / "split.json")["test"], LOGITS[20:], LABELS[20:])


@pytest.mark.parametrize("document, match", [
    ({"schema_version": 1, "kind": "evaluate", "results": {}}, "is an adacal 'evaluate' report"),
    ({"model": "resnet", "accuracy": 0.9}, r"none of its keys \(model, accuracy\) holds one"),
    ([], "it is an empty array"),
    ([{"logits": [1, 2], "label": 0}, {"logit": [1, 2], "label": 1}], "item 1 of .* keys of item 0"),
    ([{"logits": [1, 2], "label": 0}, [1, 2]], "item 1 of .* JSON object"),
    ({"logits": [[1, 2], [1, 2, 3]], "labels": [0, 1]}, "one length for every sample"),
    (3, "an object of arrays or an array of samples, got int"),
])
def test_json_refusals(tmp_path, document, match):
    (tmp_path / "p.json").write_text(json.dumps(document))
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "p.json")


@pytest.mark.parametrize("text, match", [
    ('{"logits": [1, 2], "label": 0}\n{"logits": [1, 2, 3], "label": 1}\n', "one length for every sample"),
    ('{"logits": [1, 2], "label": 0}\n{"logit": [1, 2], "label": 1}\n', "line 2 of .* keys of line 1"),
    ('{"logits": [1, 2], "label": 0}\n{oops\n', "line 2 of .* to be JSON"),
    ('{"logits": [1, 2], "label": 0}\n[1, 2]\n', "line 2 of .* JSON object"),
    ('{"logits": [1, NaN], "label": 0}\n', "to be finite, found NaN or Inf in 1 row"),
    ("\n\n", "empty"),
])
def test_jsonl_refusals(tmp_path, text, match):
    (tmp_path / "p.jsonl").write_text(text)
    with pytest.raises(InputError, match=match):
        load_predictions(tmp_path / "p.jsonl")


def test_json_predictions_with_python_non_finite_literals_in_unread_fields(tmp_path):
    """Python's json.dumps writes NaN / Infinity by default: a per-sample metric adacal never reads may hold them
    without the file being refused; the scores read are the file's."""
    records = [{"logits": [float(v) for v in row], "label": int(y), "acc": value}
               for row, y, value in zip(LOGITS, LABELS, [float("nan"), float("inf"), -float("inf")] * len(LABELS))]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(record) for record in records) + "\n")
    (tmp_path / "p.json").write_text(json.dumps({"logits": LOGITS.tolist(), "labels": LABELS.tolist(),
                                                 "loss": float("nan")}))
    for name in ("p.jsonl", "p.json"):
        same(load_predictions(tmp_path / name))
    assert "NaN" in (tmp_path / "p.json").read_text()


def test_adacal_reports_stay_strict_json(tmp_path):
    from adacal.sources import read_json

    (tmp_path / "r.json").write_text('{"a": NaN}')
    with pytest.raises(InputError, match="strict JSON"):
        read_json(tmp_path / "r.json")


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


def test_tsv_is_read_like_csv(tmp_path):
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "p.tsv").write_text(_csv(rows, ["a", "b", "c", "d", "label"], sep="\t"))
    same(load_predictions(tmp_path / "p.tsv"), LOGITS.astype(np.float64))


def test_csv_string_labels_map_through_the_header(tmp_path):
    names = ["cat", "dog", "bird", "fish"]
    rows = [[*LOGITS[i], names[LABELS[i]]] for i in range(N)]
    (tmp_path / "s.csv").write_text(_csv(rows, [*names, "label"]))
    pred = load_predictions(tmp_path / "s.csv")
    same(pred, LOGITS.astype(np.float64))
    assert any("class names mapped" in note for note in pred.notes)
    rows[5][-1] = "zebra"
    (tmp_path / "bad.csv").write_text(_csv(rows, [*names, "label"]))
    with pytest.raises(InputError, match="one of the 4 classes in .*'zebra' is not"):
        load_predictions(tmp_path / "bad.csv")


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


def test_binary_probabilities_and_decision_scores(tmp_path):
    p = RNG.uniform(size=N)
    y = RNG.integers(0, 2, N)
    np.savez(tmp_path / "p.npz", probs=p, labels=y)
    pred = load_predictions(tmp_path / "p.npz")
    np.testing.assert_allclose(pred.logits, np.stack([1 - p, p], axis=1))
    assert "positive-class probabilities" in pred.notes[0]
    two = evaluate_predictions(np.stack([1 - p, p], axis=1), y)["metrics"]
    assert evaluate_predictions(pred.logits, pred.labels)["metrics"] == two
    s = RNG.normal(scale=3, size=N)
    np.savez(tmp_path / "s.npz", scores=s, labels=y)
    pred = load_predictions(tmp_path / "s.npz")
    assert "decision scores" in pred.notes[0]
    np.testing.assert_allclose(softmax(pred.logits)[:, 1], 1 / (1 + np.exp(-s)))  # softmax([0, s]) = sigmoid(s)
    np.savez(tmp_path / "k.npz", probs=p, labels=LABELS)
    with pytest.raises(InputError, match=r"in \[0, 1\].*one score per sample is read as a binary model's"):
        load_predictions(tmp_path / "k.npz")


def test_one_score_column_is_read_as_binary_scores_and_a_label_column_as_indices(tmp_path):
    """Keras' sigmoid output is (N, 1), and its sparse targets are (N, 1) too: both read as their 1-D spellings."""
    p = RNG.uniform(size=N)
    s = RNG.normal(scale=3, size=N)
    y = RNG.integers(0, 2, N)
    for key, scores in (("probs", p), ("logits", s)):
        np.savez(tmp_path / "flat.npz", **{key: scores, "labels": y})
        np.savez(tmp_path / "column.npz", **{key: scores[:, None], "labels": y[:, None].astype(np.uint8)})
        flat, column = load_predictions(tmp_path / "flat.npz"), load_predictions(tmp_path / "column.npz")
        np.testing.assert_array_equal(column.logits, flat.logits)
        np.testing.assert_array_equal(column.labels, flat.labels)
        assert column.notes[0] == flat.notes[0].replace("flat.npz", "column.npz").replace("1-D scores",
                                                                                            "one score column (N, 1)")
        assert column.notes[1] == "column.npz:labels: a column (N, 1) of class labels, read as 1-D"
    names = np.array(["cat", "dog"])
    np.savez(tmp_path / "names.npz", probs=p[:, None], labels=names[y][:, None], classes=names)
    np.testing.assert_array_equal(load_predictions(tmp_path / "names.npz").labels, y)
    np.savez(tmp_path / "nan.npz", probs=np.where(np.arange(N) == 3, np.nan, p)[:, None], labels=y)
    with pytest.raises(InputError, match="found NaN or Inf in 1 row"):
        load_predictions(tmp_path / "nan.npz")


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


def test_renormalize_rounded_probabilities(tmp_path):
    probs = softmax(LOGITS.astype(np.float64))
    rounded = np.round(probs, 2)
    np.savez(tmp_path / "r.npz", probs=rounded, labels=LABELS)
    with pytest.raises(InputError, match="renormalise them"):
        evaluate_predictions(rounded, LABELS)
    # Read from a file, for any command: refused at once, naming the option that fixes it.
    with pytest.raises(InputError, match=r"r\.npz:probs .* rows sum to 1, as its name says, got values in \[0, 1\] whose rows sum to "
                                         r"0\.9\d+ to 1\.0\d+: pass --renormalize"):
        load_predictions(tmp_path / "r.npz")
    pred = load_predictions(tmp_path / "r.npz", options=ReadOptions(renormalize=True))
    np.testing.assert_allclose(pred.logits, rounded / rounded.sum(axis=1, keepdims=True))
    assert evaluate_predictions(pred.logits, LABELS)["assumed_input"] == "probs"
    np.savez(tmp_path / "l.npz", logits=LOGITS, labels=LABELS)
    with pytest.raises(InputError, match="non-negative with a positive sum in every row .* for --renormalize"):
        load_predictions(tmp_path / "l.npz", options=ReadOptions(renormalize=True))


@pytest.mark.parametrize("digits", [None, 1])
def test_percentages_are_refused_as_logits_and_read_with_renormalize(tmp_path, digits):
    """Softmax of percentages is nearly one-hot: read as logits they would describe a far more confident model."""
    probs = softmax(LOGITS.astype(np.float64))
    percent = probs * 100 if digits is None else np.round(probs * 100, digits)
    np.savez(tmp_path / "p.npz", probs=percent, labels=LABELS)
    with pytest.raises(InputError, match=r"got values in \[0, 100\] whose rows sum to .*percentages it seems: pass "
                                         r"--renormalize"):
        load_predictions(tmp_path / "p.npz")
    with pytest.raises(InputError, match="percentages it seems: renormalise them"):
        evaluate_predictions(percent, LABELS)
    pred = load_predictions(tmp_path / "p.npz", options=ReadOptions(renormalize=True))
    np.testing.assert_allclose(pred.logits, percent / percent.sum(axis=1, keepdims=True))
    assert evaluate_predictions(pred.logits, LABELS)["metrics"]["ece_em"] == pytest.approx(
        evaluate_predictions(probs, LABELS)["metrics"]["ece_em"], abs=0.01 if digits else 1e-12)
    # Logits that are non-negative but do not sum to about 100 are still logits; so are counts without --renormalize.
    np.savez(tmp_path / "counts.npz", scores=np.full((N, K), 3.0), labels=LABELS)
    assert load_predictions(tmp_path / "counts.npz").logits.max() == 3.0


@pytest.mark.parametrize("key", ["probs", "probabilities", "y_proba", "pred_probs", "test_probs"])
def test_a_probability_key_whose_rows_do_not_sum_to_1_is_refused_not_read_as_logits(tmp_path, key):
    """The probabilities of a few answer choices out of an LLM's vocabulary, or half of each row: softmax of them is
    nearly uniform, so read as logits every metric described another model (ECE 40 % instead of 19 %)."""
    probs = softmax(LOGITS.astype(np.float64))
    mass = np.random.default_rng(5).uniform(0.6, 0.95, (N, 1))
    labels_key = "test_labels" if key.startswith("test_") else "labels"
    np.savez(tmp_path / "part.npz", **{key: probs * mass, labels_key: LABELS})
    with pytest.raises(InputError, match=rf"part\.npz:{key} to be probabilities whose rows sum to 1, as its name "
                                         r"says, got values in \[0, 1\] whose rows sum to 0\.6\d* to 0\.9\d*: pass "
                                         r"--renormalize"):
        load_predictions(tmp_path / "part.npz")
    pred = load_predictions(tmp_path / "part.npz", options=ReadOptions(renormalize=True))
    np.testing.assert_allclose(pred.logits, probs, atol=1e-12)
    # JSON Lines as evaluation harnesses write them
    lines = [json.dumps({"probs": row.tolist(), "label": int(y)}) for row, y in zip(probs * mass, LABELS)]
    (tmp_path / "llm.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="as its name says"):
        load_predictions(tmp_path / "llm.jsonl")
    # Log-probabilities under a probability key contradict the name: refused, and --scores-kind logits reads them
    np.savez(tmp_path / "logp.npz", **{key: np.log(probs), labels_key: LABELS})
    with pytest.raises(InputError, match=r"as its name says, got values from -\d.* --scores-kind logits"):
        load_predictions(tmp_path / "logp.npz")
    pred = load_predictions(tmp_path / "logp.npz", options=ReadOptions(scores_kind="logits"))
    np.testing.assert_allclose(softmax(pred.logits), probs, atol=1e-12)
    assert pred.interpretation.kind == "logits" and pred.interpretation.kind_rule == "--scores-kind logits"
    # Under a neutral key, such values stay logits (a model's raw outputs may lie in [0, 1])
    np.savez(tmp_path / "neutral.npz", logits=probs * 0.5, labels=LABELS)
    np.testing.assert_allclose(load_predictions(tmp_path / "neutral.npz").logits, probs * 0.5)


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


def test_split_files_and_val_file(tmp_path):
    np.savez(tmp_path / "s.npz", val_probs=softmax(LOGITS[:20]), val_y=LABELS[:20], test_logits=LOGITS[20:],
             test_labels=LABELS[20:])
    splits = load_split_predictions(tmp_path / "s.npz")
    same(splits["test"], LOGITS[20:], LABELS[20:])
    np.testing.assert_array_equal(splits["val"].labels, LABELS[:20])
    np.save(tmp_path / "val.npy", LOGITS[:20])
    np.save(tmp_path / "val_labels.npy", LABELS[:20])
    torch.save((torch.tensor(LOGITS[20:]), torch.tensor(LABELS[20:])), tmp_path / "test.pt")
    inputs = resolve_calibration_input(tmp_path / "test.pt", val=tmp_path / "val.npy")
    same(inputs.val, LOGITS[:20], LABELS[:20])
    same(inputs.test, LOGITS[20:], LABELS[20:])
    with pytest.raises(InputError, match="--labels only with --val"):
        resolve_calibration_input(tmp_path / "s.npz", options=ReadOptions(labels_file=tmp_path / "val_labels.npy"))


def test_ood_scores_need_no_labels(tmp_path):
    np.save(tmp_path / "o.npy", LOGITS)
    np.testing.assert_allclose(load_scores(tmp_path / "o.npy"), LOGITS)


# ------------------------------------------------------------------------------------------- only regular files


@pytest.fixture()
def fifo(tmp_path):
    path = tmp_path / "preds.npz"
    os.mkfifo(path)
    return path


def test_fifo_socket_device_and_folder_are_refused_without_blocking(tmp_path, fifo):
    started = time.monotonic()
    with pytest.raises(InputError, match="to be a regular file, but it is a FIFO"):
        open_regular(fifo, "a predictions file")
    with pytest.raises(InputError, match="FIFO"):
        load_predictions(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_json(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_history(fifo)
    assert time.monotonic() - started < 5
    with pytest.raises(InputError, match="character device"):
        read_json("/dev/null")
    with pytest.raises(InputError, match="is a folder"):
        load_predictions(tmp_path)
    sock_path = tmp_path / "s.npz"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        with pytest.raises(InputError, match="a socket"):
            load_predictions(sock_path)
    finally:
        server.close()


def test_fifo_in_a_real_process_returns_at_once(tmp_path, fifo):
    """A command given a FIFO (no writer) must answer in one line, not wait for data forever."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for argv in (["evaluate", str(fifo)], ["ood", "--in-preds", str(fifo), "--out-preds", str(fifo)],
                 ["calibrate", str(fifo)]):
        done = subprocess.run([sys.executable, "-m", "adacal", *argv], capture_output=True, text=True, timeout=60,
                              env=env, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "FIFO" in lines[0], done.stderr


def test_no_warning_prints_ahead_of_the_error_line(tmp_path):
    """torch warns while loading a sparse tensor; in a real process only the one Error: line may reach stderr."""
    torch.save({"logits": torch.eye(K).to_sparse(), "labels": torch.arange(K)}, tmp_path / "s.pt")
    done = subprocess.run([sys.executable, "-m", "adacal", "evaluate", str(tmp_path / "s.pt")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "dense tensor" in done.stderr, done.stderr


# ------------------------------------------------------------------------------------------- declared sizes


def _npy_bytes(shape, dtype="<f8", body=b""):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": dtype, "fortran_order": False, "shape": shape})
    return out.getvalue() + body


def test_npy_header_declaring_more_than_the_file_holds(tmp_path):
    (tmp_path / "big.npy").write_bytes(_npy_bytes((10**12, 10), body=b"\0" * 64))
    started = time.monotonic()
    with pytest.raises(InputError, match=r"header declares \(shape \(1000000000000, 10\)\).*truncated"):
        read_npy(tmp_path / "big.npy")
    assert time.monotonic() - started < 2


def test_npz_member_header_declaring_a_huge_shape(tmp_path):
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("logits.npy", _npy_bytes((10**9, 10**6), body=b"\0" * 80))
        archive.writestr("labels.npy", _npy_bytes((3,), "<i8", b"\0" * 24))
    with pytest.raises(InputError, match="its zip entry holds"):
        load_predictions(tmp_path / "big.npz")


def test_memory_budget_is_checked_before_reading(tmp_path, monkeypatch):
    np.savez(tmp_path / "p.npz", logits=LOGITS.astype(np.float64), labels=LABELS)
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", "1000")
    with pytest.raises(InputError, match=r"p.npz:logits to fit in memory, but it would need 1.4 KiB uncompressed and 1000 bytes is available"):
        load_predictions(tmp_path / "p.npz")


def _zip_bomb(path: Path, used: dict, size: int) -> None:
    """An .npz whose member `junk` inflates to `size` bytes of zeros (deflated to a few hundred KiB)."""
    np.savez(path, **used)
    header = _npy_bytes((size,), "|u1")
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\0" * (1 << 20)
    parts = [compressor.compress(header)]
    for _ in range(size // len(chunk)):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    data = b"".join(parts)
    crc = zlib.crc32(chunk * 0)
    crc = zlib.crc32(header)
    for _ in range(size // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    info = zipfile.ZipInfo("junk.npy")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "a") as archive:
        # Raw deflate data written as the member, with its true CRC and sizes.
        info.CRC, info.compress_size, info.file_size = crc, len(data), len(header) + size
        archive.fp.seek(archive.start_dir)
        info.header_offset = archive.fp.tell()
        archive.fp.write(info.FileHeader())
        archive.fp.write(data)
        archive.start_dir = archive.fp.tell()
        archive.filelist.append(info)
        archive.NameToInfo[info.filename] = info
        archive._didModify = True


def test_zip_bomb_under_an_unused_key_costs_nothing(tmp_path, monkeypatch):
    path = tmp_path / "bomb.npz"
    _zip_bomb(path, {"logits": LOGITS, "labels": LABELS}, 64 << 20)
    assert path.stat().st_size < 1 << 20
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(16 << 20))
    started = time.monotonic()
    same(load_predictions(path))  # junk is never decompressed
    assert time.monotonic() - started < 2
    with NpzArchive(path) as archive:
        assert sorted(archive.files) == ["junk", "labels", "logits"]
        with pytest.raises(InputError, match=r"junk to fit in memory, but it would need 64.0 MiB uncompressed"):
            archive["junk"]
    with pytest.raises(InputError, match="would need 64.0 MiB"):
        load_predictions(path, options=ReadOptions(logits_key="junk"))


def test_torch_archive_entries_are_sized_before_loading(tmp_path, monkeypatch):
    torch.save({"logits": torch.zeros(1 << 15, 8), "labels": torch.zeros(1 << 15, dtype=torch.long)}, tmp_path / "b.pt")
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(256 << 10))
    with pytest.raises(InputError, match=r"b.pt to fit in memory, but its entries declare 1.3 MiB and 256.0 KiB"):
        load_predictions(tmp_path / "b.pt")


def test_crafted_zip_entry_declaring_a_huge_size(tmp_path, monkeypatch):
    """A central directory that declares a member of 4 GiB is refused from the declaration, unread."""
    np.savez(tmp_path / "p.npz", logits=LOGITS, labels=LABELS)
    data = bytearray((tmp_path / "p.npz").read_bytes())
    central = data.find(b"PK\x01\x02")  # the first member's central directory record (logits.npy)
    data[central + 24:central + 28] = (0xFFFFFFFE).to_bytes(4, "little")  # its uncompressed size
    (tmp_path / "lying.npz").write_bytes(bytes(data))
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(1 << 30))
    with pytest.raises(InputError, match=r"logits to fit in memory, but it would need 4.0 GiB uncompressed"):
        load_predictions(tmp_path / "lying.npz")


def test_object_arrays_are_never_unpickled(tmp_path):
    np.savez(tmp_path / "o.npz", logits=np.array([{"a": 1}], dtype=object), labels=LABELS[:1])
    with pytest.raises(InputError, match="holds Python objects"):
        load_predictions(tmp_path / "o.npz")


def test_expanded_sparse_and_nested_tensors(tmp_path, monkeypatch):
    torch.save({"logits": torch.zeros(1, 1).expand(10**7, 1000), "labels": torch.zeros(10**7, dtype=torch.long)},
               tmp_path / "x.pt")
    assert (tmp_path / "x.pt").stat().st_size < 100 << 20  # the view's storage is tiny; its shape is not
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(1 << 30))
    with pytest.raises(InputError, match=r"'logits' in .* to fit in memory, but its shape \(10000000, 1000\) would need 37.3 GiB"):
        load_predictions(tmp_path / "x.pt")
    torch.save({"logits": torch.eye(4).to_sparse(), "labels": torch.arange(4)}, tmp_path / "s.pt")
    with pytest.raises(InputError, match="'logits' in .* to be a dense tensor, got a sparse_coo one"):
        load_predictions(tmp_path / "s.pt")
    small = {"logits": torch.zeros(1, K).expand(N, K), "labels": torch.tensor(LABELS)}
    torch.save(small, tmp_path / "ok.pt")
    assert load_predictions(tmp_path / "ok.pt").logits.shape == (N, K)  # a small view is fine


# ------------------------------------------------------------------------------------------- JSON documents


@pytest.mark.parametrize("text, match", [
    ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "nest at most"),
    ("[" * 200_000 + "]" * 200_000, "nest at most"),
    ('{"a": ' + "9" * 5000 + "}", "integer of 5000 digits"),
    ('{"a": ' + "9" * (MAX_INT_DIGITS + 1) + "}", "digits"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": -Infinity}', "-Infinity is not a JSON number"),
    ('{"a": 1e999}', "out of range for a float"),
    ('{"a": 1', "could not be parsed"),
    (b'{"a": "\xff"}', "not UTF-8"),
])
def test_json_limits(text, match):
    with pytest.raises(InputError, match=match):
        parse_json(text, label="doc.json")


def _report(kind, results, config=None):
    return {"schema_version": 1, "kind": kind, "adacal_version": "0", "created": "now", "config": config or {},
            "results": results}


@pytest.mark.parametrize("kind, results, match", [
    ("evaluate", {"metrics": {"ece": "high"}}, r"'results.metrics.ece' .* to be a number, got a string \"high\""),
    ("evaluate", {"metrics": [0.1]}, "'results.metrics' in .* to be an object, got a list"),
    ("evaluate", {"metrics": {}, "bins": {"equal_width": {"edges": [0], "counts": [-1], "mean_confidence": [],
                                                          "accuracy": []}}}, r"counts\[0\]' .* integer >= 0"),
    ("calibrate", {"calibrators": {"t": {"params": []}}}, "'results.calibrators.t.params' .* to be an object"),
    ("calibrate", {"calibrators": {"t": {"calibrator": {"method": 3, "format_version": 1, "params": {}}}}},
     "'results.calibrators.t.calibrator.method' .* non-empty string"),
    ("ood", {"scores": {"entropy": {"pre": {"auroc": 1.5}}}}, "'results.scores.entropy.pre.auroc' .* in \\[0, 1\\]"),
    ("ood", {"scores": {}, "in": {"name": "x", "n": 0}}, "'results.in.n' .* integer >= 1"),
    ("calibrator", {"calibrator": {"method": "temperature", "format_version": True, "params": {}}},
     "'results.calibrator.format_version' .* integer >= 1, got true/false"),
    ("calibrator", {}, "'results.calibrator', but it is missing"),
])
def test_report_schemas(tmp_path, kind, results, match):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report(kind, results)))
    with pytest.raises(InputError, match=match):
        read_report(path, kind)


def test_config_json_schema(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_report("train-config", {}, {"dataset": "digits", "loss": "ce", "epochs": "ten"})))
    with pytest.raises(InputError, match="'config.epochs' in .* to be an integer >= 0, got a string \"ten\""):
        read_report(path, "train-config")


def _history_line(epoch, **extra):
    return json.dumps({"epoch": epoch, "lr": 0.1, "train": {"loss": 1.0}, "val": {"error": 0.5}, **extra})


@pytest.mark.parametrize("content, match", [
    (_history_line(1) + "\n" + _history_line("two") + "\n", "'epoch' in line 2 .* integer >= 1"),
    (_history_line(1) + "\n" + "garbage\n" + _history_line(3) + "\n", "line 2 of .* could not be parsed"),
    ((_history_line(1) + "\n").encode() + b'{"epoch": 2, "x": "\xff\xfe"}\n', "line 2 of .*not UTF-8"),
    (_history_line(1) + "\n[1, 2]\n", "line 2 of .* epoch record \\(a JSON object\\), got a list"),
    (_history_line(2) + "\n" + _history_line(1) + "\n", "1, 2, 3, ... in order .* line 1 .* records epoch 2 first"),
    (_history_line(1) + "\n" + _history_line(1) + "\n", "line 2 .* records epoch 1 after epoch 1"),
    (_history_line(1) + "\n" + _history_line(3) + "\n", "line 2 .* records epoch 3 after epoch 1"),
    (_history_line(1, lr="fast") + "\n", "'lr' in line 1 .* a number"),
    (_history_line(1) + "\n" + '{"epoch": 2, "lr": NaN}' + "\n", "line 2 .* NaN is not a JSON number"),
])
def test_history_lines_are_validated_with_their_number(tmp_path, content, match):
    path = tmp_path / "history.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=match):
        read_history(path, torn_tail=True)


def test_history_torn_tail_only_when_asked_and_only_at_the_end(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(_history_line(1) + "\n" + _history_line(2) + "\n" + '{"epoch": 3, "lr": 0.')
    assert [r["epoch"] for r in read_history(path, torn_tail=True)] == [1, 2]
    with pytest.raises(InputError, match="line 3"):
        read_history(path)


# ------------------------------------------------------------------------------------------- checkpoints


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from adacal.models import build_model
    from adacal.training.checkpoints import make_checkpoint

    model = build_model("mlp", num_classes=3, input_shape=(8,))
    return make_checkpoint(model_name="mlp", model_options={}, dataset="digits", num_classes=3, input_shape=(8,),
                           config={}, epoch=1, model_state=model.state_dict())


@pytest.mark.parametrize("change, match", [
    ({"num_classes": 10**12}, "'num_classes' .* integer from 2 to 10000000"),
    ({"input_shape": [10**6, 10**6]}, "'input_shape' .* at most 268435456 values"),
    ({"model_options": {"hidden": [10**6, 10**6]}}, "the model 'mlp' .* to fit in memory, but it would need"),
    ({"model_options": {"hidden": 10**12}}, "model option 'hidden'"),
    ({"model_options": {"dropout": float("inf")}}, "model option 'dropout'"),
    ({"num_classes": 5}, "weights to fit model 'mlp', but they do not .* has shape"),
    ({"model_state": {"w": [1, 2]}}, "'model_state' .* dict of tensors"),
    ("sparse", "to be a dense tensor, got a sparse_coo one"),
    ("complex", "to be a real tensor"),
    ("missing", "missing"),
])
def test_checkpoint_contents(tmp_path, checkpoint, change, match):
    from adacal.training.checkpoints import check_weights_fit, load_checkpoint

    if change == "sparse":
        key = next(iter(checkpoint["model_state"]))
        change = {"model_state": {**checkpoint["model_state"], key: checkpoint["model_state"][key].to_sparse()}}
    elif change == "complex":
        key = next(iter(checkpoint["model_state"]))
        change = {"model_state": {**checkpoint["model_state"], key: checkpoint["model_state"][key].to(torch.complex64)}}
    elif change == "missing":
        state = dict(checkpoint["model_state"])
        state.pop(next(iter(state)))
        change = {"model_state": state}
    torch.save({**checkpoint, **change}, tmp_path / "c.pt")
    started = time.monotonic()
    with pytest.raises(InputError, match=match):
        load_checkpoint(tmp_path / "c.pt")
        check_weights_fit(torch.load(tmp_path / "c.pt", weights_only=True), tmp_path / "c.pt")
    assert time.monotonic() - started < 5


def test_good_checkpoint_loads(tmp_path, checkpoint):
    from adacal.training.checkpoints import load_checkpoint

    torch.save(checkpoint, tmp_path / "c.pt")
    assert load_checkpoint(tmp_path / "c.pt")["num_classes"] == 3


# ------------------------------------------------------------------------------------------- import graph


def _imports(repo: Path) -> dict[str, set[str]]:
    """Every adacal module's imports of other adacal modules, lazy (function-level) ones included."""
    modules = {}
    for path in (repo / "adacal").rglob("*.py"):
        parts = list(path.relative_to(repo).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, package)
    graph = {}
    for name, (path, package) in modules.items():
        base_package = name if package else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = base_package.split(".")[: len(base_package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            found |= {target for target in targets if target in modules and target != name}
        graph[name] = found
    return graph


def test_no_import_cycle_among_adacal_modules():
    graph = _imports(REPO)
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, " ; ".join(" → ".join(cycle) for cycle in cycles)
    assert "adacal.training.inference" in graph["adacal.resolve"]
    assert not any(m == "adacal.training" for m in graph["adacal.evaluation"] | graph["adacal.resolve"])


def test_every_reader_module_imports_first_in_a_fresh_interpreter():
    """Import order must not matter: each module, imported first, loads (no partially-initialised module)."""
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m == 'adacal' or m.startswith('adacal.')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
        "import adacal.sources\n"
    )
    names = ["adacal.sources", "adacal.sources.files", "adacal.predictions", "adacal.training.checkpoints",
             "adacal.training.inference", "adacal.training", "adacal.evaluation", "adacal.ood", "adacal.runs",
             "adacal.reports", "adacal.cli"]
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    light = subprocess.run([sys.executable, "-c", "import sys, adacal.sources; print('torch' in sys.modules)"],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert light.stdout.strip() == "False", light.stderr  # reading a .npz or .csv never imports torch


# ------------------------------------------------------------------------------------------- through the CLI


def _cli(*argv, cwd=None):
    from typer.testing import CliRunner

    from adacal.cli import app

    return CliRunner().invoke(app, [str(a) for a in argv])


def test_evaluate_reads_every_format_to_the_same_metrics(tmp_path):
    """The same outputs as .npz, .pt pair, .npy + labels, .csv: identical metrics in every report."""
    np.savez(tmp_path / "ref.npz", logits=LOGITS, labels=LABELS)
    torch.save((torch.tensor(LOGITS), torch.tensor(LABELS)), tmp_path / "pair.pt")
    np.save(tmp_path / "x.npy", LOGITS)
    np.save(tmp_path / "x_labels.npy", LABELS)
    rows = [[*map(repr, map(float, LOGITS[i])), int(LABELS[i])] for i in range(N)]
    (tmp_path / "t.csv").write_text(_csv(rows, ["a", "b", "c", "d", "y"]))
    np.savez(tmp_path / "named.npz", out=LOGITS, gt=LABELS)
    metrics = []
    for name, extra in (("ref.npz", []), ("pair.pt", []), ("x.npy", []), ("t.csv", []),
                        ("named.npz", ["--logits-key", "out", "--labels-key", "gt"])):
        result = _cli("evaluate", tmp_path / name, "--json", tmp_path / f"{name}.json", "-q", *extra)
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / f"{name}.json").read_text())
        metrics.append(report["results"]["metrics"])
    for other in metrics[1:]:
        assert other == pytest.approx(metrics[0], rel=1e-6)
    assert report["config"]["source"]["logits_key"] == "out"


def test_binary_assumption_is_said_on_stderr_and_in_the_report(tmp_path):
    p = RNG.uniform(size=N)
    np.savez(tmp_path / "b.npz", probs=p, labels=RNG.integers(0, 2, N))
    result = _cli("evaluate", tmp_path / "b.npz", "--json", tmp_path / "b.json")
    assert result.exit_code == 0, result.output
    assumed = [line for line in result.stderr.splitlines() if line.startswith("Note: ") and "read " not in line[:11]]
    assert len(assumed) == 1 and "positive-class probabilities" in assumed[0]
    assert result.stderr.count("Note: read ") == 1  # and how the file was read
    assumed = json.loads((tmp_path / "b.json").read_text())["config"]["source"]["assumed"]
    assert "positive-class probabilities" in assumed[0]


def test_calibrate_with_val_file_and_ood_with_other_keys(tmp_path):
    np.savez(tmp_path / "val.npz", probabilities=softmax(LOGITS[:20].astype(np.float64)), targets=LABELS[:20])
    np.savez(tmp_path / "test.npz", probabilities=softmax(LOGITS[20:].astype(np.float64)), targets=LABELS[20:])
    result = _cli("calibrate", tmp_path / "test.npz", "--val", tmp_path / "val.npz", "--method", "histogram",
                  "--json", tmp_path / "c.json", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["config"]["val"] == str(tmp_path / "val.npz")
    np.save(tmp_path / "ood.npy", LOGITS[:10] * 0.1)
    result = _cli("ood", "--in-preds", tmp_path / "test.npz", "--out-preds", tmp_path / "ood.npy", "--json",
                  tmp_path / "o.json", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o.json").read_text())["results"]["out"]["n"] == 10


def test_renormalize_through_the_cli(tmp_path):
    rounded = np.round(softmax(LOGITS.astype(np.float64)), 2)
    np.savez(tmp_path / "r.npz", probs=rounded, labels=LABELS)
    assert _cli("evaluate", tmp_path / "r.npz", "-q").exit_code == 2
    result = _cli("evaluate", tmp_path / "r.npz", "--renormalize", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    expected = evaluate_predictions(rounded / rounded.sum(axis=1, keepdims=True), LABELS)["metrics"]
    assert report["results"]["metrics"] == pytest.approx(expected)
    assert report["config"]["source"]["renormalize"] is True and "renormalised" in result.stderr


def test_a_runs_config_json_points_to_the_run_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"schema_version": 1, "kind": "train-config", "config": {}}))
    with pytest.raises(InputError, match=r"is a run's config.json \(options, not scores\); give the run folder"):
        load_predictions(run / "config.json")


def test_float16_probabilities_read_from_a_file_score_as_the_array_itself(tmp_path):
    """A float16 file is normalised on reading by the metrics' own rule (rows within rounding of 1 as given, the rest
    over their sums), so every metric of the file equals that of the float16 array passed directly, bit for bit."""
    from adacal.metrics import compute_metrics

    rng = np.random.default_rng(6)
    probs = softmax(rng.normal(size=(300, 6)) * 2).astype(np.float16)
    probs[:40] = np.float16([0.5, 0.25, 0.125, 0.0625, 0.0625, 2.0**-22])  # summing to 1 + 2^-22: kept as given
    probs[:40] = probs[:40, rng.permutation(6)]
    labels = rng.integers(0, 6, size=300)
    assert np.abs(probs.astype(np.float64).sum(axis=1) - 1.0).max() > 1e-4  # the rest: off by float16 rounding
    path = tmp_path / "half.npz"
    np.savez(path, probs=probs, labels=labels)
    read = load_predictions(path)
    assert compute_metrics(read.logits, read.labels) == compute_metrics(probs, labels)
