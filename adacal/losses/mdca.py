"""MDCA (Hebbalaguppe et al., CVPR 2022, "A Stitch in Time Saves Nine: A Train-Time Regularizing Loss for Improved
Neural Network Calibration"): a classification loss + β · MDCA of the batch, where
    MDCA = (1/K) Σ_j | (1/N) Σ_i p_ij − (1/N) Σ_i 1[y_i = j] |,
the gap between the mean predicted probability and the frequency of each class in the batch.

What we follow: the authors' code (github.com/mdca-loss/MDCA-Calibration, solvers/loss.py @cece2e5, `MDCA` and
`ClassficationAndMDCA`), vectorised (theirs loops over the classes). The classification loss (`base`) is one of
theirs: "ce" (NLL+MDCA), "focal" (FL+MDCA, focal γ, their script's γ = 1) or "label-smoothing" (LS+MDCA: their
`LabelSmoothingLoss`, which puts 1 − α on the true class and α/(K − 1) on each other class, unlike adacal's
`label-smoothing` loss, α/K on every class; their script's α = 0.1). β = 1, the paper's and their scripts' value on
CIFAR-10.

MDCA is a batch term: "mean" is the base loss's mean + β · MDCA, "sum" that times the batch size (as `mmce`), and
"none" is refused. With ignored positions, MDCA is computed on the positions kept.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from adacal.conventions import MDCA_BASES
from adacal.errors import InputError
from adacal.losses.base import CalibrationLoss, check_between, check_choice, check_non_negative
from adacal.losses.focal import signed_focal_loss
from adacal.losses.registry import LOSSES

_BASE_OPTION = {"focal": ("gamma", 1.0), "label-smoothing": ("alpha", 0.1)}


def mdca_penalty(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The multi-class difference of confidence and accuracy of a batch, (1/K) Σ_j |mean_i p_ij − mean_i 1[y_i=j]|.

    Args:
        logits: float tensor (N, K).
        labels: int64 class indices (N,).

    Returns:
        A scalar tensor in [0, 2/K]; 0 when the mean probabilities equal the class frequencies.

    Example:
        >>> import torch
        >>> from adacal.losses import mdca_penalty
        >>> logits = torch.log(torch.tensor([[0.75, 0.25], [0.25, 0.75]]))
        >>> mdca_penalty(logits, torch.tensor([0, 1])).item()  # mean probabilities (0.5, 0.5), frequencies too
        0.0
        >>> mdca_penalty(logits, torch.tensor([0, 0])).item()  # (|0.5 − 1| + |0.5 − 0|) / 2
        0.5
    """
    probs = torch.softmax(logits, dim=1)
    frequencies = F.one_hot(labels, num_classes=logits.shape[1]).to(probs.dtype).mean(dim=0)
    return (probs.mean(dim=0) - frequencies).abs().mean()


def _smoothed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, alpha: float) -> torch.Tensor:
    """MDCA's label smoothing: cross-entropy against 1 − α on the true class and α/(K − 1) on each other class."""
    log_probs = torch.log_softmax(logits, dim=1)
    k = logits.shape[1]
    targets = torch.full_like(log_probs, alpha / (k - 1)).scatter(1, labels.unsqueeze(1), 1.0 - alpha)
    return -(targets * log_probs).sum(dim=1).mean()


@LOSSES.register("mdca")
class MDCALoss(CalibrationLoss):
    """A classification loss (`base`) + β · MDCA of the batch (Hebbalaguppe et al. 2022; `mdca_penalty`).

    Args:
        beta: β ≥ 0, the weight of MDCA (default 1.0, the paper's).
        base: "ce" (default), "focal" or "label-smoothing" (the authors' smoothing: α/(K − 1) off the true class).
        gamma: focal γ ≥ 0 with base "focal" (default 1.0, the authors' FL+MDCA); refused with another base.
        alpha: smoothing α in [0, 1] with base "label-smoothing" (default 0.1, the authors' LS+MDCA); refused with
            another base.
        ignore_index, reduction: as `CalibrationLoss`; "sum" is the mean times the positions kept, and "none" is
            refused (MDCA is a batch term).

    Example:
        >>> import torch
        >>> from adacal.losses import MDCALoss
        >>> logits, labels = torch.log(torch.tensor([[0.75, 0.25], [0.25, 0.75]])), torch.tensor([0, 0])
        >>> ce = torch.nn.functional.cross_entropy(logits, labels).item()
        >>> round(MDCALoss(beta=1.0)(logits, labels).item() - ce, 6)  # β · 0.5
        0.5
    """

    name = "mdca"
    reductions = ("mean", "sum")  # MDCA is one value per batch: no per-sample losses for "none"

    def __init__(
        self, *, beta: float = 1.0, base: str = "ce", gamma: float | None = None, alpha: float | None = None,
        ignore_index: int | None = -100, reduction: str = "mean",
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.beta = check_non_negative("beta", beta)
        self.base = check_choice("base", base, MDCA_BASES)
        for option, value in (("gamma", gamma), ("alpha", alpha)):
            if value is not None and _BASE_OPTION.get(self.base, ("",))[0] != option:
                takes = next(b for b, (o, _) in _BASE_OPTION.items() if o == option)
                raise InputError(
                    f"Expected {option} only with base={takes!r}, got {option}={value!r} with base={self.base!r}: "
                    f"leave {option} out or pass base={takes!r}."
                )
        self.gamma = check_non_negative("gamma", 1.0 if gamma is None else gamma) if self.base == "focal" else None
        self.alpha = (check_between("alpha", 0.1 if alpha is None else alpha, 0.0, 1.0)
                      if self.base == "label-smoothing" else None)

    @staticmethod
    def resolved_options(options: dict[str, Any]) -> dict[str, Any]:
        """The options as built (for config.json and --print-config): the base's own option with its default
        filled in, the other base's option left out. Options that are not valid pass unchanged (for the checks).

        Example:
            >>> from adacal.losses import MDCALoss
            >>> MDCALoss.resolved_options({"beta": 1.0, "base": "focal", "gamma": None, "alpha": None})
            {'beta': 1.0, 'base': 'focal', 'gamma': 1.0}
        """
        base = options.get("base", "ce")
        resolved = {key: value for key, value in options.items() if key not in ("gamma", "alpha") or value is not None}
        if base in _BASE_OPTION:
            option, default = _BASE_OPTION[base]
            resolved.setdefault(option, default)
        return resolved

    def _base_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.base == "focal":
            return signed_focal_loss(logits, labels, self.gamma)
        if self.base == "label-smoothing":
            return _smoothed_cross_entropy(logits, labels, self.alpha)
        return F.cross_entropy(logits, labels)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._base_loss(logits, labels) + self.beta * mdca_penalty(logits, labels)

    def _sum(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._forward(logits, labels) * labels.shape[0]

    def extra_repr(self) -> str:
        base = f", base={self.base!r}" if self.base != "ce" else ""
        option = (f", gamma={self.gamma:g}" if self.gamma is not None
                  else f", alpha={self.alpha:g}" if self.alpha is not None else "")
        return f"beta={self.beta:g}{base}{option}{self.input_repr()}"
