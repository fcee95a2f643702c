"""CalFocal, the calibration-aware focal loss of the AdaFocal paper (Section 4.1), both cases:

    mode="sample" (case 1, Eq. 2):  −(1 − p_n)^γ_n log p_n,  γ_n = exp(λ (p_n − A_val,b)),
    mode="bin"    (case 2, Eq. 3):  −(1 − p_n)^γ_b log p_n,  γ_b = exp(λ (C_val,b − A_val,b)),

where b is the validation bin holding p_n (the sample's true-class probability), placed with the validation-bin edges
exactly as in AdaFocal. `update(val_logits, val_labels)` recomputes the equal-mass validation bins, their mean
confidence C_val and accuracy A_val. Before the first update (and in a bin with no validation samples) γ = 1.
γ_n is computed from the detached p_n, i.e. it is a per-sample constant for the gradient (as FLSD-53's γ).

γ is capped at exp(30) ≈ 1e13 so float32 gradients cannot overflow when λ is large (the paper tries λ = 100); the
cap changes the loss only for samples whose (1 − p)^γ is not already 0 at γ = 1e13, i.e. with p below ~1e-12.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from adacal.conventions import DEFAULT_N_BINS
from adacal.losses.base import check_choice, check_positive
from adacal.losses.binned import (
    DEFAULT_WARN_AFTER_STEPS,
    ValidationBinnedLoss,
    accepts_deprecated_options,
    check_state_device,
)
from adacal.losses.records import BinUpdate
from adacal.losses.focal import signed_focal_terms, true_class_log_probs
from adacal.losses.registry import LOSSES

CALFOCAL_MODES = ("bin", "sample")
_MAX_LOG_GAMMA = 30.0


@LOSSES.register("calfocal")
@accepts_deprecated_options
class CalFocalLoss(ValidationBinnedLoss):
    """CalFocal: focal loss whose γ follows the validation calibration gap, per validation bin or per sample.

    Args:
        lam: λ > 0, how strongly γ follows the gap (default 10.0).
        n_bins: the number of equal-mass validation bins (default 15).
        mode: "bin" (default), γ_b = exp(λ (C_val,b − A_val,b)); or "sample", γ_n = exp(λ (p_n − A_val,b)).
        ignore_index, reduction, warn_after_steps: as `ValidationBinnedLoss`.

    Example:
        >>> import torch
        >>> from adacal.losses import CalFocalLoss, FocalLoss
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 1, 0])
        >>> loss = CalFocalLoss(n_bins=2)
        >>> round(loss(logits, labels).item(), 4) == round(FocalLoss(gamma=1.0)(logits, labels).item(), 4)  # γ = 1
        True
        >>> record = loss.update(logits, labels)  # usually the validation set, e.g. once per epoch
        >>> len(record["gammas"]), len(loss.history)
        (2, 1)
    """

    name = "calfocal"

    def __init__(
        self, *, lam: float = 10.0, n_bins: int = DEFAULT_N_BINS, mode: str = "bin",
        ignore_index: int | None = -100, reduction: str = "mean",
        warn_after_steps: int | None = DEFAULT_WARN_AFTER_STEPS,
    ) -> None:
        super().__init__(
            n_bins=n_bins, ignore_index=ignore_index, reduction=reduction, warn_after_steps=warn_after_steps
        )
        self.lam = check_positive("lam", lam)
        self.mode = check_choice("mode", mode, CALFOCAL_MODES)
        m = self.n_bins
        self.register_buffer("val_confidence", torch.zeros(m, dtype=torch.float64))
        self.register_buffer("val_accuracy", torch.zeros(m, dtype=torch.float64))
        self.register_buffer("val_count", torch.zeros(m, dtype=torch.int64))

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        check_state_device(self, logits)
        log_p, log_q = true_class_log_probs(logits, labels)
        # γ in float64 like the buffers (and `update`'s record): in float32 a λ above ~3.4e38 would overflow to inf
        # and make λ · 0 = NaN in a bin with C_val = A_val
        p_true = log_p.detach().exp().to(self.val_accuracy.dtype)
        index = self.bin_index(p_true)
        accuracy = self.val_accuracy[index]
        if self.mode == "sample":
            gap = p_true - accuracy
        else:
            gap = self.val_confidence[index] - accuracy
        exponent = torch.where(self.val_count[index] > 0, self.lam * gap, torch.zeros_like(gap))
        gamma = torch.exp(exponent.clamp(max=_MAX_LOG_GAMMA))
        return signed_focal_terms(log_p, log_q, gamma)

    def update(self, val_logits: Any, val_labels: Any) -> BinUpdate:
        """Recompute the equal-mass validation bins and their mean confidence C_val and accuracy A_val.

        Args:
            val_logits: validation logits (N, K) or (N, K, d1, ...), a tensor or an array.
            val_labels: validation class indices (N,) or (N, d1, ...); positions labelled `ignore_index` are left out.

        Returns:
            The `BinUpdate` record, also appended to `history`: edges, gammas (per-bin γ_b in mode "bin", None in
            mode "sample"), val_confidence, val_accuracy and counts.
        """
        stats, _ = self._validation_statistics(val_logits, val_labels)
        self.bin_edges.copy_(torch.from_numpy(stats.edges))
        self.val_confidence.copy_(torch.from_numpy(stats.mean_confidence))
        self.val_accuracy.copy_(torch.from_numpy(stats.accuracy))
        self.val_count.copy_(torch.from_numpy(stats.counts.astype("int64")))
        gammas = None
        if self.mode == "bin":
            gammas = np.exp(np.minimum(self.lam * stats.gaps, _MAX_LOG_GAMMA))
        record = BinUpdate.from_statistics(stats, gammas)
        self.history.append(record)
        return record

    def extra_repr(self) -> str:
        return f"lam={self.lam:g}, n_bins={self.n_bins}, mode={self.mode!r}{self.input_repr()}"
