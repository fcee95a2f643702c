"""Top-label `(confidence, correct)` files (adacal.interpretation.confidence, docs/inputs.md "Top-label
confidences"): written as LLM evaluation scripts and classifiers' logs write them, in every format with named
arrays, read alike and measured by the top-label metrics; refused where the names leave a binary model's P(class 1)
as another reading, and by every command but evaluate."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from adacal.cli import app
from adacal.errors import InputError
from adacal.evaluation import evaluate_confidences
from adacal.interpretation import load_predictions
from adacal.interpretation.confidence import TOP_LABEL, is_confidence_name, is_correct_name, load_top_label
from adacal.metrics import top_label_metrics
from adacal.sources import ReadOptions

from cli_helpers import one_line_error

RNG = np.random.default_rng(39)
N = 300
CONF = np.round(RNG.uniform(0.1, 1.0, N), 4)  # many answers under 50 %: a binary reading flips them
CORRECT = RNG.uniform(size=N) < CONF
runner = CliRunner()


def _records(conf_key="confidence", correct_key="correct"):
    return [{"question_id": f"q{i}", "question": "Which of 2, 3 is prime?", conf_key: float(CONF[i]),
             correct_key: bool(CORRECT[i])} for i in range(N)]


def _write(tmp_path, layout):
    """The same answers as one layout writes them; returns the path."""
    frame = pd.DataFrame(_records())
    if layout == "jsonl":
        path = tmp_path / "answers.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in _records()))
    elif layout == "json records":
        path = tmp_path / "answers.json"
        path.write_text(json.dumps(_records()))
    elif layout == "json arrays":
        path = tmp_path / "arrays.json"
        path.write_text(json.dumps({"confidence": CONF.tolist(), "correct": CORRECT.astype(int).tolist()}))
    elif layout == "csv":
        path = tmp_path / "answers.csv"
        frame.to_csv(path, index=False)  # question text with a comma: quoted
    elif layout == "csv with pandas index":
        path = tmp_path / "indexed.csv"
        frame.to_csv(path)
    elif layout == "csv 0/1 ids":
        path = tmp_path / "ids.csv"
        frame.assign(question_id=range(N), correct=CORRECT.astype(int)).drop(columns="question").to_csv(
            path, index=False)
    elif layout == "tsv":
        path = tmp_path / "answers.tsv"
        frame.to_csv(path, sep="\t", index=False)
    elif layout == "csv.gz":
        path = tmp_path / "answers.csv.gz"
        path.write_bytes(gzip.compress(frame.to_csv(index=False).encode()))
    elif layout == "npz":
        path = tmp_path / "answers.npz"
        np.savez(path, confidence=CONF, correct=CORRECT)
    elif layout == "pt dicts":
        path = tmp_path / "answers.pt"
        torch.save([{"confidence": torch.tensor(CONF[i]), "correct": torch.tensor(bool(CORRECT[i]))}
                    for i in range(N)], path)
    elif layout == "pt tensors":
        path = tmp_path / "tensors.pt"
        torch.save({"confidence": torch.from_numpy(CONF), "correct": torch.from_numpy(CORRECT)}, path)
    return path


LAYOUTS = ["jsonl", "json records", "json arrays", "csv", "csv with pandas index", "csv 0/1 ids", "tsv", "csv.gz",
           "npz", "pt dicts", "pt tensors"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_reads_the_same_answers(tmp_path, layout):
    read = load_top_label(_write(tmp_path, layout))
    assert read is not None
    np.testing.assert_array_equal(read.confidences, CONF)
    np.testing.assert_array_equal(read.correct, CORRECT)
    record = read.interpretation
    assert (record.kind, record.n, record.k) == (TOP_LABEL, N, None)
    assert record.scores_key == "confidence" and record.labels_key == "correct"
    if layout.startswith(("csv", "tsv")) and layout != "csv 0/1 ids":
        assert any("question_id" in note and "ignored" in note for note in read.notes), read.notes


@pytest.mark.parametrize("layout", ["jsonl", "csv", "npz"])
def test_evaluate_reports_the_top_label_metrics_of_the_answers(tmp_path, layout):
    """Bit for bit the figures of `top_label_metrics` on the arrays, answers under 50 % not flipped (the issue's
    misreading gave another error and ECE-EW); the report records the reading."""
    path = _write(tmp_path, layout)
    result = runner.invoke(app, ["evaluate", str(path), "--json", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    assert "top-label confidences" in result.stdout and "AUROC-CORRECT" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["results"]["metrics"] == top_label_metrics(CONF, CORRECT)
    assert report["results"]["metrics"]["error"] == pytest.approx(1 - CORRECT.mean(), abs=1e-15)
    assert report["results"]["input"]["kind"] == TOP_LABEL and report["results"]["input"]["k"] is None
    assert "classwise_ece" not in report["results"]["metrics"] and "nll" not in report["results"]["metrics"]
    assert "Note: top-label confidences: the metrics of every class" in result.stderr


def test_bootstrap_intervals_and_a_split_file(tmp_path):
    np.savez(tmp_path / "split.npz", val_confidence=CONF[::-1], val_correct=CORRECT[::-1], test_confidence=CONF,
             test_correct=CORRECT)
    read = load_top_label(tmp_path / "split.npz")
    assert read.interpretation.split == "test" and read.interpretation.scores_key == "test_confidence"
    np.testing.assert_array_equal(read.confidences, CONF)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "split.npz"), "--bootstrap", "30", "--json", "-"])
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert results["bootstrap"] == evaluate_confidences(CONF, CORRECT, bootstrap=30)["bootstrap"]  # file = API
    for key in ("ece_em", "ece_ew", "auroc_correct"):
        interval = results["bootstrap"][key]
        assert interval["low"] < interval["high"] and interval["std"] > 0, key


@pytest.mark.parametrize("conf_key, correct_key", [
    ("confidence", "is_correct"), ("conf", "acc"), ("p_max", "accuracy"), ("max_prob", "hit"),
    ("top_prob", "correct"), ("pred_confidence", "answer_correct"), ("Confidence", "Correct"),
    ("model-confidence", "exact_match"),
])
def test_name_spellings(tmp_path, conf_key, correct_key):
    assert is_confidence_name(conf_key) and is_correct_name(correct_key)
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in _records(conf_key, correct_key)))
    read = load_top_label(path)
    assert read is not None and read.interpretation.scores_key == conf_key
    np.testing.assert_array_equal(read.correct, CORRECT)


def test_class_score_names_are_no_confidences():
    for name in ("logits", "probs", "scores", "y_score", "label", "labels", "y_pred", "entropy", "margin"):
        assert not is_confidence_name(name) and not is_correct_name(name), name


def test_percent_confidences_are_read_with_a_note(tmp_path):
    np.savez(tmp_path / "pct.npz", confidence=CONF * 100, correct=CORRECT)
    read = load_top_label(tmp_path / "pct.npz")
    np.testing.assert_allclose(read.confidences, CONF, rtol=0, atol=1e-15)
    assert any("percentages" in note for note in read.notes)


def test_names_that_leave_a_binary_model_as_another_reading_are_refused(tmp_path):
    """`score` beside 0/1 `label`s, `confidence` beside `label`, or a headerless table of a number in [0, 1] and 0/1:
    a binary model's P(class 1) and class, or the top answer's confidence and correctness — refused naming both
    options; each option then reads it its way."""
    labels = CORRECT.astype(int)
    np.savez(tmp_path / "score.npz", score=CONF, label=labels)
    pd.DataFrame({"confidence": CONF, "label": labels}).to_csv(tmp_path / "conf_label.csv", index=False)
    pd.DataFrame({"score": CONF, "label": labels}).to_csv(tmp_path / "score_label.csv", index=False)
    pd.DataFrame({"p": CONF, "y": labels}).to_csv(tmp_path / "headerless.csv", index=False, header=False)
    for name in ("score.npz", "conf_label.csv", "score_label.csv", "headerless.csv"):
        path = tmp_path / name
        result = runner.invoke(app, ["evaluate", str(path)])
        one_line_error(result, "--scores-kind confidence", "--scores-kind probs")
        with pytest.raises(InputError, match="--scores-kind probs"):  # calibrate and ood read through here too
            load_predictions(path)
        top = load_top_label(path, options=ReadOptions(scores_kind="confidence"))
        np.testing.assert_array_equal(top.confidences, CONF)
        np.testing.assert_array_equal(top.correct, CORRECT)
        extra = ["--logits-key", "score"] if name == "score.npz" else []
        result = runner.invoke(app, ["evaluate", str(path), "--scores-kind", "probs", "--json", "-", *extra])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["results"]["input"]["kind"] == "binary probabilities"


def test_headers_that_name_a_binary_model_keep_their_reading(tmp_path):
    """`p,label` (a probability beside a class label), or labels beyond 0/1, are class scores: read as before."""
    pd.DataFrame({"p": CONF, "label": CORRECT.astype(int)}).to_csv(tmp_path / "p.csv", index=False)
    assert load_top_label(tmp_path / "p.csv") is None
    assert load_predictions(tmp_path / "p.csv").interpretation.kind == "binary probabilities"
    np.savez(tmp_path / "multi.npz", score=CONF, label=RNG.integers(0, 5, N))
    assert load_top_label(tmp_path / "multi.npz") is None


def test_other_refusals(tmp_path):
    np.savez(tmp_path / "both.npz", logits=RNG.normal(size=(N, 3)), labels=RNG.integers(0, 3, N), confidence=CONF,
             correct=CORRECT)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "both.npz")]), "not both",
                   "--scores-kind confidence")
    result = runner.invoke(app, ["evaluate", str(tmp_path / "both.npz"), "--scores-kind", "logits", "--json", "-"])
    assert result.exit_code == 0 and json.loads(result.stdout)["results"]["input"]["kind"] == "logits"
    np.savez(tmp_path / "two.npz", confidence=CONF, p_max=CONF, correct=CORRECT)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "two.npz")]), "confidence, p_max", "--logits-key")
    np.savez(tmp_path / "odd.npz", confidence=CONF, correct=np.where(CORRECT, 1, 2))
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "odd.npz")]), "booleans or 0/1", "row")
    np.savez(tmp_path / "above.npz", confidence=np.where(np.arange(N) == 7, 1.2, CONF), correct=CORRECT)
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "above.npz")]), "row 7: 1.2")
    np.savez(tmp_path / "logits.npz", logits=RNG.normal(size=(N, 3)), labels=RNG.integers(0, 3, N))
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "logits.npz"), "--scores-kind", "confidence"]),
                   "--scores-kind confidence", "confidence, conf")
    np.savez(tmp_path / "answers.npz", confidence=CONF, correct=CORRECT)
    (tmp_path / "cal.json").write_text("{}")
    one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "answers.npz"), "--metrics", "classwise-ece"]),
                   "every class's probability")


def test_commands_that_need_class_scores_refuse_top_label_files(tmp_path):
    """ood would read a (confidence, correct) table as a binary model's scores: refused in one line; calibrate fits
    confidence maps on it (tests/commands/test_calibrate_confidences.py), and refuses --scores-kind confidence beside a
    --val file of class scores."""
    csv_path = tmp_path / "ids.csv"
    pd.DataFrame({"id": range(N), "confidence": CONF, "correct": CORRECT.astype(int)}).to_csv(csv_path, index=False)
    np.savez(tmp_path / "answers.npz", confidence=CONF, correct=CORRECT)
    for path in (csv_path, tmp_path / "answers.npz"):
        result = runner.invoke(app, ["calibrate", str(path), "--val", str(path), "-q"])
        assert result.exit_code == 0, result.output
        one_line_error(runner.invoke(app, ["ood", "--in-preds", str(path), "--out-preds", str(path)]),
                       "top-label confidences", "adacal evaluate")
    np.savez(tmp_path / "logits.npz", logits=RNG.normal(size=(N, 3)), labels=RNG.integers(0, 3, N))
    one_line_error(runner.invoke(app, ["calibrate", str(tmp_path / "logits.npz"), "--val", str(csv_path)]),
                   "holds top-label confidences", "one kind")


def test_a_spreadsheet_table_with_semicolons_and_decimal_commas(tmp_path):
    """`;` between cells and `,` inside numbers (a spreadsheet in many locales), as the table rules read them."""
    path = tmp_path / "answers.csv"
    path.write_text("id;confidence;correct\n" + "".join(
        f"{i};{str(CONF[i]).replace('.', ',')};{int(CORRECT[i])}\n" for i in range(N)))
    read = load_top_label(path)
    np.testing.assert_array_equal(read.confidences, CONF)
    np.testing.assert_array_equal(read.correct, CORRECT)


def test_tables_without_a_confidence_name_are_left_to_the_table_reader(tmp_path):
    """Without a confidence name in its first line (and without --scores-kind confidence) a table of class scores is
    not read as named columns (only its first line is split); with the option it is."""
    from adacal.interpretation.confidence import named_table
    from adacal.sources.named_columns import read_named_columns

    path = tmp_path / "probs.csv"
    path.write_text("cat,dog,label\n0.2,0.8,1\n0.6,0.4,0\n")
    assert read_named_columns(path, wanted=lambda names: False) is None
    assert read_named_columns(path)[:2] == (["cat", "dog", "label"], {"cat": ["0.2", "0.6"], "dog": ["0.8", "0.4"],
                                                                      "label": ["1", "0"]})
    assert named_table(path, ReadOptions()) is None
    assert named_table(path, ReadOptions(scores_kind="confidence")).keys() == ["cat", "dog", "label"]


def test_class_scores_with_a_confidence_beside_them_keep_their_reading(tmp_path):
    """Logits with an extra per-sample `confidence` (binary labels and all), two of them, or summary figures (`acc`,
    `conf` scalars) beside them are class scores: read as before, by evaluate and calibrate alike."""
    logits, labels = RNG.normal(size=(N, 2)), CORRECT.astype(int)
    files = {"extra.npz": {"confidence": CONF}, "two.npz": {"confidence": CONF, "p_max": CONF},
             "summary.npz": {"conf": np.array(0.7), "acc": np.array(0.8)}}
    for name, extra in files.items():
        np.savez(tmp_path / name, logits=logits, labels=labels, **extra)
        assert load_top_label(tmp_path / name) is None, name
        pred = load_predictions(tmp_path / name)
        assert pred.interpretation.kind == "logits" and pred.interpretation.k == 2
        np.testing.assert_array_equal(pred.labels, labels)


def test_a_split_file_of_confidences_is_calibrated_on_its_val_pairs(tmp_path):
    np.savez(tmp_path / "split.npz", val_confidence=CONF, val_correct=CORRECT, test_confidence=CONF[::-1],
             test_correct=CORRECT[::-1])
    result = runner.invoke(app, ["calibrate", str(tmp_path / "split.npz"), "--method", "isotonic", "--json", "-"])
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert results["split"] == {"source": "file splits", "n_val": N, "n_test": N}
    assert results["input"]["val"]["scores_key"] == "val_confidence"
    assert results["input"]["test"]["scores_key"] == "test_confidence"


@pytest.mark.parametrize("layout", ["npz scores", "csv p", "csv id p", "jsonl score-like"])
def test_a_correctness_beside_an_unnamed_probability_is_refused_as_two_readings(tmp_path, layout):
    """`scores` + `correct`, `p,correct`: a verifier's P(correct) with its class, or the top answer's confidence —
    refused in every command, also with --labels-key correct (which used to read it as a binary model's); each
    option named in the message reads it its way."""
    if layout == "npz scores":
        path, key = tmp_path / "a.npz", "scores"
        np.savez(path, scores=CONF, correct=CORRECT)
    elif layout == "jsonl score-like":
        path, key = tmp_path / "a.jsonl", "prob"
        path.write_text("".join(json.dumps({"prob": float(c), "correct": bool(k)}) + "\n"
                                for c, k in zip(CONF, CORRECT)))
    else:
        path, key = tmp_path / f"{layout.replace(' ', '_')}.csv", "p"
        frame = pd.DataFrame({"p": CONF, "correct": CORRECT})
        (frame.assign(id=range(N))[["id", "p", "correct"]] if layout == "csv id p" else frame).to_csv(path, index=False)
    named = ["--logits-key", key] if layout == "jsonl score-like" else []  # (`prob` is no key of scores)
    for extra in ([], ["--labels-key", "correct"]):
        line = one_line_error(runner.invoke(app, ["evaluate", str(path), *named, *extra]),
                              "--scores-kind confidence", "--scores-kind probs")
        if layout != "jsonl score-like":
            one_line_error(runner.invoke(app, ["calibrate", str(path), "--val", str(path), *extra]),
                           "--scores-kind probs")
    assert f"--scores-kind confidence --logits-key {key}" in line
    top = load_top_label(path, options=ReadOptions(scores_kind="confidence", logits_key=key))
    np.testing.assert_array_equal(top.confidences, CONF)
    np.testing.assert_array_equal(top.correct, CORRECT)
    if layout != "jsonl score-like":
        extra = ["--logits-key", key] if layout == "npz scores" else []
        result = runner.invoke(app, ["evaluate", str(path), "--scores-kind", "probs", "--labels-key", "correct",
                                     "--json", "-", *extra])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["results"]["input"]["kind"] == "binary probabilities"
