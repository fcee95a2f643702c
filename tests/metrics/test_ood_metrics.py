"""OOD scores and detection metrics (OOD is the positive class; higher score = more OOD): hand-worked values,
conventions and errors. AUROC, AUPRs and FPR@95%TPR against scikit-learn and slow loops run through the shared harness
in test_metric_references.py."""

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from adacal.arrays import softmax
from adacal.errors import InputError, UnknownNameError
from adacal.metrics import (
    OOD_SCORES,
    energy_score,
    entropy,
    entropy_score,
    max_prob_score,
    ood_metrics,
    ood_scores,
    roc_curve_points,
)


def logits_pair(seed=0, shift=2.0):
    rng = np.random.default_rng(seed)
    in_logits = rng.normal(size=(300, 10))
    in_logits[np.arange(300), rng.integers(0, 10, 300)] += 4.0  # confident in-distribution predictions
    out_logits = rng.normal(size=(200, 10)) + rng.normal(size=(200, 1))
    return in_logits, out_logits


def test_entropy_values():
    assert entropy(np.full((1, 4), 0.25))[0] == pytest.approx(math.log(4))
    assert entropy(np.eye(3)).tolist() == [0.0, 0.0, 0.0]  # 0 log 0 counts as 0
    assert entropy(np.array([[0.5, 0.5, 0.0]]))[0] == pytest.approx(math.log(2))
    with pytest.raises(InputError, match="probabilities"):
        entropy(np.array([[2.0, -1.0]]))


def test_scores_from_logits_and_probs_agree():
    in_logits, _ = logits_pair()
    probs = softmax(in_logits)
    assert entropy_score(in_logits) == pytest.approx(entropy(probs))
    assert entropy_score(probs) == pytest.approx(entropy(probs))
    assert max_prob_score(in_logits) == pytest.approx(1 - probs.max(axis=1))
    assert energy_score(in_logits) == pytest.approx(-logsumexp(in_logits, axis=1))
    assert entropy_score(torch.from_numpy(in_logits)) == pytest.approx(entropy(probs))


def test_energy_needs_logits():
    with pytest.raises(InputError, match="energy score"):
        energy_score(np.array([[0.3, 0.7]]))


def test_ood_scores_by_name_and_temperature():
    in_logits, _ = logits_pair()
    assert set(OOD_SCORES.names()) == {"entropy", "max-prob", "energy"}
    assert ood_scores(in_logits, "entropy") == pytest.approx(entropy(softmax(in_logits)))
    assert ood_scores(in_logits, "energy", temperature=2.0) == pytest.approx(-logsumexp(in_logits / 2.0, axis=1))
    with pytest.raises(UnknownNameError, match="Did you mean 'entropy'"):
        ood_scores(in_logits, "entropie")
    with pytest.raises(InputError, match="temperature"):
        ood_scores(in_logits, "entropy", temperature=0.0)


def test_identical_sets_give_half_and_separable_sets_give_one():
    scores = np.random.default_rng(0).random(100)
    assert ood_metrics(scores, scores)["auroc"] == pytest.approx(0.5)
    separable = ood_metrics(np.linspace(0, 1, 50), np.linspace(2, 3, 30))
    assert separable == pytest.approx({"auroc": 1.0, "aupr_in": 1.0, "aupr_out": 1.0, "fpr_at_95_tpr": 0.0})
    reversed_ = ood_metrics(np.linspace(2, 3, 30), np.linspace(0, 1, 50))
    assert reversed_["auroc"] == 0.0 and reversed_["fpr_at_95_tpr"] == 1.0


def test_roc_curve_points():
    in_logits, out_logits = logits_pair()
    curve = roc_curve_points(entropy_score(in_logits), entropy_score(out_logits))
    fpr, tpr = curve[:2]
    assert fpr[0] == 0.0 and tpr[-1] == 1.0 and fpr[-1] == 1.0
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert np.trapezoid(tpr, fpr) == pytest.approx(ood_metrics(entropy_score(in_logits),
                                                               entropy_score(out_logits))["auroc"])
    as_dict = curve.to_dict()
    assert set(as_dict) == {"fpr", "tpr"} and as_dict["fpr"] == fpr.tolist()
    assert curve["tpr"] is curve.tpr


@pytest.mark.parametrize(
    "in_scores, out_scores, message",
    [
        ([], [1.0], "at least one score"),
        ([[1.0, 2.0]], [1.0], "1-D"),
        ([1.0, np.nan], [1.0], "finite"),
        (["a"], [1.0], "numeric"),
    ],
)
def test_bad_score_vectors(in_scores, out_scores, message):
    with pytest.raises(InputError, match=message):
        ood_metrics(np.asarray(in_scores), out_scores)


def test_fpr_at_95_tpr_hand_worked_with_tied_scores():
    from adacal.metrics import fpr_at_tpr

    # OOD (positive): 2 at 0.9, 17 at 0.5, 1 at 0.2; in-distribution: 0.1, 0.2, 0.5, 0.5, 0.9 (ties with OOD at 0.5).
    # A threshold t flags score >= t, tied scores together. Points (TPR, FPR) at t = 0.9: (2/20, 1/5);
    # t = 0.5: (19/20, 3/5); t = 0.2: (1, 4/5); t = 0.1: (1, 1). TPR reaches exactly 95 % at t = 0.5: FPR = 0.6.
    in_scores = [0.1, 0.2, 0.5, 0.5, 0.9]
    out_scores = [0.9] * 2 + [0.5] * 17 + [0.2]
    assert ood_metrics(in_scores, out_scores)["fpr_at_95_tpr"] == pytest.approx(0.6)
    assert fpr_at_tpr(in_scores, out_scores, rule="closest") == pytest.approx(0.6)
    # Where the rules differ: OOD 37 at 0.9 and 3 at 0.5; in-distribution 0.1, 0.5, 0.9, 0.95.
    # Points: t = 0.95: (0, 1/4); t = 0.9: (37/40 = 0.925, 2/4); t = 0.5: (1, 3/4); t = 0.1: (1, 1).
    # "at-least" needs TPR >= 0.95: t = 0.5, FPR 0.75; "closest" (the reference) takes 0.925 (0.025 away): FPR 0.5.
    in_scores = [0.1, 0.5, 0.9, 0.95]
    out_scores = [0.9] * 37 + [0.5] * 3
    assert ood_metrics(in_scores, out_scores)["fpr_at_95_tpr"] == pytest.approx(0.75)
    assert fpr_at_tpr(in_scores, out_scores) == pytest.approx(0.75)
    assert fpr_at_tpr(in_scores, out_scores, rule="closest") == pytest.approx(0.5)
    # other levels: TPR >= 0.9 is reached at t = 0.9
    assert fpr_at_tpr(in_scores, out_scores, tpr=0.9) == pytest.approx(0.5)
    with pytest.raises(InputError, match="rule"):
        fpr_at_tpr(in_scores, out_scores, rule="nearest")
