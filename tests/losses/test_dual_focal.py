"""Dual focal loss against a transcription of its authors' code, its special cases and a hand-worked value."""

import math

import pytest
import torch
import torch.nn.functional as F

from adacal.errors import InputError
from adacal.losses import DualFocalLoss, FocalLoss, build_loss, dual_focal_terms


class AuthorsDualFocalLoss(torch.nn.Module):
    """Re-typed from github.com/Linwei94/DualFocalLoss, dual_focal_loss.py @e1ddb6b58c33955f23ff7025ec5350a480b7b040
    (unchanged but for the unused autograd.Variable import and the (N, K, d...) reshaping, not needed here)."""

    def __init__(self, gamma=0, size_average=False):
        super().__init__()
        self.gamma = gamma
        self.size_average = size_average

    def forward(self, input, target):
        target = target.view(-1, 1)
        logp_k = F.log_softmax(input, dim=1)
        softmax_logits = logp_k.exp()
        logp_k = logp_k.gather(1, target)
        logp_k = logp_k.view(-1)
        p_k = logp_k.exp()  # p_k: probility at target label
        # mask all logit larger and equal than p_k
        p_j_mask = torch.lt(softmax_logits, p_k.reshape(p_k.shape[0], 1)) * 1
        p_j = torch.topk(p_j_mask * softmax_logits, 1)[0].squeeze()
        loss = -1 * (1 - p_k + p_j) ** self.gamma * logp_k
        if self.size_average:
            return loss.mean()
        else:
            return loss.sum()


def _batch(n=48, k=10, scale=2.5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, k, generator=generator, dtype=torch.float64) * scale
    return logits, torch.randint(0, k, (n,), generator=generator)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 2.0, 5.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_values_and_gradients_match_the_authors_code(gamma, seed):
    logits, labels = _batch(seed=seed)
    for size_average, reduction in ((True, "mean"), (False, "sum")):
        ours_logits = logits.clone().requires_grad_(True)
        theirs_logits = logits.clone().requires_grad_(True)
        ours = DualFocalLoss(gamma=gamma, reduction=reduction)(ours_logits, labels)
        theirs = AuthorsDualFocalLoss(gamma=gamma, size_average=size_average)(theirs_logits, labels)
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6 * max(1.0, abs(theirs.item())))
        (ours_grad,) = torch.autograd.grad(ours, ours_logits)
        (theirs_grad,) = torch.autograd.grad(theirs, theirs_logits)
        torch.testing.assert_close(ours_grad, theirs_grad, rtol=0, atol=1e-6)
    # the batch holds samples whose true class ranks first, in between and last (each p_j rule is exercised)
    ranks = (logits > logits.gather(1, labels[:, None])).sum(1)
    assert (ranks == 0).any() and ((ranks > 0) & (ranks < 9)).any()


def test_per_sample_terms_match_the_authors_code():
    logits, labels = _batch(seed=3)
    theirs = torch.stack([AuthorsDualFocalLoss(gamma=5.0)(logits[i:i + 1], labels[i:i + 1]) for i in range(48)])
    torch.testing.assert_close(DualFocalLoss(reduction="none")(logits, labels), theirs, rtol=1e-12, atol=0)


def test_ties_with_the_true_class_are_not_below_it_as_in_the_authors_code():
    """Classes tied with the true one are masked (strictly below only): uniform logits give p_j = 0."""
    logits = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, -1.0], [2.0, 1.0, 1.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 1])
    for gamma in (2.0, 5.0):
        ours = logits.clone().requires_grad_(True)
        theirs = logits.clone().requires_grad_(True)
        value = DualFocalLoss(gamma=gamma, reduction="sum")(ours, labels)
        expected = AuthorsDualFocalLoss(gamma=gamma)(theirs, labels)
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=0)
        ours_grad = torch.autograd.grad(value, ours)[0]
        torch.testing.assert_close(ours_grad, torch.autograd.grad(expected, theirs)[0], rtol=1e-10, atol=1e-14)
    assert DualFocalLoss(gamma=1.0)(logits[:1], labels[:1]).item() == pytest.approx((2 / 3) * math.log(3), rel=1e-12)


def test_true_class_ranked_last_is_focal():
    """p_j = 0 (no class below the true one): the loss is focal FL-γ, values and gradients."""
    logits, _ = _batch(seed=4)
    labels = logits.argmin(dim=1)  # every true class ranks last
    for gamma in (1.0, 5.0):
        a, b = logits.clone().requires_grad_(True), logits.clone().requires_grad_(True)
        ours, focal = DualFocalLoss(gamma=gamma)(a, labels), FocalLoss(gamma=gamma)(b, labels)
        torch.testing.assert_close(ours, focal, rtol=1e-12, atol=0)
        torch.testing.assert_close(torch.autograd.grad(ours, a)[0], torch.autograd.grad(focal, b)[0], rtol=1e-10,
                                   atol=1e-14)


def test_gamma_zero_is_cross_entropy():
    logits, labels = _batch(seed=5)
    torch.testing.assert_close(DualFocalLoss(gamma=0.0)(logits, labels), F.cross_entropy(logits, labels), rtol=1e-12,
                               atol=0)


def test_hand_worked_values():
    # p = (0.5, 0.3, 0.2). True class 0: p_j = 0.3 (runner-up). True class 1: p_j = 0.2 (the class below it, not
    # the larger non-target 0.5). True class 2: p_j = 0.
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]] * 3, dtype=torch.float64))
    terms = dual_focal_terms(logits, torch.tensor([0, 1, 2]), 2.0)
    expected = [0.8**2 * math.log(2), 0.9**2 * -math.log(0.3), 0.8**2 * -math.log(0.2)]
    assert terms.tolist() == pytest.approx(expected, rel=1e-12)


def test_confident_samples_keep_finite_gradients():
    logits = torch.tensor([[60.0, 0.0, -5.0], [0.0, 80.0, 1.0]], requires_grad=True)
    value = DualFocalLoss(gamma=0.5)(logits, torch.tensor([0, 1]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()


def test_defaults_and_bad_gamma():
    assert build_loss("dual-focal").gamma == 5.0
    with pytest.raises(InputError, match=r"Expected gamma to be at least 0, got -1\."):
        DualFocalLoss(gamma=-1)
    with pytest.raises(InputError, match=r"Expected gamma to be a number, got 'x'\."):
        DualFocalLoss(gamma="x")
