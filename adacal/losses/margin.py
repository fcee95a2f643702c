"""Logit-margin regularisers added to cross-entropy: MbLS (Liu et al., CVPR 2022) and ACLS (Park et al., ICCV 2023).

Both penalise, per sample, the distances d_j = max_k z_k − z_j of the logits z from the largest one beyond a margin
m (default 10, both papers).

MbLS, "The Devil is in the Margins: Margin-based Label Smoothing for Network Calibration": CE + λ · mean over the
batch *and over the K classes* of max(0, d_j − m), as the authors' code reduces it (github.com/by-liu/MbLS,
calibrate/losses/logit_margin_l1.py @dc86503: `F.relu(diff - self.margin).mean()` over the (N, K) distances; the
paper's formula writes the sum over classes, and λ = 0.1 was tuned with the mean). Gradients flow through the
maximum too (it is not detached there).

ACLS, "Adaptive and Conditional Label Smoothing for Network Calibration": CE + λ · R with, as in the authors' code
(github.com/cvlab-yonsei/ACLS, calibrate/losses/acls.py @bbd8a37, `get_reg`),
    R = λ_pos · (1/N) Σ_i [max_k z_ik − m]_+²  +  λ_neg · 1/(N(K−1)) Σ_i Σ_{j ≠ argmax} [sg(max_k z_ik) − z_ij − m]_+²
where sg stops the gradient (their `.detach()` of the maximum in the second term, not in the first) and the argmax
is every class equal to the maximum (their `indicator`). Defaults λ_pos = 1, λ_neg = 0.1, λ = 0.1, m = 10: the
authors' config (configs/loss/acls.yaml).

Both are sums of per-sample terms, so every reduction is defined ("none" is one loss per sample).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from adacal.losses.base import CalibrationLoss, check_non_negative
from adacal.losses.registry import LOSSES


def margin_penalty(logits: torch.Tensor, margin: float) -> torch.Tensor:
    """MbLS's per-sample penalty: the mean over the K classes of max(0, max_k z_k − z_j − margin).

    Args:
        logits: float tensor (N, K).
        margin: the margin m ≥ 0.

    Returns:
        An (N,) tensor ≥ 0; 0 for a sample whose logits all lie within `margin` of their maximum.

    Example:
        >>> import torch
        >>> from adacal.losses import margin_penalty
        >>> margin_penalty(torch.tensor([[12.0, 0.0, 1.0, 11.0]]), 10.0).item()  # (2 + 1 + 0 + 0) / 4
        0.75
    """
    distances = logits.amax(dim=1, keepdim=True) - logits
    return F.relu(distances - margin).mean(dim=1)


def acls_penalty(logits: torch.Tensor, margin: float, pos_lambda: float, neg_lambda: float) -> torch.Tensor:
    """ACLS's per-sample regulariser (see the module docstring): its batch mean is the authors' `get_reg`.

    Args:
        logits: float tensor (N, K), K ≥ 2.
        margin: the margin m ≥ 0.
        pos_lambda: λ_pos ≥ 0, the weight of the largest logit's own excess over m.
        neg_lambda: λ_neg ≥ 0, the weight of the other logits' distances from it beyond m.

    Returns:
        An (N,) tensor ≥ 0.

    Example:
        >>> import torch
        >>> from adacal.losses import acls_penalty
        >>> # (12 − 10)² = 4 for the maximum; distances 12, 1 from it: (12 − 10)² / 2 = 2 for the others
        >>> acls_penalty(torch.tensor([[12.0, 0.0, 11.0]]), 10.0, 1.0, 1.0).item()
        6.0
    """
    maximum = logits.amax(dim=1, keepdim=True)
    indicator = (logits.detach() == maximum.detach()).to(logits.dtype)
    positive = indicator * F.relu(maximum - margin).square()
    negative = (1.0 - indicator) * F.relu(maximum.detach() - logits - margin).square()
    k = logits.shape[1]
    return pos_lambda * positive.sum(dim=1) + neg_lambda * negative.sum(dim=1) / (k - 1)


@LOSSES.register("mbls")
class MbLSLoss(CalibrationLoss):
    """Margin-based label smoothing: CE + λ · (1/K) Σ_j max(0, max_k z_k − z_j − m) (Liu et al. 2022), averaged
    over the batch.

    Args:
        margin: the margin m ≥ 0 (default 10, the paper's); a margin beyond every logit distance is cross-entropy.
        margin_weight: λ ≥ 0 (default 0.1, the paper's).
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import MbLSLoss
        >>> logits, labels = torch.tensor([[12.0, 0.0, 1.0, 11.0]]), torch.tensor([0])
        >>> ce = torch.nn.functional.cross_entropy(logits, labels).item()
        >>> round(MbLSLoss()(logits, labels).item() - ce, 6)  # 0.1 · (2 + 1) / 4
        0.075
    """

    name = "mbls"

    def __init__(
        self, *, margin: float = 10.0, margin_weight: float = 0.1, ignore_index: int | None = -100,
        reduction: str = "mean",
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.margin = check_non_negative("margin", margin)
        self.margin_weight = check_non_negative("margin_weight", margin_weight)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels) + self.margin_weight * margin_penalty(logits, self.margin).mean()

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        ce = F.cross_entropy(logits, labels, reduction="none")
        return ce + self.margin_weight * margin_penalty(logits, self.margin)

    def extra_repr(self) -> str:
        return f"margin={self.margin:g}, margin_weight={self.margin_weight:g}{self.input_repr()}"


@LOSSES.register("acls")
class ACLSLoss(CalibrationLoss):
    """Adaptive and conditional label smoothing: CE + λ · R(z) (Park et al. 2023; R in the module docstring),
    averaged over the batch.

    Args:
        margin: the margin m ≥ 0 (default 10).
        margin_weight: λ ≥ 0, the weight of R (default 0.1).
        pos_lambda: λ_pos ≥ 0 (default 1.0).
        neg_lambda: λ_neg ≥ 0 (default 0.1).
        ignore_index, reduction: as `torch.nn.CrossEntropyLoss` (see `CalibrationLoss`).

    Example:
        >>> import torch
        >>> from adacal.losses import ACLSLoss
        >>> logits, labels = torch.tensor([[12.0, 0.0, 11.0]]), torch.tensor([0])
        >>> ce = torch.nn.functional.cross_entropy(logits, labels).item()
        >>> round(ACLSLoss()(logits, labels).item() - ce, 6)  # 0.1 · (1 · 4 + 0.1 · 4 / 2)
        0.42
    """

    name = "acls"

    def __init__(
        self, *, margin: float = 10.0, margin_weight: float = 0.1, pos_lambda: float = 1.0, neg_lambda: float = 0.1,
        ignore_index: int | None = -100, reduction: str = "mean",
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.margin = check_non_negative("margin", margin)
        self.margin_weight = check_non_negative("margin_weight", margin_weight)
        self.pos_lambda = check_non_negative("pos_lambda", pos_lambda)
        self.neg_lambda = check_non_negative("neg_lambda", neg_lambda)

    def _penalty(self, logits: torch.Tensor) -> torch.Tensor:
        return acls_penalty(logits, self.margin, self.pos_lambda, self.neg_lambda)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels) + self.margin_weight * self._penalty(logits).mean()

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels, reduction="none") + self.margin_weight * self._penalty(logits)

    def extra_repr(self) -> str:
        return (f"margin={self.margin:g}, margin_weight={self.margin_weight:g}, pos_lambda={self.pos_lambda:g}, "
                f"neg_lambda={self.neg_lambda:g}{self.input_repr()}")
