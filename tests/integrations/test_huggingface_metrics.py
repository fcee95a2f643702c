"""calibration_compute_metrics and evaluation_arrays: an EvalPrediction's metrics are adacal.metrics' on the same
arrays, with the -100 positions of token tasks left out by hand here, whatever form the Trainer hands them in."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.integrations.huggingface_outputs import (
    calibration_compute_metrics,
    classes_first,
    evaluation_arrays,
    output_logits,
)
from adacal.metrics import compute_metrics, ece_em

transformers = pytest.importorskip("transformers", reason="EvalPrediction comes from transformers")
EvalPrediction = transformers.EvalPrediction

RNG = np.random.default_rng(0)
SEQ_LOGITS = RNG.normal(size=(40, 4)).astype(np.float32) * 2
SEQ_LABELS = RNG.integers(0, 4, 40)
TOK_LOGITS = RNG.normal(size=(6, 5, 3)).astype(np.float32) * 2  # 6 sequences, 5 tokens, 3 classes
TOK_LABELS = RNG.integers(0, 3, (6, 5))
TOK_LABELS[RNG.random((6, 5)) < 0.3] = -100
KEPT = TOK_LABELS != -100


def _expected(logits, labels, names=("ece-em", "ece-ew", "nll", "brier", "error"), n_bins=15):
    values = compute_metrics(logits, labels, names=names, n_bins=n_bins, scores_kind="logits")
    values["accuracy"] = float(np.mean(np.argmax(logits, axis=1) == labels))
    values.pop("error", None)
    return values


def test_sequence_metrics_equal_adacal_metrics():
    got = calibration_compute_metrics()(EvalPrediction(predictions=SEQ_LOGITS, label_ids=SEQ_LABELS))
    expected = _expected(SEQ_LOGITS, SEQ_LABELS)
    assert list(got) == ["ece_em", "ece_ew", "nll", "brier", "accuracy"]
    assert got == pytest.approx(expected, rel=1e-12)
    assert got["ece_em"] == pytest.approx(ece_em(torch.softmax(torch.from_numpy(SEQ_LOGITS), 1).numpy(), SEQ_LABELS))


def test_token_metrics_leave_out_the_minus_100_positions():
    compute = calibration_compute_metrics(["nll", "ece-em", "accuracy"], n_bins=5)
    got = compute(EvalPrediction(predictions=TOK_LOGITS, label_ids=TOK_LABELS))
    expected = _expected(TOK_LOGITS[KEPT], TOK_LABELS[KEPT], names=("nll", "ece-em", "error"), n_bins=5)
    assert got == pytest.approx(expected, rel=1e-12)
    # the Trainer pads shorter batches with -100 in logits and labels alike: padding changes nothing
    padded_logits = np.concatenate([TOK_LOGITS, np.full((6, 2, 3), -100.0, np.float32)], axis=1)
    padded_labels = np.concatenate([TOK_LABELS, np.full((6, 2), -100)], axis=1)
    assert compute(EvalPrediction(predictions=padded_logits, label_ids=padded_labels)) == pytest.approx(got, rel=1e-12)


def test_the_forms_the_trainer_hands_predictions_in():
    compute = calibration_compute_metrics(["brier"])
    reference = compute((TOK_LOGITS, TOK_LABELS))
    hidden = RNG.normal(size=(6, 5, 8))
    assert compute(EvalPrediction(predictions=(TOK_LOGITS, hidden), label_ids=TOK_LABELS)) == reference  # outputs
    batches = EvalPrediction(predictions=[TOK_LOGITS[:2], TOK_LOGITS[2:, :3]], label_ids=[TOK_LABELS[:2],
                                                                                          TOK_LABELS[2:, :3]])
    expected = compute_metrics(np.concatenate([TOK_LOGITS[:2][KEPT[:2]], TOK_LOGITS[2:, :3][KEPT[2:, :3]]]),
                               np.concatenate([TOK_LABELS[:2][KEPT[:2]], TOK_LABELS[2:, :3][KEPT[2:, :3]]]),
                               names="brier", scores_kind="logits")
    assert compute(batches) == pytest.approx(expected, rel=1e-12)  # eval_do_concat_batches=False
    tensors = EvalPrediction(predictions=torch.from_numpy(TOK_LOGITS), label_ids=torch.from_numpy(TOK_LABELS))
    assert compute(tensors) == pytest.approx(reference, rel=1e-7)
    # batch_eval_metrics: one batch per call, the metrics of all of them at the last
    assert compute(EvalPrediction(predictions=TOK_LOGITS[:3], label_ids=TOK_LABELS[:3]), compute_result=False) == {}
    last = compute(EvalPrediction(predictions=TOK_LOGITS[3:], label_ids=TOK_LABELS[3:]), compute_result=True)
    assert last == pytest.approx(reference, rel=1e-12)


def test_classes_on_dimension_1_and_probabilities():
    moved = np.moveaxis(TOK_LOGITS, -1, 1)  # (N, K, T)
    reference = calibration_compute_metrics(["nll"])((TOK_LOGITS, TOK_LABELS))
    assert calibration_compute_metrics(["nll"], class_dim=1)((moved, TOK_LABELS)) == pytest.approx(reference)
    probs = torch.softmax(torch.from_numpy(SEQ_LOGITS), 1).numpy()
    as_probs = calibration_compute_metrics(["nll", "ece-ew"], scores_kind="probs")((probs, SEQ_LABELS))
    assert as_probs == pytest.approx(calibration_compute_metrics(["nll", "ece-ew"])((SEQ_LOGITS, SEQ_LABELS)), rel=1e-6)


def test_evaluation_arrays_and_classes_first():
    scores, labels = evaluation_arrays(TOK_LOGITS, TOK_LABELS, ignore_index=2)
    keep = KEPT & (TOK_LABELS != 2)
    np.testing.assert_array_equal(scores, TOK_LOGITS[keep])
    np.testing.assert_array_equal(labels, TOK_LABELS[keep])
    logits = torch.from_numpy(TOK_LOGITS)
    moved = classes_first(logits, torch.from_numpy(TOK_LABELS))
    assert tuple(moved.shape) == (6, 3, 5) and torch.equal(moved[:, :, 1], logits[:, 1, :])
    assert classes_first(logits[:, 0], torch.from_numpy(TOK_LABELS[:, 0])) is not None


def test_bad_input_is_one_line():
    compute = calibration_compute_metrics()
    with pytest.raises(InputError, match=r"^Expected labels of shape \(6, 5\) .*class_dim=1"):
        compute((TOK_LOGITS, TOK_LABELS[:, :4]))
    with pytest.raises(InputError, match=r"several label_names"):
        compute(EvalPrediction(predictions=SEQ_LOGITS, label_ids=(SEQ_LABELS, SEQ_LABELS)))
    with pytest.raises(InputError, match=r"carry labels"):
        compute(EvalPrediction(predictions=SEQ_LOGITS, label_ids=None))
    with pytest.raises(InputError, match=r"at least one labelled position"):
        compute((TOK_LOGITS, np.full((6, 5), -100)))
    with pytest.raises(InputError, match=r"whole class indices"):
        compute((SEQ_LOGITS, SEQ_LABELS + 0.5))
    with pytest.raises(InputError, match=r"^Expected the model's output to hold logits"):
        output_logits((torch.zeros(2, 3),))
    with pytest.raises(InputError, match=r"^Expected labels to be integer class indices, got torch.float32"):
        classes_first(torch.zeros(4, 3), torch.zeros(4, 3))  # multi-label targets
    for error in ("class_dim", "n_bins"):
        with pytest.raises(InputError, match=error):
            calibration_compute_metrics(**{error: 0})
