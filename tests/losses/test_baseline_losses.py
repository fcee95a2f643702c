"""Brier, label smoothing and MMCE against closed forms and slow, obvious loops."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from adacal.losses import BrierLoss, LabelSmoothingLoss, MMCELoss, build_loss, mmce_weighted


def _batch(n=24, k=5, scale=2.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, k, generator=generator, dtype=torch.float64) * scale
    return logits, torch.randint(0, k, (n,), generator=generator)


def test_brier_is_the_mean_over_samples_of_the_squared_error_sum():
    logits, labels = _batch()
    probs = torch.softmax(logits, 1).numpy()
    expected = np.mean(
        [sum((probs[i, k] - (k == labels[i].item())) ** 2 for k in range(probs.shape[1])) for i in range(len(probs))]
    )
    assert BrierLoss()(logits, labels).item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.3])
def test_label_smoothing_equals_torch_cross_entropy(alpha):
    logits, labels = _batch()
    expected = F.cross_entropy(logits, labels, label_smoothing=alpha)
    torch.testing.assert_close(LabelSmoothingLoss(alpha=alpha)(logits, labels), expected)
    assert build_loss("label-smoothing").alpha == 0.05


def _slow_mmce_w(logits, labels):
    """The authors' code (calibration_mmce_w_loss), one pair at a time: each kernel block is averaged over its
    pairs and then divided by m^2, n^2, m*n once more; 0 when the batch is all correct or all wrong."""
    probs = torch.softmax(logits.double(), 1).numpy()
    r = probs.max(1)
    ok = probs.argmax(1) == labels.numpy()
    right = [i for i in range(len(r)) if ok[i]]
    wrong = [i for i in range(len(r)) if not ok[i]]
    m, n = len(right), len(wrong)
    if m == 0 or n == 0:
        return 0.0

    def kernel(a, b):
        return math.exp(-abs(a - b) / 0.4)

    right_right = sum((1 - r[i]) * (1 - r[j]) * kernel(r[i], r[j]) for i in right for j in right) / (m * m)
    wrong_wrong = sum(r[i] * r[j] * kernel(r[i], r[j]) for i in wrong for j in wrong) / (n * n)
    right_wrong = sum((1 - r[i]) * r[j] * kernel(r[i], r[j]) for i in right for j in wrong) / (m * n)
    return math.sqrt(right_right / (m * m) + wrong_wrong / (n * n) - 2 * right_wrong / (m * n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmce_matches_a_double_loop_of_the_reference_formula(seed):
    logits, labels = _batch(n=30, k=4, scale=1.5, seed=seed)
    expected = _slow_mmce_w(logits, labels)
    assert 0 < expected
    assert mmce_weighted(logits, labels).item() == pytest.approx(expected, rel=1e-10)
    loss = MMCELoss(weight=2.0)(logits, labels)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, labels).item() + 2.0 * expected, rel=1e-12)


def test_mmce_is_zero_for_all_correct_or_all_wrong_batches_with_finite_gradients():
    logits = torch.tensor([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 0.0, 0.0]], requires_grad=True)
    for labels in (torch.tensor([0, 1, 0]), torch.tensor([1, 0, 2])):
        value = mmce_weighted(logits, labels)
        value.backward()
        assert value.item() == 0.0 and torch.isfinite(logits.grad).all()
        logits.grad = None


def test_mmce_gradient_is_finite_when_the_penalty_vanishes():
    # identical confidences with one right and one wrong: the two embeddings can cancel exactly
    logits = torch.tensor([[1.0, 0.0], [1.0, 0.0]], requires_grad=True)
    value = mmce_weighted(logits, torch.tensor([0, 1]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()
