"""MbLS and ACLS against transcriptions of their authors' code, their special cases and hand-worked values."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from loss_batches import batch, value_and_grad

from adacal.errors import InputError
from adacal.losses import ACLSLoss, MbLSLoss, acls_penalty, build_loss, margin_penalty


class AuthorsLogitMarginL1(nn.Module):
    """Re-typed from github.com/by-liu/MbLS, calibrate/losses/logit_margin_l1.py
    @dc86503691d1564dc29e2eed66cf7698fbbe4a2c (the alpha schedule, off in the paper, and the (N, K, d...) reshaping
    left out); forward returns (loss, loss_ce, loss_margin) as theirs does."""

    def __init__(self, margin=10, alpha=0.1, ignore_index=-100):
        super().__init__()
        self.margin = margin
        self.alpha = alpha
        self.ignore_index = ignore_index
        self.cross_entropy = nn.CrossEntropyLoss()

    def get_diff(self, inputs):
        max_values = inputs.max(dim=1)
        max_values = max_values.values.unsqueeze(dim=1).repeat(1, inputs.shape[1])
        diff = max_values - inputs
        return diff

    def forward(self, inputs, targets):
        if self.ignore_index >= 0:
            index = torch.nonzero(targets != self.ignore_index).squeeze()
            inputs = inputs[index, :]
            targets = targets[index]
        loss_ce = self.cross_entropy(inputs, targets)
        diff = self.get_diff(inputs)
        loss_margin = F.relu(diff - self.margin).mean()
        loss = loss_ce + self.alpha * loss_margin
        return loss, loss_ce, loss_margin


class AuthorsACLS(nn.Module):
    """Re-typed from github.com/cvlab-yonsei/ACLS, calibrate/losses/acls.py @bbd8a377f94c37a79af74c15f6617cbe100e1712
    (the (N, K, d...) reshaping left out)."""

    def __init__(self, pos_lambda=1.0, neg_lambda=0.1, alpha=0.1, margin=10.0, num_classes=200, ignore_index=-100):
        super().__init__()
        self.pos_lambda = pos_lambda
        self.neg_lambda = neg_lambda
        self.alpha = alpha
        self.margin = margin
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.cross_entropy = nn.CrossEntropyLoss()

    def get_reg(self, inputs, targets):
        max_values, indices = inputs.max(dim=1)
        max_values = max_values.unsqueeze(dim=1).repeat(1, inputs.shape[1])
        indicator = (max_values.clone().detach() == inputs.clone().detach()).float()
        batch_size, num_classes = inputs.size()
        num_pos = batch_size * 1.0
        num_neg = batch_size * (num_classes - 1.0)
        neg_dist = max_values.clone().detach() - inputs
        pos_dist_margin = F.relu(max_values - self.margin)
        neg_dist_margin = F.relu(neg_dist - self.margin)
        pos = indicator * pos_dist_margin ** 2
        neg = (1.0 - indicator) * (neg_dist_margin ** 2)
        reg = self.pos_lambda * (pos.sum() / num_pos) + self.neg_lambda * (neg.sum() / num_neg)
        return reg

    def forward(self, inputs, targets):
        loss_ce = self.cross_entropy(inputs, targets)
        loss_reg = self.get_reg(inputs, targets)
        loss = loss_ce + self.alpha * loss_reg
        return loss, loss_ce, loss_reg


def _batch(n=40, k=10, scale=6.0, seed=0):
    """Logits spread wide enough (±20) that many distances exceed the margin of 10, and maxima exceed 10 too."""
    return batch(n=n, k=k, scale=scale, seed=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("margin", "weight"), [(10.0, 0.1), (4.0, 1.0), (0.0, 0.3)])
def test_mbls_matches_the_authors_code(seed, margin, weight):
    logits, labels = _batch(seed=seed)
    assert (logits.amax(1, keepdim=True) - logits > margin).any()  # the penalty is active somewhere
    ours, ours_grad = value_and_grad(MbLSLoss(margin=margin, margin_weight=weight), logits, labels)
    theirs, theirs_grad = value_and_grad(AuthorsLogitMarginL1(margin=margin, alpha=weight), logits, labels)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours_grad, theirs_grad, rtol=0, atol=1e-6)
    # and their penalty alone, our per-sample penalty's mean
    torch.testing.assert_close(margin_penalty(logits, margin).mean(),
                               AuthorsLogitMarginL1(margin=margin)(logits, labels)[2], rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("margin", "weight", "pos", "neg"), [(10.0, 0.1, 1.0, 0.1), (5.0, 0.5, 0.3, 2.0)])
def test_acls_matches_the_authors_code(seed, margin, weight, pos, neg):
    logits, labels = _batch(seed=seed)
    assert (logits.amax(1) > margin).any() and (logits.amax(1) < margin).any()  # both sides of the positive term
    loss = ACLSLoss(margin=margin, margin_weight=weight, pos_lambda=pos, neg_lambda=neg)
    ours, ours_grad = value_and_grad(loss, logits, labels)
    authors = AuthorsACLS(pos_lambda=pos, neg_lambda=neg, alpha=weight, margin=margin, num_classes=10)
    theirs, theirs_grad = value_and_grad(authors, logits, labels)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours_grad, theirs_grad, rtol=0, atol=1e-6)


def test_sum_and_none_reductions_are_the_per_sample_terms():
    logits, labels = _batch(seed=5)
    for name in ("mbls", "acls"):
        terms = build_loss(name, reduction="none")(logits, labels)
        assert terms.shape == (40,)
        torch.testing.assert_close(terms.mean(), build_loss(name)(logits, labels), rtol=1e-12, atol=0)
        torch.testing.assert_close(terms.sum(), build_loss(name, reduction="sum")(logits, labels), rtol=1e-12, atol=0)
        # one sample at a time through the authors' code gives the same per-sample losses
        authors = AuthorsLogitMarginL1() if name == "mbls" else AuthorsACLS(num_classes=10)
        expected = torch.stack([authors(logits[i:i + 1], labels[i:i + 1])[0] for i in range(40)])
        torch.testing.assert_close(terms, expected, rtol=1e-12, atol=1e-15)


def test_a_margin_beyond_every_distance_is_cross_entropy():
    """m → ∞: no distance exceeds the margin, MbLS is CE (values and gradients), and so is ACLS's negative term."""
    logits, labels = _batch(seed=6)
    ce, ce_grad = value_and_grad(lambda z, y: F.cross_entropy(z, y), logits, labels)
    for loss in (MbLSLoss(margin=1e6), MbLSLoss(margin_weight=0.0),
                 ACLSLoss(margin=1e6), ACLSLoss(margin_weight=0.0)):
        value, grad = value_and_grad(loss, logits, labels)
        assert value.item() == ce.item()
        assert torch.equal(grad, ce_grad)


