"""MDCA against a transcription of its authors' code (with each of their base losses), its special cases and a
hand-worked value."""

import logging

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from loss_batches import batch, value_and_grad

from adacal.errors import InputError
from adacal.losses import MDCALoss, build_loss, mdca_penalty

# Re-typed from github.com/mdca-loss/MDCA-Calibration, solvers/loss.py @cece2e5acb5acb8738f6f80f9592a20d211d1c33
# (FocalLoss, LabelSmoothingLoss, MDCA, ClassficationAndMDCA). One change: MDCA's `torch.tensor(0.0).cuda()` starts
# on the CPU in float64 here, so the sum runs on the logits' device and dtype.


class FocalLoss(nn.Module):
    def __init__(self, gamma=0, **kwargs):
        super(FocalLoss, self).__init__()
        self.gamma = gamma
        logging.info("using gamma={}".format(gamma))

    def forward(self, input, target):
        target = target.view(-1, 1)
        logpt = torch.nn.functional.log_softmax(input, dim=1)
        logpt = logpt.gather(1, target)
        logpt = logpt.view(-1)
        pt = logpt.exp()
        loss = -1 * (1 - pt) ** self.gamma * logpt
        return loss.mean()


class LabelSmoothingLoss(nn.Module):
    def __init__(self, alpha=0.0, dim=-1, **kwargs):
        super(LabelSmoothingLoss, self).__init__()
        self.confidence = 1.0 - alpha
        self.alpha = alpha
        self.dim = dim

    def forward(self, pred, target):
        pred = pred.log_softmax(dim=self.dim)
        num_classes = pred.shape[self.dim]
        with torch.no_grad():
            true_dist = torch.zeros_like(pred)
            true_dist.fill_(self.alpha / (num_classes - 1))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        return torch.mean(torch.sum(-true_dist * pred, dim=self.dim))


class MDCA(torch.nn.Module):
    def __init__(self):
        super(MDCA, self).__init__()

    def forward(self, output, target):
        output = torch.softmax(output, dim=1)
        # [batch, classes]
        loss = torch.tensor(0.0, dtype=output.dtype)  # theirs: torch.tensor(0.0).cuda()
        batch, classes = output.shape
        for c in range(classes):
            avg_count = (target == c).float().mean()
            avg_conf = torch.mean(output[:, c])
            loss += torch.abs(avg_conf - avg_count)
        denom = classes
        loss /= denom
        return loss


class ClassficationAndMDCA(nn.Module):
    def __init__(self, loss="NLL+MDCA", alpha=0.1, beta=1.0, gamma=1.0, **kwargs):
        super(ClassficationAndMDCA, self).__init__()
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        if "NLL" in loss:
            self.classification_loss = nn.CrossEntropyLoss()
        elif "FL" in loss:
            self.classification_loss = FocalLoss(gamma=self.gamma)
        else:
            self.classification_loss = LabelSmoothingLoss(alpha=self.alpha)
        self.MDCA = MDCA()

    def forward(self, logits, targets):
        loss_cls = self.classification_loss(logits, targets)
        loss_cal = self.MDCA(logits, targets)
        return loss_cls + self.beta * loss_cal


CASES = [  # (their loss name and options, ours)
    ({"loss": "NLL+MDCA", "beta": 1.0}, {"beta": 1.0}),
    ({"loss": "NLL+MDCA", "beta": 5.0}, {"beta": 5.0}),
    ({"loss": "FL+MDCA", "beta": 1.0, "gamma": 1.0}, {"beta": 1.0, "base": "focal"}),
    ({"loss": "FL+MDCA", "beta": 2.0, "gamma": 3.0}, {"beta": 2.0, "base": "focal", "gamma": 3.0}),
    ({"loss": "LS+MDCA", "beta": 1.0, "alpha": 0.1}, {"beta": 1.0, "base": "label-smoothing"}),
    ({"loss": "LS+MDCA", "beta": 0.5, "alpha": 0.3}, {"beta": 0.5, "base": "label-smoothing", "alpha": 0.3}),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("theirs_options", "ours_options"), CASES)
