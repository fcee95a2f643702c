"""Cross-entropy and the focal family: focal FL-γ, inverse focal InvFL-γ and FLSD-53.

All of them are written with one pure function, `signed_focal_loss`, whose γ may be a number or one value per
sample: γ ≥ 0 gives focal −(1−p)^γ log p, γ < 0 gives inverse focal −(1+p)^|γ| log p (AdaFocal's convention).

Numerics. The weights are computed in log space from the logits, never as a power of a probability:
    (1−p)^γ = exp(γ · log(1−p)),   (1+p)^|γ| = exp(|γ| · log1p(p)),
with log p taken from log_softmax and log(1−p) from whichever formula is accurate:
    p ≥ 1/2:  log(1−p) = logsumexp_{k≠y} log_softmax(z)_k   (exact as p → 1, even where 1 − p underflows),
    p < 1/2:  log(1−p) = log1p(−exp(log p))                  (exact as p → 0).
Both are smooth functions of the logits with bounded derivatives, so the infinite derivative of (1−p)^γ at p = 1 for
γ < 1 (which makes naive focal-loss code return NaN gradients once a sample is learnt perfectly) never appears, and
no epsilon is added anywhere: the values agree with the textbook formula to rounding.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss, check_choice, check_non_negative
from adacal.losses.registry import LOSSES

_LOG_HALF = -math.log(2.0)


def true_class_log_probs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log p and log(1 − p) of each sample's true-class probability p, both accurate for p near 0 and near 1.

    Args:
        logits: finite float tensor (N, K), K ≥ 2.
        labels: int64 class indices (N,).

    Returns:
        (log p, log(1 − p)): two (N,) tensors, both ≤ 0.

    Example:
        >>> import torch
        >>> from adacal.losses import true_class_log_probs
        >>> log_p, log_q = true_class_log_probs(torch.zeros(1, 2), torch.tensor([0]))  # p = 1 − p = 0.5
        >>> round(log_p.item(), 4), round(log_q.item(), 4)
        (-0.6931, -0.6931)
    """
    index = labels.unsqueeze(1)
    log_probs = torch.log_softmax(logits, dim=1)
    log_p = log_probs.gather(1, index).squeeze(1)
    # p >= 1/2: log(1 - p) = log Σ_{k≠y} p_k, finite and exact even where 1 - p underflows (margins of 1000 are fine)
    log_q_near_one = torch.logsumexp(log_probs.scatter(1, index, float("-inf")), dim=1)
    # p < 1/2: log1p(-p). The clamp keeps the branch `where` discards finite (else its gradient is 0 · inf = NaN).
    log_q_small_p = torch.log1p(-torch.exp(log_p.clamp(max=_LOG_HALF)))
    return log_p, torch.where(log_p < _LOG_HALF, log_q_small_p, log_q_near_one)


def signed_focal_terms(log_p: torch.Tensor, log_q: torch.Tensor, gamma: torch.Tensor | float) -> torch.Tensor:
    """Per-sample focal terms −w · log p, with w = (1 − p)^γ for γ ≥ 0 and (1 + p)^|γ| for γ < 0 (inverse focal).

    Args:
        log_p: log p of the true class (N,).
        log_q: log(1 − p) (N,), as `true_class_log_probs` returns it.
        gamma: γ, a number or an (N,) tensor (one per sample).

    Returns:
        An (N,) tensor of losses.

    Example:
        >>> import math, torch
        >>> from adacal.losses import signed_focal_terms
        >>> half = torch.tensor([math.log(0.5)])  # log p = log(1 − p) at p = 0.5
        >>> round(signed_focal_terms(half, half, 2.0).item(), 4)  # (1 − 0.5)² · ln 2
        0.1733
    """
    if not isinstance(gamma, torch.Tensor):
        gamma = float(gamma)
        if gamma == 0:
            return -log_p
        log_weight = gamma * log_q if gamma > 0 else -gamma * torch.log1p(torch.exp(log_p))
    else:
        gamma = gamma.to(log_p.dtype)
        # Exactly one of the two exponents is non-zero: (1−p)^γ or (1+p)^|γ| without a branch per sample.
        log_weight = gamma.clamp(min=0.0) * log_q - gamma.clamp(max=0.0) * torch.log1p(torch.exp(log_p))
    return -torch.exp(log_weight) * log_p