def test_hand_worked_values():
    logits = torch.tensor([[12.0, 0.0, 1.0, 11.0]], dtype=torch.float64)
    assert margin_penalty(logits, 10.0).item() == 0.75  # distances 0, 12, 11, 1 → (2 + 1) / 4
    assert margin_penalty(logits, 0.0).item() == 6.0  # (0 + 12 + 11 + 1) / 4
    # ACLS: the maximum 12 exceeds m = 10 by 2 → λ_pos · 4; distances 12, 11, 1 → (2² + 1²) / 3 → λ_neg · 5/3
    assert acls_penalty(logits, 10.0, 1.0, 0.1).item() == pytest.approx(4 + 0.1 * 5 / 3, rel=1e-14)
    # a sample whose maximum is below the margin and whose logits are within it: no penalty
    assert acls_penalty(torch.tensor([[3.0, -2.0, 1.0]]), 10.0, 1.0, 0.1).item() == 0.0


def test_defaults_and_bad_options():
    mbls, acls = build_loss("mbls"), build_loss("acls")
    assert (mbls.margin, mbls.margin_weight) == (10.0, 0.1)
    assert (acls.margin, acls.margin_weight, acls.pos_lambda, acls.neg_lambda) == (10.0, 0.1, 1.0, 0.1)
    with pytest.raises(InputError, match=r"Expected margin to be at least 0, got -1\."):
        MbLSLoss(margin=-1)
    with pytest.raises(InputError, match=r"Expected margin_weight to be a finite number, got inf\."):
        MbLSLoss(margin_weight=float("inf"))
    with pytest.raises(InputError, match=r"Expected neg_lambda to be at least 0, got -0\.5\."):
        ACLSLoss(neg_lambda=-0.5)
    with pytest.raises(TypeError):
        MbLSLoss(10.0)  # keyword-only
