"""adacal.interpretation.kind: what the scores are — logits, probabilities (rows summing to 1, as a key may say),
a binary model's one score per sample, percentages or rounded rows to --renormalize — and hard class predictions
refused as scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.evaluation import evaluate_predictions
from adacal.interpretation import load_predictions
from adacal.sources import ReadOptions

from reading_fixtures import K, LABELS, LOGITS, N, RNG


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


def test_renormalize_rounded_probabilities(tmp_path):
    probs = softmax(LOGITS.astype(np.float64))
    rounded = np.round(probs, 2)
    np.savez(tmp_path / "r.npz", probs=rounded, labels=LABELS)
    with pytest.raises(InputError, match="scores_kind=.logits. if they are logits, or divide each row by its sum"):
        evaluate_predictions(rounded, LABELS)
    # Read from a file, for any command: refused at once, naming the option that fixes it.
    with pytest.raises(InputError, match=r"r\.npz:probs .* rows sum to 1, as its name says, got values in \[0, 1\] "
                                         r"whose rows sum to 0\.9\d+ to 1\.0\d+: pass --renormalize"):
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
    with pytest.raises(InputError, match="percentages it seems: pass scores_kind=.logits. if they are logits, or"):
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
