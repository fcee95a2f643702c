"""Brier score as a training loss (Brier 1950): the squared error between the softmax and the one-hot label."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss
from adacal.losses.registry import LOSSES


def brier_score(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Brier score of logits: the mean over samples of Σ_k (p_k − y_k)², p = softmax(logits), y the one-hot label.

    Args:
        logits: float tensor (N, K).
        labels: int64 class indices (N,).

    Returns:
        A scalar tensor in [0, 2].

    Example:
        >>> import torch
        >>> from adacal.losses import brier_score
        >>> brier_score(torch.zeros(1, 2), torch.tensor([0])).item()  # (0.5 − 1)² + 0.5²
        0.5
    """
    return _brier_terms(logits, labels).mean()


def _brier_terms(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    probs = torch.softmax(logits, dim=1)
    one_hot = F.one_hot(labels, num_classes=logits.shape[1]).to(probs.dtype)
    return (probs - one_hot).pow(2).sum(dim=1)


@LOSSES.register("brier")
class BrierLoss(CalibrationLoss):
    """Brier score loss: Σ_k (p_k − 1[y = k])², averaged over the batch (`brier_score`; no hyper-parameters).

    Args:
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import BrierLoss
        >>> BrierLoss()(torch.zeros(1, 2), torch.tensor([0])).item()  # (0.5 − 1)² + 0.5²
        0.5
    """

    name = "brier"

    def __init__(self, *, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return brier_score(logits, labels)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return _brier_terms(logits, labels)

    def extra_repr(self) -> str:
        return self.input_repr().removeprefix(", ")
