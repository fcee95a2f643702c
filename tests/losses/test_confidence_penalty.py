"""Confidence penalty against a transcription of the MbLS authors' `PenaltyEntropy` (the paper has no code), its
special case β = 0 and a hand-worked value."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from loss_batches import batch, value_and_grad

from adacal.errors import InputError
from adacal.losses import ConfidencePenaltyLoss, build_loss, softmax_entropy

EPS = 1e-10  # calibrate/utils/constants.py


class PenaltyEntropy(nn.Module):
    """Re-typed from github.com/by-liu/MbLS, calibrate/losses/penalty_entropy.py
    @dc86503691d1564dc29e2eed66cf7698fbbe4a2c (the (N, K, d...) reshaping and ignore_index >= 0 filter left out).
    Its entropy is the mean of the (N, K) terms, H / K: its alpha is our β · K."""

    def __init__(self, alpha=1.0, ignore_index=-100):
        super().__init__()
        self.alpha = alpha
        self.ignore_index = ignore_index

    def forward(self, inputs, targets):
        loss_ce = F.cross_entropy(inputs, targets)
        prob = F.log_softmax(inputs, dim=1).exp()
        prob = torch.clamp(prob, EPS, 1.0 - EPS)
        ent = - prob * torch.log(prob)
        loss_ent = ent.mean()
        loss = loss_ce - self.alpha * loss_ent
        return loss, loss_ce, loss_ent


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_values_and_gradients_match_the_mbls_authors_code(seed, beta):
    logits, labels = batch(seed=seed)
    assert torch.softmax(logits, 1).min() > EPS  # their clamp does not act: the two formulas are the same
    ours, ours_grad = value_and_grad(ConfidencePenaltyLoss(beta=beta), logits, labels)
    theirs, theirs_grad = value_and_grad(PenaltyEntropy(alpha=beta * 10), logits, labels)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours_grad, theirs_grad, rtol=0, atol=1e-6)


def test_beta_zero_is_cross_entropy():
    logits, labels = batch(seed=3)
    ours, ours_grad = value_and_grad(ConfidencePenaltyLoss(beta=0.0), logits, labels)
    ce, ce_grad = value_and_grad(F.cross_entropy, logits, labels)
    torch.testing.assert_close(ours, ce, rtol=1e-14, atol=0)
    torch.testing.assert_close(ours_grad, ce_grad, rtol=1e-12, atol=1e-16)


def test_entropy_against_a_loop_and_hand_worked_values():
    logits, _ = batch(n=5, k=4, seed=4)
    probs = torch.softmax(logits, 1).tolist()
    expected = [-sum(p * math.log(p) for p in row) for row in probs]
    assert softmax_entropy(logits).tolist() == pytest.approx(expected, rel=1e-12)
    # p = (0.5, 0.5), label 0: CE = ln 2, H = ln 2, so the loss is (1 − β) ln 2
    loss = ConfidencePenaltyLoss(beta=0.25)(torch.zeros(1, 2, dtype=torch.float64), torch.tensor([0]))
    assert loss.item() == pytest.approx(0.75 * math.log(2), rel=1e-14)
    # a confident one-hot row has zero entropy without NaN (p log p at p → 0, no clamp needed)
    confident = torch.tensor([[800.0, 0.0, -5.0]], requires_grad=True)
    value = softmax_entropy(confident).sum()
    value.backward()
    assert value.item() == 0.0 and torch.isfinite(confident.grad).all()


def test_reductions_and_options():
    logits, labels = batch(seed=5)
    terms = build_loss("confidence-penalty", reduction="none")(logits, labels)
    expected = F.cross_entropy(logits, labels, reduction="none") - 0.1 * softmax_entropy(logits)
    torch.testing.assert_close(terms, expected, rtol=1e-14, atol=0)
    assert build_loss("confidence-penalty").beta == 0.1
    with pytest.raises(InputError, match=r"Expected beta to be at least 0, got -0\.1\."):
        ConfidencePenaltyLoss(beta=-0.1)
