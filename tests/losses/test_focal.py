"""Cross-entropy, focal, inverse focal and FLSD-53 against hand formulas, and their numerics at the extremes."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from adacal.errors import InputError
from adacal.losses import (
    AdaFocalLoss,
    FLSD53Loss,
    FocalLoss,
    InverseFocalLoss,
    build_loss,
    signed_focal_loss,
    true_class_log_probs,
)


def _batch(n=32, k=7, scale=3.0, seed=0, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n, k, generator=generator) * scale).to(dtype)
    labels = torch.randint(0, k, (n,), generator=generator)
    return logits, labels


def _p_true64(logits, labels):
    probs = torch.softmax(logits.double(), dim=1)
    return probs.gather(1, labels[:, None]).squeeze(1)


def _logits_with_p_true(p_true, k=10):
    """Logits whose softmax puts p_true on class 0 and spreads the rest evenly (exact in float64)."""
    p_true = torch.as_tensor(p_true, dtype=torch.float64)
    rest = ((1 - p_true) / (k - 1)).unsqueeze(1).expand(-1, k - 1)
    return torch.log(torch.cat([p_true.unsqueeze(1), rest], dim=1))


def test_focal_with_gamma_zero_equals_cross_entropy():
    logits, labels = _batch()
    expected = F.cross_entropy(logits, labels)
    torch.testing.assert_close(FocalLoss(gamma=0)(logits, labels), expected, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(build_loss("ce")(logits, labels), expected)
    torch.testing.assert_close(InverseFocalLoss(gamma=0)(logits, labels), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("gamma", [0.2, 1.0, 3.0, 20.0])
def test_focal_matches_the_formula_computed_by_hand(gamma):
    logits, labels = _batch(dtype=torch.float64)
    p = _p_true64(logits, labels)
    expected = (-((1 - p) ** gamma) * torch.log(p)).mean()
    torch.testing.assert_close(FocalLoss(gamma=gamma)(logits, labels), expected, rtol=1e-12, atol=0)
    # float32 agrees with the float64 formula to float32 rounding: no epsilon anywhere
    torch.testing.assert_close(FocalLoss(gamma=gamma)(logits.float(), labels).double(), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("gamma", [0.2, 1.0, 2.0])
def test_inverse_focal_matches_the_formula_computed_by_hand(gamma):
    logits, labels = _batch(dtype=torch.float64, seed=1)
    p = _p_true64(logits, labels)
    expected = (-((1 + p) ** gamma) * torch.log(p)).mean()
    torch.testing.assert_close(InverseFocalLoss(gamma=gamma)(logits, labels), expected, rtol=1e-12, atol=0)
    torch.testing.assert_close(signed_focal_loss(logits, labels, -gamma), expected, rtol=1e-12, atol=0)


def test_log_probs_are_accurate_near_zero_and_one():
    # margins of 40 make 1 - p ~ 4e-18 (and p ~ 4e-18): below float32 resolution of p but not of log(1 - p)
    logits = torch.tensor([[40.0, 0.0, 0.0], [0.0, 40.0, 0.0], [1.0, 2.0, 3.0]])
    labels = torch.tensor([0, 0, 2])
    log_p, log_q = true_class_log_probs(logits, labels)
    z = logits.double()
    lse = torch.logsumexp(z, 1)
    expected_log_p = z.gather(1, labels[:, None]).squeeze(1) - lse
    expected_log_q = torch.log(-torch.expm1(expected_log_p))
    expected_log_q[0] = math.log(2.0) - 40.0 - math.log1p(2 * math.exp(-40.0))  # log(2e^0 / (e^40 + 2))
    torch.testing.assert_close(log_p.double(), expected_log_p, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(log_q.double(), expected_log_q, rtol=1e-6, atol=1e-12)


def test_flsd53_uses_gamma_5_below_0_2_and_3_from_0_2():
    p_values = torch.tensor([0.19, 0.1999, 0.2001, 0.21, 0.6])
    logits = _logits_with_p_true(p_values)
    labels = torch.zeros(len(p_values), dtype=torch.long)
    per_sample = []
    for i, p in enumerate(p_values.double()):
        gamma = 5.0 if p < 0.2 else 3.0
        per_sample.append(-((1 - p) ** gamma) * torch.log(p))
    expected = torch.stack(per_sample).mean()
    torch.testing.assert_close(FLSD53Loss()(logits, labels), expected, rtol=1e-10, atol=0)
    # and each sample on its own side of the threshold
    for i in range(len(p_values)):
        one = FLSD53Loss()(logits[i : i + 1], labels[:1])
        torch.testing.assert_close(one, per_sample[i], rtol=1e-10, atol=0)
    just_below = (logits[1:2], labels[:1])
    assert not torch.allclose(FLSD53Loss()(*just_below), FocalLoss(gamma=3)(*just_below))


@pytest.mark.parametrize("gamma", [0.0, 0.2, 3.0, 20.0, -0.2, -2.0])
def test_gradcheck_float64_focal_and_inverse_branches(gamma):
    logits, labels = _batch(n=6, k=4, scale=2.0, seed=3, dtype=torch.float64)
    logits.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda z: signed_focal_loss(z, labels, gamma), (logits,))


@pytest.mark.parametrize("gamma", [0.2, -1.0, 20.0])
def test_gradcheck_float64_adafocal_in_both_branches(gamma):
    logits, labels = _batch(n=6, k=4, scale=2.0, seed=4, dtype=torch.float64)
    loss = AdaFocalLoss()
    loss.gammas.fill_(gamma)
    loss.eval()
    logits.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda z: loss(z, labels), (logits,))


@pytest.mark.parametrize("gamma", [1e-3, 0.2, 0.5, 1.0, 5.0, 20.0, -0.2, -2.0])
@pytest.mark.parametrize("margin", [0.0, 10.0, 30.0, 50.0, 100.0, 1000.0])
def test_gradients_stay_finite_as_p_true_goes_to_one_and_zero(gamma, margin):
    # row 0: p_true -> 1 (the true class leads by `margin`); row 1: p_true -> 0 (it trails by `margin`)
    logits = torch.tensor([[margin, 0.0, 0.0, 0.0], [-margin, 0.0, 0.0, 0.0]], requires_grad=True)
    labels = torch.tensor([0, 0])
    value = signed_focal_loss(logits, labels, gamma)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()
    if gamma > 0 and margin >= 50:
        # a learnt sample has (nearly) zero focal gradient, not NaN
        assert logits.grad[0].abs().max() < 1e-6


def test_naive_power_would_give_nan_where_ours_is_finite():
    """The failure our formulation avoids: d/dp (1-p)^0.2 is infinite at p = 1 in float32."""
    logits = torch.tensor([[60.0, 0.0, 0.0]], requires_grad=True)
    labels = torch.tensor([0])
    log_p = F.log_softmax(logits, dim=1)[0, 0]
    naive = -((1 - log_p.exp()) ** 0.2) * log_p
    naive.backward()
    assert not torch.isfinite(logits.grad).all()
    logits.grad = None
    signed_focal_loss(logits, labels, 0.2).backward()
    assert torch.isfinite(logits.grad).all()


def test_focal_gradient_matches_float64_reference_near_one():
    # p close to 1 but resolvable: our float32 gradient agrees with the float64 autograd of the textbook formula
    logits = torch.tensor([[8.0, 0.0, -1.0], [3.0, 2.5, 0.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0])
    for gamma in (0.2, 3.0):
        z64 = logits.clone().requires_grad_(True)
        p = torch.softmax(z64, 1)[:, 0]
        (-((1 - p) ** gamma) * torch.log(p)).mean().backward()
        z32 = logits.float().requires_grad_(True)
        signed_focal_loss(z32, labels, gamma).backward()
        np.testing.assert_allclose(z32.grad.numpy(), z64.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_signed_focal_loss_reductions():
    logits, labels = _batch(n=5, seed=7)
    terms = signed_focal_loss(logits, labels, 2.0, reduction="none")
    assert terms.shape == (5,)
    torch.testing.assert_close(signed_focal_loss(logits, labels, 2.0, reduction="sum"), terms.sum())
    torch.testing.assert_close(signed_focal_loss(logits, labels, torch.full((5,), 2.0)), terms.mean())
    with pytest.raises(InputError, match="Expected reduction to be one of 'mean', 'sum', 'none', got 'avg'."):
        signed_focal_loss(logits, labels, 2.0, reduction="avg")
