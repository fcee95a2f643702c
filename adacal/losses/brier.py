"""Brier score as a training loss (Brier 1950): the squared error between the softmax and the one-hot label."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss
from adacal.losses.registry import LOSSES


def brier_score(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean over samples of Σ_k (p_k − y_k)², with p = softmax(logits) and y the one-hot label."""
    probs = torch.softmax(logits, dim=1)
    one_hot = F.one_hot(labels, num_classes=logits.shape[1]).to(probs.dtype)
    return (probs - one_hot).pow(2).sum(dim=1).mean()


@LOSSES.register("brier")
class BrierLoss(CalibrationLoss):
    """Brier score loss (sum over classes, mean over samples)."""

    name = "brier"

    def __init__(self) -> None:
        super().__init__()

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return brier_score(logits, labels)
