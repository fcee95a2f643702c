"""Label smoothing LS-α (Müller et al. 2019): cross-entropy against (1 − α)·one-hot + α/K."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss, check_between
from adacal.losses.registry import LOSSES


@LOSSES.register("label-smoothing")
class LabelSmoothingLoss(CalibrationLoss):
    """Cross-entropy against smoothed labels (1 − α) · one-hot + α / K (the AdaFocal paper's baseline is LS-0.05).

    Args:
        alpha: the smoothing α in [0, 1] (default 0.05).
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> import torch.nn.functional as F
        >>> from adacal.losses import LabelSmoothingLoss
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
        >>> loss = LabelSmoothingLoss(alpha=0.1)(logits, labels)
        >>> loss.item() == F.cross_entropy(logits, labels, label_smoothing=0.1).item()
        True
    """

    name = "label-smoothing"

    def __init__(self, *, alpha: float = 0.05, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.alpha = check_between("alpha", alpha, 0.0, 1.0)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels, label_smoothing=self.alpha)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels, label_smoothing=self.alpha, reduction="none")

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:g}{self.input_repr()}"
