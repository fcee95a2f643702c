"""CalFocal, both cases of the paper, against hand computation."""

import math

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.losses import CalFocalLoss, FocalLoss, build_loss

K = 10


def _logits(p_top, k=K):
    p = torch.tensor(p_top, dtype=torch.float64)
    rest = ((1 - p) / (k - 1)).unsqueeze(1).expand(-1, k - 1)
    return torch.log(torch.cat([p.unsqueeze(1), rest], dim=1))


# Validation: two equal-mass bins, edges 0, 0.6, 1.
#   bin 0: 0.3 wrong, 0.4 right  -> C 0.35, A 0.5
#   bin 1: 0.8 right, 0.9 wrong  -> C 0.85, A 0.5
VAL_LOGITS = _logits([0.3, 0.4, 0.8, 0.9]).float()
VAL_LABELS = torch.tensor([1, 0, 0, 1])
TRAIN_P = [0.2, 0.5, 0.7, 0.95]  # bins 0, 0, 1, 1
TRAIN_LOGITS = _logits(TRAIN_P)
TRAIN_LABELS = torch.zeros(4, dtype=torch.long)
LAM = 2.0


def _focal_by_hand(p_values, gammas):
    return float(np.mean([-((1 - p) ** g) * math.log(p) for p, g in zip(p_values, gammas)]))


def test_bin_case_uses_exp_lambda_times_the_bin_gap():
    loss = CalFocalLoss(lam=LAM, n_bins=2, mode="bin")
    record = loss.update(VAL_LOGITS, VAL_LABELS)
    np.testing.assert_allclose(record["edges"], [0.0, 0.6, 1.0], atol=1e-7)
    gamma_0, gamma_1 = math.exp(LAM * (0.35 - 0.5)), math.exp(LAM * (0.85 - 0.5))
    np.testing.assert_allclose(record["gammas"], [gamma_0, gamma_1], rtol=1e-6)
    expected = _focal_by_hand(TRAIN_P, [gamma_0, gamma_0, gamma_1, gamma_1])
    assert loss(TRAIN_LOGITS, TRAIN_LABELS).item() == pytest.approx(expected, rel=1e-6)


def test_sample_case_uses_exp_lambda_times_p_minus_bin_accuracy():
    loss = CalFocalLoss(lam=LAM, n_bins=2, mode="sample")
    record = loss.update(VAL_LOGITS, VAL_LABELS)
    assert record["gammas"] is None and record["val_accuracy"] == [0.5, 0.5]
    gammas = [math.exp(LAM * (p - 0.5)) for p in TRAIN_P]
    expected = _focal_by_hand(TRAIN_P, gammas)
    assert loss(TRAIN_LOGITS, TRAIN_LABELS).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("mode", ["bin", "sample"])
def test_before_any_update_calfocal_is_focal_with_gamma_one(mode):
    loss = build_loss("calfocal", mode=mode)
    assert loss.needs_validation
    torch.testing.assert_close(loss(TRAIN_LOGITS, TRAIN_LABELS), FocalLoss(gamma=1.0)(TRAIN_LOGITS, TRAIN_LABELS))


def test_state_round_trip_and_huge_lambda_stays_finite():
    loss = CalFocalLoss(lam=100.0, n_bins=2, mode="bin")
    loss.update(VAL_LOGITS, VAL_LABELS)
    fresh = CalFocalLoss(lam=100.0, n_bins=2, mode="bin")
    fresh.load_state_dict(loss.state_dict())
    assert fresh.history == loss.history
    logits = torch.tensor([[-50.0, 50.0, 0.0], [50.0, -50.0, 0.0], [0.5, 0.0, 0.0]], requires_grad=True)
    value = fresh(logits, torch.tensor([0, 0, 0]))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(logits.grad).all()
    torch.testing.assert_close(value, loss(logits, torch.tensor([0, 0, 0])))


def test_bad_mode_and_lambda():
    with pytest.raises(InputError, match="Expected mode to be one of 'bin', 'sample', got 'bins'."):
        CalFocalLoss(mode="bins")
    with pytest.raises(InputError, match="Expected lam to be greater than 0, got -1."):
        CalFocalLoss(lam=-1)