def signed_focal_loss(
    logits: torch.Tensor, labels: torch.Tensor, gamma: torch.Tensor | float, *, reduction: str = "mean"
) -> torch.Tensor:
    """Focal (γ ≥ 0) or inverse focal (γ < 0) loss from logits; γ = 0 is exactly `F.cross_entropy`.

    Args:
        logits: float tensor (N, K).
        labels: int64 class indices (N,).
        gamma: γ, a number or an (N,) tensor (one per sample).
        reduction: "mean" (default), "sum" or "none".

    Returns:
        A scalar tensor, or the (N,) per-sample losses with reduction="none".

    Example:
        >>> import torch
        >>> from adacal.losses import signed_focal_loss
        >>> round(signed_focal_loss(torch.zeros(1, 2), torch.tensor([0]), -1.0).item(), 4)  # (1 + 0.5) · ln 2
        1.0397
    """
    check_choice("reduction", reduction, ("mean", "sum", "none"))
    if not isinstance(gamma, torch.Tensor) and float(gamma) == 0:
        # γ = 0 is cross-entropy: the same kernel, so the values agree bit for bit (a mean of −log p can differ in
        # the last place from F.cross_entropy's own reduction)
        return F.cross_entropy(logits, labels, reduction=reduction)
    log_p, log_q = true_class_log_probs(logits, labels)
    terms = signed_focal_terms(log_p, log_q, gamma)
    if reduction == "mean":
        return terms.mean()
    if reduction == "sum":
        return terms.sum()
    return terms


@LOSSES.register("ce")
class CrossEntropyLoss(CalibrationLoss):
    """Cross-entropy −log p of the true class, averaged over the batch (`build_loss("ce")`; no hyper-parameters).

    Args:
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import CrossEntropyLoss
        >>> round(CrossEntropyLoss()(torch.zeros(1, 2), torch.tensor([0])).item(), 4)  # p = 0.5: ln 2
        0.6931
    """

    name = "ce"

    def __init__(self, *, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels, reduction="none")

    def extra_repr(self) -> str:
        return self.input_repr().removeprefix(", ")


@LOSSES.register("focal")
class FocalLoss(CalibrationLoss):
    """Focal loss FL-γ: −(1 − p)^γ log p of the true-class probability p, averaged over the batch.

    Args:
        gamma: the focusing parameter γ ≥ 0 (default 3.0); γ = 0 is cross-entropy.
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import CrossEntropyLoss, FocalLoss
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 1, 0])
        >>> FocalLoss(gamma=0.0)(logits, labels).item() == CrossEntropyLoss()(logits, labels).item()
        True
        >>> round(FocalLoss(gamma=2.0)(torch.zeros(1, 2), torch.tensor([0])).item(), 4)  # (1 − 0.5)² · ln 2
        0.1733
    """

    name = "focal"

    def __init__(self, *, gamma: float = 3.0, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.gamma = check_non_negative("gamma", gamma)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return signed_focal_loss(logits, labels, self.gamma)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return signed_focal_loss(logits, labels, self.gamma, reduction="none")

    def extra_repr(self) -> str:
        return f"gamma={self.gamma:g}{self.input_repr()}"


@LOSSES.register("inverse-focal")
class InverseFocalLoss(CalibrationLoss):
    """Inverse focal loss InvFL-γ: −(1 + p)^γ log p with γ ≥ 0; larger gradients for easy samples.

    Args:
        gamma: γ ≥ 0 (default 1.0); γ = 0 is cross-entropy.
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import InverseFocalLoss
        >>> round(InverseFocalLoss(gamma=1.0)(torch.zeros(1, 2), torch.tensor([0])).item(), 4)  # (1 + 0.5) · ln 2
        1.0397
    """

    name = "inverse-focal"

    def __init__(self, *, gamma: float = 1.0, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.gamma = check_non_negative("gamma", gamma)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return signed_focal_loss(logits, labels, -self.gamma)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return signed_focal_loss(logits, labels, -self.gamma, reduction="none")

    def extra_repr(self) -> str:
        return f"gamma={self.gamma:g}{self.input_repr()}"


@LOSSES.register("flsd-53")
class FLSD53Loss(CalibrationLoss):
    """Sample-dependent focal loss of Mukhoti et al. (2020): γ = 5 when p_true < 0.2, otherwise γ = 3.

    Args:
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`); no hyper-parameters.

    γ is chosen from the detached p_true, so it acts as a per-sample constant (as in the reference code).

    Example:
        >>> import torch
        >>> from adacal.losses import FLSD53Loss
        >>> round(FLSD53Loss()(torch.zeros(1, 2), torch.tensor([0])).item(), 4)  # p = 0.5, γ = 3: 0.5³ · ln 2
        0.0866
    """

    name = "flsd-53"
    threshold = 0.2
    gamma_low = 5.0
    gamma_high = 3.0

    def __init__(self, *, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        log_p, log_q = true_class_log_probs(logits, labels)
        p = log_p.detach().exp()
        gamma = torch.where(p < self.threshold, self.gamma_low, self.gamma_high)
        return signed_focal_terms(log_p, log_q, gamma)

    def extra_repr(self) -> str:
        return self.input_repr().removeprefix(", ")
