"""Dual focal loss (Tao, Dong & Xu, ICML 2023, "Dual Focal Loss for Calibration"): −(1 − p_y + p_j)^γ log p_y.

p_y is the true class's probability and p_j the largest probability *below* p_y: "the highest logit ranked after
the ground truth logit" (the paper), as the authors' code computes it (github.com/Linwei94/DualFocalLoss,
dual_focal_loss.py @e1ddb6b: `torch.lt(softmax, p_k)` masks every class at or above p_y, then the top-1 of the
rest). When the true class ranks first, p_j is the runner-up; when it ranks lower, p_j is the next class below it
(not the largest non-target probability); when it ranks last, p_j = 0 and the loss is focal FL-γ. As in the code,
the mask is a constant and gradients flow through p_y and p_j.

γ: 5, the authors' CIFAR-10 value (github.com/Linwei94/ICML2023-DualFocalLoss, train_scripts/cifar10.sh @cb1ea6d:
`--loss dual_focal_loss --gamma 5`; the same repository's Losses/dual_focal_loss.py is the code above). Their
code's default, γ = 0, is cross-entropy. Their code sums over the batch (`size_average=False`); adacal's
default is the mean, and `reduction="sum"` (or `--loss-reduction sum`) is theirs.

Numerics: the weight is exp(γ · log(q + p_j)) with q = 1 − p_y and log q taken as focal's `true_class_log_probs`
takes it (accurate as p_y → 1), and log(q + p_j) = logaddexp(log q, log p_j); no power of a difference of
probabilities, no epsilon.
"""

from __future__ import annotations

import torch

from adacal.losses.base import CalibrationLoss, check_non_negative
from adacal.losses.focal import true_class_log_probs
from adacal.losses.registry import LOSSES


def dual_focal_terms(logits: torch.Tensor, labels: torch.Tensor, gamma: float) -> torch.Tensor:
    """Per-sample dual focal losses −(1 − p_y + p_j)^γ log p_y (see the module docstring for p_j).

    Args:
        logits: float tensor (N, K).
        labels: int64 class indices (N,).
        gamma: γ ≥ 0; γ = 0 is cross-entropy.

    Returns:
        An (N,) tensor of losses.

    Example:
        >>> import math, torch
        >>> from adacal.losses import dual_focal_terms
        >>> logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
        >>> # p_y = 0.5, p_j = 0.3: (1 − 0.5 + 0.3)² · ln 2
        >>> round(dual_focal_terms(logits, torch.tensor([0]), 2.0).item(), 4), round(0.8**2 * math.log(2), 4)
        (0.4436, 0.4436)
    """
    log_p, log_q = true_class_log_probs(logits, labels)
    if float(gamma) == 0:
        return -log_p
    log_probs = torch.log_softmax(logits, dim=1)
    below = log_probs < log_p.detach().unsqueeze(1)  # the classes ranked after the true class (a constant mask)
    log_p_j = log_probs.masked_fill(~below, float("-inf")).amax(dim=1)  # −inf when the true class ranks last
    log_base = torch.logaddexp(log_q, log_p_j)  # log(1 − p_y + p_j)
    return -torch.exp(float(gamma) * log_base) * log_p


@LOSSES.register("dual-focal")
class DualFocalLoss(CalibrationLoss):
    """Dual focal loss: −(1 − p_y + p_j)^γ log p_y, p_j the largest probability below the true class's (Tao et al.
    2023), averaged over the batch.

    Args:
        gamma: γ ≥ 0 (default 5.0, the paper's CIFAR-10 value); γ = 0 is cross-entropy.
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`); "sum" is the authors' code.

    Example:
        >>> import torch
        >>> from adacal.losses import DualFocalLoss, FocalLoss
        >>> logits, labels = torch.tensor([[0.0, 2.0, 1.0]]), torch.tensor([0])  # the true class ranks last: p_j = 0
        >>> torch.allclose(DualFocalLoss(gamma=5.0)(logits, labels), FocalLoss(gamma=5.0)(logits, labels))
        True
    """

    name = "dual-focal"

    def __init__(self, *, gamma: float = 5.0, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.gamma = check_non_negative("gamma", gamma)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return dual_focal_terms(logits, labels, self.gamma)

    def extra_repr(self) -> str:
        return f"gamma={self.gamma:g}{self.input_repr()}"