def test_values_and_gradients_match_the_authors_code(seed, theirs_options, ours_options):
    logits, labels = batch(seed=seed)
    ours, ours_grad = value_and_grad(MDCALoss(**ours_options), logits, labels)
    theirs, theirs_grad = value_and_grad(ClassficationAndMDCA(**theirs_options), logits, labels)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours_grad, theirs_grad, rtol=0, atol=1e-6)
    torch.testing.assert_close(mdca_penalty(logits, labels), MDCA()(logits, labels), rtol=1e-12, atol=0)


def test_one_hot_perfect_predictions_have_zero_mdca():
    labels = torch.tensor([0, 2, 1, 2, 2, 3])
    logits = F.one_hot(labels, 4).double() * 200.0  # softmax = the one-hot labels, to rounding
    assert mdca_penalty(logits, labels).item() == 0.0
    # a calibrated-on-average batch too: mean probabilities equal the class frequencies though no row is one-hot
    probs = torch.tensor([[0.6, 0.4], [0.4, 0.6]], dtype=torch.float64)
    assert mdca_penalty(probs.log(), torch.tensor([0, 1])).item() == pytest.approx(0.0, abs=1e-15)


def test_beta_zero_is_the_base_loss():
    logits, labels = batch(seed=3)
    torch.testing.assert_close(MDCALoss(beta=0.0)(logits, labels), F.cross_entropy(logits, labels), rtol=0, atol=0)
    torch.testing.assert_close(MDCALoss(beta=0.0, base="focal", gamma=2.0)(logits, labels),
                               build_loss("focal", gamma=2.0)(logits, labels), rtol=1e-12, atol=0)


def test_hand_worked_value():
    # p = (0.7, 0.2, 0.1) and (0.1, 0.8, 0.1), labels 0 and 0: mean p (0.4, 0.5, 0.1), frequencies (1, 0, 0)
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]], dtype=torch.float64))
    assert mdca_penalty(logits, torch.tensor([0, 0])).item() == pytest.approx((0.6 + 0.5 + 0.1) / 3, rel=1e-12)


def test_reductions_and_ignored_positions():
    logits, labels = batch(seed=4)
    mean = MDCALoss()(logits, labels)
    torch.testing.assert_close(MDCALoss(reduction="sum")(logits, labels), mean * 64, rtol=1e-12, atol=0)
    with pytest.raises(InputError, match=r"Expected reduction to be 'mean' or 'sum' for MDCALoss, got 'none'"):
        MDCALoss(reduction="none")
    ignored = labels.clone()
    ignored[::3] = -100
    keep = ignored != -100
    torch.testing.assert_close(MDCALoss()(logits, ignored), MDCALoss()(logits[keep], labels[keep]), rtol=0, atol=0)


def test_options_are_checked_against_the_base():
    assert repr(build_loss("mdca")) == "MDCALoss(beta=1)"
    assert build_loss("mdca", base="focal").gamma == 1.0 and build_loss("mdca", base="label-smoothing").alpha == 0.1
    with pytest.raises(InputError, match=r"Expected base to be one of 'ce', 'focal', 'label-smoothing', got 'ls'\."):
        MDCALoss(base="ls")
    with pytest.raises(InputError, match=r"Expected gamma only with base='focal', got gamma=2\.0 with base='ce'"):
        MDCALoss(gamma=2.0)
    with pytest.raises(InputError, match=r"Expected alpha only with base='label-smoothing'"):
        MDCALoss(base="focal", alpha=0.1)
    with pytest.raises(InputError, match=r"Expected beta to be at least 0, got -1\."):
        MDCALoss(beta=-1)
    with pytest.raises(InputError, match=r"Expected alpha to be between 0 and 1, got 2\."):
        MDCALoss(base="label-smoothing", alpha=2)
