"""adacal.interpretation.split: which keys hold the scores and labels — every spelling of every framework, the
options that choose between two, and files split into val_ / test_ arrays."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.commands.inputs import resolve_calibration_input
from adacal.errors import InputError
from adacal.interpretation import load_predictions, load_split_predictions
from adacal.sources import ReadOptions

from reading_fixtures import K, LABELS, LOGITS, same


@pytest.mark.parametrize("score_key, label_key", [
    (s, lab) for s in ("logits", "probs", "probabilities", "scores") for lab in ("labels", "targets", "y")
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


def test_named_keys_win_and_missing_named_key_is_refused(tmp_path):
    np.savez(tmp_path / "p.npz", out=LOGITS, gt=LABELS, logits=LOGITS * 0, labels=(LABELS + 1) % K)
    same(load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="out", labels_key="gt")))
    with pytest.raises(InputError, match=r"contain 'nope' \(--logits-key\); it has: gt, labels, logits, out"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(logits_key="nope"))
    with pytest.raises(InputError, match=r"contain 'nope' \(--labels-key\)"):
        load_predictions(tmp_path / "p.npz", options=ReadOptions(labels_key="nope"))


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


def test_keys_named_as_the_refusal_asks_read_exactly_those_keys(tmp_path):
    """A file holding both `logits` and `test_logits` is refused, naming --logits-key and --labels-key; given exactly
    as asked (`--logits-key logits --labels-key labels`), they name the plain keys, not `test_logits` again, for
    evaluate and calibrate alike; `--logits-key test_logits` still names the split ones."""
    from typer.testing import CliRunner

    from adacal.cli import app

    other = LOGITS[::-1].copy()
    np.savez(tmp_path / "both.npz", logits=LOGITS, labels=LABELS, test_logits=other, test_labels=LABELS[::-1].copy())
    with pytest.raises(InputError, match="not both.*pass --logits-key and --labels-key"):
        load_predictions(tmp_path / "both.npz")
    plain = ReadOptions(logits_key="logits", labels_key="labels")
    pred = load_predictions(tmp_path / "both.npz", options=plain)
    same(pred)
    assert (pred.interpretation.scores_key, pred.interpretation.labels_key) == ("logits", "labels")
    same(load_predictions(tmp_path / "both.npz", split="val", options=plain))  # as a --val file
    same(load_predictions(tmp_path / "both.npz", options=ReadOptions(logits_key="test_logits",
                                                                      labels_key="test_labels")),
         logits=other, labels=LABELS[::-1])
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", str(tmp_path / "both.npz"), "--logits-key", "logits", "--labels-key",
                                 "labels", "--metrics", "error", "--json", str(tmp_path / "e.json")])
    assert result.exit_code == 0, result.output
    from adacal.metrics import error

    import json

    report = json.loads((tmp_path / "e.json").read_text())
    assert report["results"]["metrics"]["error"] == error(LOGITS, LABELS)
    assert report["results"]["input"]["scores_key"] == "logits"
    np.savez(tmp_path / "val.npz", logits=LOGITS, labels=LABELS, test_logits=other, test_labels=LABELS)
    result = runner.invoke(app, ["calibrate", str(tmp_path / "both.npz"), "--val", str(tmp_path / "val.npz"),
                                 "--logits-key", "logits", "--labels-key", "labels", "--json",
                                 str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    inputs = json.loads((tmp_path / "c.json").read_text())["results"]["input"]
    assert inputs["val"]["scores_key"] == inputs["test"]["scores_key"] == "logits"
    assert inputs["val"]["n"] == inputs["test"]["n"] == len(LABELS)
