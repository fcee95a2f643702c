"""Confidence penalty (Pereyra, Tucker, Chorowski, Kaiser & Hinton, ICLR workshop 2017, "Regularizing Neural
Networks by Penalizing Confident Output Distributions"): cross-entropy − β · H(p), H(p) = −Σ_k p_k log p_k.

The paper gives no code. β: the paper tunes it per task; adacal's default 0.1 is a documented choice, the value
the MbLS and CALS authors' configs give their `PenaltyEntropy` baseline (github.com/by-liu/MbLS,
configs/loss/penalty_ent.yaml @dc86503). That code averages the entropy terms over the classes as well
(`ent.mean()` over the (N, K) terms, i.e. H / K), and clamps p to [1e-10, 1 − 1e-10]: its alpha is β · K here. We
write the paper's formula, H summed over classes, from log_softmax (no clamp is needed: p · log p is finite).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss, check_non_negative
from adacal.losses.registry import LOSSES


def softmax_entropy(logits: torch.Tensor) -> torch.Tensor:
    """The entropy −Σ_k p_k log p_k of each row's softmax, in nats, from log_softmax.

    Args:
        logits: float tensor (N, K).

    Returns:
        An (N,) tensor in [0, log K].

    Example:
        >>> import torch
        >>> from adacal.losses import softmax_entropy
        >>> round(softmax_entropy(torch.zeros(1, 4)).item(), 4)  # uniform over 4 classes: ln 4
        1.3863
    """
    log_probs = torch.log_softmax(logits, dim=1)
    return -(log_probs.exp() * log_probs).sum(dim=1)


@LOSSES.register("confidence-penalty")
class ConfidencePenaltyLoss(CalibrationLoss):
    """Cross-entropy − β · H(p) (Pereyra et al. 2017), averaged over the batch.

    Args:
        beta: β ≥ 0, the weight of the entropy (default 0.1; see the module docstring); β = 0 is cross-entropy.
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import ConfidencePenaltyLoss
        >>> logits, labels = torch.zeros(1, 4), torch.tensor([0])  # CE = H = ln 4
        >>> round(ConfidencePenaltyLoss(beta=0.5)(logits, labels).item(), 4)  # 0.5 · ln 4
        0.6931
    """

    name = "confidence-penalty"

    def __init__(self, *, beta: float = 0.1, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.beta = check_non_negative("beta", beta)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        ce = F.cross_entropy(logits, labels, reduction="none")
        if self.beta == 0:
            return ce
        return ce - self.beta * softmax_entropy(logits)

    def extra_repr(self) -> str:
        return f"beta={self.beta:g}{self.input_repr()}"
