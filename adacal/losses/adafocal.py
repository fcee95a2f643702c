"""AdaFocal (Ghosh, Schaaf & Gormley, NeurIPS 2022), following Algorithm 1 of the paper.

Each training sample n with true-class probability p_n falls in validation bin b (placed by p_n with the
validation-bin edges) and costs
    −(1 − p_n)^γ_b log p_n    if γ_b ≥ 0   (focal),
    −(1 + p_n)^|γ_b| log p_n  if γ_b < 0   (inverse focal).
`update(val_logits, val_labels)` recomputes equal-mass validation bins of the top-1 confidences, the calibration
error E_i = C_val,i − A_val,i of each bin, and moves every γ_i (see `adafocal_gamma_update`). The γ of bin i stays
with index i when the edges move. Start: M equal-width bins and γ = gamma_init (1 in the paper) everywhere.

When to update is up to the training loop: `update` can be called at any time, e.g. once per epoch (the paper's
default) or every n mini-batches. Run the validation forward pass with the model in eval mode and put it back in
train mode afterwards; the loss module's own `training` flag decides whether `forward` accumulates the per-bin
training confidences that `pop_train_statistics` returns (so call `loss.eval()` when computing a validation loss):

    for epoch in range(epochs):
        loss_fn.train()
        for step, (inputs, labels) in enumerate(train_loader):
            loss = loss_fn(model(inputs), labels)
            ...
            if every_n_batches and (step + 1) % every_n_batches == 0:
                loss_fn.update(*validation_logits(model))   # model.eval() inside, model.train() after
        record = loss_fn.update(*validation_logits(model))  # appended to loss_fn.history as well
        train_stats = loss_fn.pop_train_statistics()

Speed on a GPU. A training step there is bounded by how many kernels it launches, and the composed formula (the
one the CPU computes, with `true_class_log_probs` and `signed_focal_terms`) launches about 65 small ones a step where
cross-entropy launches 4. On CUDA the loss is computed by `_FusedAdaFocal` instead: the same values (to rounding),
with its gradient written out by hand, in about 30 kernels. The CPU keeps the composed formula, so a seed's CPU
results stay bit for bit what they were; `fused_devices` says which device types take the fused path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import CheckpointError, InputError
from adacal.losses.base import check_between, check_number, check_positive, format_value
from adacal.losses.binned import (
    DEFAULT_WARN_AFTER_STEPS,
    ValidationBinnedLoss,
    accepts_deprecated_options,
    check_state_device,
)
from adacal.losses.records import BinUpdate, TrainBinStatistics
from adacal.losses.focal import signed_focal_terms, true_class_log_probs
from adacal.losses.registry import LOSSES

# exp() arguments are clipped here so that a huge lam·gap cannot overflow to inf (0 · inf would be NaN); the clipped
# products are far outside [gamma_min, gamma_max] and are clipped to those bounds anyway.
_MAX_EXPONENT = 700.0
# 1 − p below this is treated as this in the fused gradient's p·log p / (1 − p), which is then 0 (log p = 0 there).
_TINY = 1e-30


class _FusedAdaFocal(torch.autograd.Function):
    """The mean AdaFocal loss of a batch with its gradient written out, in few kernels (the CUDA path).

    With p the true-class probability, q = 1 − p, a = max(γ_b, 0), b = max(−γ_b, 0) for the sample's bin b, the
    weight is w = q^a (1 + p)^b (focal for γ ≥ 0, inverse focal for γ < 0) and the loss ℓ = −w log p. Its gradient
    with respect to the logits is G (onehot − softmax), where
        G = p dℓ/dp = w (a p log p / q − b p log p / (1 + p) − 1),
    finite everywhere: as q → 0, log p / q → −1 and w → 0 when a > 0, and a = 0 multiplies the first term away.
    q is computed as −expm1(log p), exact as p → 1; log p comes from log_softmax.

    Inputs: logits (N, K) float32, labels (N,) int64, the inner bin edges (float64) and the (M, 2) table of (a, b) per
    bin. Outputs: the mean loss, and (not differentiable) each sample's p as float64 and its bin."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, labels: torch.Tensor, inner_edges: torch.Tensor,
                table: torch.Tensor, minus_ones: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ctx.set_materialize_grads(False)  # no zero gradients made for p_true and bins
        log_softmax = torch.log_softmax(logits, dim=1)
        index_2d = labels.unsqueeze(1)
        log_p = log_softmax.gather(1, index_2d).squeeze(1)
        p = log_p.exp()
        p_true = p.to(inner_edges.dtype)
        bins = torch.bucketize(p_true, inner_edges, right=False)
        coefficients = table[bins]
        a, b = coefficients[:, 0], coefficients[:, 1]
        q = torch.expm1(log_p).neg_()
        weight = torch.addcmul(torch.xlogy(a, q), b, torch.log1p(p)).exp_()
        loss = torch.dot(weight, log_p).mul_(-1.0 / logits.shape[0])
        ctx.save_for_backward(log_softmax, index_2d, log_p, p, q, weight, a, b, minus_ones)
        ctx.mark_non_differentiable(p_true, bins)
        return loss, p_true, bins

    @staticmethod
    def backward(ctx: Any, grad_loss: torch.Tensor | None, *_: Any) -> tuple[torch.Tensor | None, ...]:
        if grad_loss is None:
            return None, None, None, None, None
        log_softmax, index_2d, log_p, p, q, weight, a, b, minus_ones = ctx.saved_tensors
        p_log_p = p * log_p
        bracket = (a / q.clamp_min(_TINY) - b / (p + 1.0)).mul_(p_log_p).sub_(1.0)
        # dℓ/dz = G (onehot − softmax) / N, written as (softmax − onehot) · (−G / N)
        scale = (weight * bracket).mul_(grad_loss * (-1.0 / log_softmax.shape[0]))
        grad = log_softmax.exp()
        grad.scatter_add_(1, index_2d, minus_ones)
        return grad.mul_(scale.unsqueeze(1)), None, None, None, None


def adafocal_gamma_update(
    gammas: Any,
    gaps: Any,
    counts: Any,
    *,
    lam: float = 1.0,
    gamma_min: float = -2.0,
    gamma_max: float = 20.0,
    switch_threshold: float = 0.2,
) -> np.ndarray:
    """One AdaFocal γ update (Algorithm 1) for every bin, from its calibration error E_i = C_val,i − A_val,i.

    γ_i ≥ 0: γ_i ← γ_i · exp(λ E_i), and if |γ_i| < S_th then γ_i ← −S_th (switch to inverse focal).
    γ_i < 0: γ_i ← γ_i · exp(−λ E_i), and if |γ_i| < S_th then γ_i ← +S_th (switch back to focal).
    Then γ_i is clipped to [γ_min, γ_max]. A bin with no validation samples keeps its γ.

    Args:
        gammas: the current γ per bin (M,).
        gaps: E_i per bin (M,).
        counts: validation samples per bin (M,).
        lam: λ, the step (default 1.0).
        gamma_min: the smallest γ (default −2.0).
        gamma_max: the largest γ (default 20.0).
        switch_threshold: S_th (default 0.2).

    Returns:
        The new γ per bin, a float64 array (M,).

    Example:
        >>> from adacal.losses import adafocal_gamma_update
        >>> new = adafocal_gamma_update([1.0, 1.0, 0.3], [0.1, 0.5, -2.0], [5, 0, 5])
        >>> new.round(4).tolist()  # 1 · e^0.1; an empty bin keeps its γ; 0.3 · e^−2 < 0.2 switches to −0.2
        [1.1052, 1.0, -0.2]
    """
    # Switch-then-clip, as in the reference code. With γ_max ≥ S_th and γ_min ≤ −S_th (which AdaFocalLoss requires)
    # this equals Algorithm 1's clip-then-switch exactly. A γ of 0 (gamma_init=0) stays 0 under the product, so its
    # first update switches it to −S_th whatever E_i; a bin still over-confident then flips to +S_th at the next
    # update.
    gammas = np.asarray(gammas, dtype=np.float64)
    gaps = np.asarray(gaps, dtype=np.float64)
    counts = np.asarray(counts)
    if gammas.ndim != 1 or gaps.shape != gammas.shape or counts.shape != gammas.shape:
        raise InputError(
            f"Expected gammas, gaps and counts to be 1-D with one value per bin, "
            f"got shapes {gammas.shape}, {gaps.shape} and {counts.shape}."
        )
    if not (np.isfinite(gammas).all() and np.isfinite(gaps).all()):
        raise InputError("Expected gammas and gaps to be finite, got NaN or infinite values.")
    focal = gammas >= 0
    exponent = np.clip(np.where(focal, lam * gaps, -lam * gaps), -_MAX_EXPONENT, _MAX_EXPONENT)
    updated = gammas * np.exp(exponent)
    switched = np.where(focal, -switch_threshold, switch_threshold)
    updated = np.where(np.abs(updated) < switch_threshold, switched, updated)
    updated = np.clip(updated, gamma_min, gamma_max)
    return np.where(counts > 0, updated, gammas)


@LOSSES.register("adafocal")
@accepts_deprecated_options
class AdaFocalLoss(ValidationBinnedLoss):
    """AdaFocal: focal loss with one γ per validation bin, moved by each `update` (negative γ: inverse focal).

    State (all in `state_dict()`): `bin_edges` (n_bins + 1), `gammas` (n_bins), the training-confidence
    accumulators, and `history` (the update records, in the extra state).

    Args:
        n_bins: the number of validation bins M (default 15).
        lam: λ > 0, the step of the γ update (default 1.0).
        gamma_init: the starting γ of every bin (default 1.0, as the paper).
        gamma_max: the largest γ (default 20.0; at least switch_threshold).
        gamma_min: the smallest γ (default −2.0; at most −switch_threshold).
        switch_threshold: S_th > 0; a |γ| below it switches between focal and inverse focal (default 0.2).
        ignore_index, reduction, warn_after_steps: as `ValidationBinnedLoss` (torch's CrossEntropyLoss inputs:
            (N, K, d1, ...) logits, -100 labels left out; a warning after 2000 training steps without `update`).

    Example:
        >>> import torch
        >>> from adacal.losses import AdaFocalLoss, FocalLoss
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 1, 0])
        >>> loss = AdaFocalLoss(n_bins=2)
        >>> round(loss(logits, labels).item(), 4) == round(FocalLoss(gamma=1.0)(logits, labels).item(), 4)  # γ = 1
        True
        >>> record = loss.update(logits, labels)  # usually the validation set, e.g. once per epoch
        >>> len(record["gammas"]), len(loss.history)
        (2, 1)
    """

    name = "adafocal"
    # Device types whose forward takes the fused path (`_FusedAdaFocal`); elsewhere the composed formula.
    fused_devices: tuple[str, ...] = ("cuda",)

    def __init__(
        self,
        *,
        n_bins: int = DEFAULT_N_BINS,
        lam: float = 1.0,
        gamma_init: float = 1.0,
        gamma_max: float = 20.0,
        gamma_min: float = -2.0,
        switch_threshold: float = 0.2,
        ignore_index: int | None = -100,
        reduction: str = "mean",
        warn_after_steps: int | None = DEFAULT_WARN_AFTER_STEPS,
    ) -> None:
        super().__init__(
            n_bins=n_bins, ignore_index=ignore_index, reduction=reduction, warn_after_steps=warn_after_steps
        )
        self.lam = check_positive("lam", lam)
        self.switch_threshold = check_positive("switch_threshold", switch_threshold)
        self.gamma_max = check_number("gamma_max", gamma_max)
        self.gamma_min = check_number("gamma_min", gamma_min)
        if self.gamma_max <= self.gamma_min:
            raise InputError(
                f"Expected gamma_max to be greater than gamma_min, "
                f"got gamma_max={format_value(gamma_max)} and gamma_min={format_value(gamma_min)}."
            )
        if self.gamma_max < self.switch_threshold:
            raise InputError(
                f"Expected gamma_max to be at least switch_threshold, "
                f"got gamma_max={format_value(gamma_max)} and switch_threshold={format_value(switch_threshold)}."
            )
        if self.gamma_min > -self.switch_threshold:
            raise InputError(
                f"Expected gamma_min to be at most -switch_threshold, "
                f"got gamma_min={format_value(gamma_min)} and switch_threshold={format_value(switch_threshold)}."
            )
        self.gamma_init = check_between("gamma_init", gamma_init, self.gamma_min, self.gamma_max)
        m = self.n_bins
        self.register_buffer("gammas", torch.full((m,), self.gamma_init, dtype=torch.float64))
        self.register_buffer("train_confidence_sum", torch.zeros(m, dtype=torch.float64))
        self.register_buffer("train_count", torch.zeros(m, dtype=torch.int64))
        self._table: torch.Tensor | None = None
        self._table_source: torch.Tensor | None = None  # the γ tensor the table was built from (a move replaces it)
        self._table_key: tuple[Any, ...] | None = None
        self._ones: torch.Tensor | None = None  # per batch size and device, for the fused path's counts
        self._minus_ones: dict[torch.dtype, torch.Tensor] = {}

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if logits.device.type in self.fused_devices:
            check_state_device(self, logits)
            return self._fused_forward(logits, labels)
        return self._terms(logits, labels).mean()

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Per-sample losses by the composed formula, each sample binned by its own p (training: accumulated)."""
        check_state_device(self, logits)
        log_p, log_q = true_class_log_probs(logits, labels)
        p_true = log_p.detach().exp().to(self.bin_edges.dtype)
        index = self.bin_index(p_true)
        if self.training:
            self.train_confidence_sum.index_add_(0, index, p_true)
            self.train_count.index_add_(0, index, torch.ones_like(index))
        return signed_focal_terms(log_p, log_q, self.gammas[index])

    def _fused_forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The mean loss by `_FusedAdaFocal`, accumulating the training statistics like `_forward`."""
        n = logits.shape[0]
        if self._ones is None or self._ones.shape[0] != n or self._ones.device != logits.device:
            self._ones = torch.ones(n, dtype=torch.int64, device=logits.device)
            self._minus_ones = {}
        minus_ones = self._minus_ones.get(logits.dtype)
        if minus_ones is None:
            minus_ones = self._minus_ones[logits.dtype] = torch.full((n, 1), -1.0, dtype=logits.dtype,
                                                                    device=logits.device)
        loss, p_true, index = _FusedAdaFocal.apply(logits, labels, self.bin_edges[1:-1],
                                                   self._coefficients(logits.dtype), minus_ones)
        if self.training:
            self.train_confidence_sum.index_add_(0, index, p_true)
            self.train_count.index_add_(0, index, self._ones)
        return loss

    def _coefficients(self, dtype: torch.dtype) -> torch.Tensor:
        """(a, b) = (max(γ, 0), max(−γ, 0)) per bin as an (M, 2) table of `dtype` on the γ's device, rebuilt only when
        γ changed (an update, a loaded state, a move to another device)."""
        gammas = self.gammas
        key = (gammas._version, dtype)
        if self._table is None or self._table_source is not gammas or self._table_key != key:
            values = gammas.detach().to(dtype)
            self._table = torch.stack([values.clamp(min=0.0), values.neg().clamp(min=0.0)], dim=1)
            self._table_source, self._table_key = gammas, key
        return self._table

    def update(self, val_logits: Any, val_labels: Any) -> BinUpdate:
        """Recompute the equal-mass validation bins and update every γ (`adafocal_gamma_update`).

        Args:
            val_logits: validation logits (N, K) or (N, K, d1, ...), a tensor or an array.
            val_labels: validation class indices (N,) or (N, d1, ...); positions labelled `ignore_index` are left out.

        Returns:
            The `BinUpdate` record, also appended to `history`: edges, gammas after the update, val_confidence,
            val_accuracy and counts.
        """
        stats, old_gammas = self._validation_statistics(val_logits, val_labels, carry=self.gammas)
        new_gammas = adafocal_gamma_update(
            old_gammas,
            stats.gaps,
            stats.counts,
            lam=self.lam,
            gamma_min=self.gamma_min,
            gamma_max=self.gamma_max,
            switch_threshold=self.switch_threshold,
        )
        self.bin_edges.copy_(torch.from_numpy(stats.edges))
        self.gammas.copy_(torch.from_numpy(new_gammas))
        record = BinUpdate.from_statistics(stats, new_gammas)
        self.history.append(record)
        return record

    def pop_train_statistics(self) -> TrainBinStatistics:
        """Mean true-class probability (0 for an empty bin) and count of the training samples seen by `forward` in
        training mode per validation bin since the last call (the paper's C_train), then reset the accumulators."""
        m = self.n_bins
        host = torch.cat([self.train_confidence_sum, self.train_count.to(torch.float64)]).cpu().numpy()
        self.train_confidence_sum.zero_()
        self.train_count.zero_()
        return TrainBinStatistics.from_sums(host[:m], host[m:])

    def _check_state_buffer(self, name: str, values: np.ndarray) -> None:
        super()._check_state_buffer(name, values)
        if name == "gammas" and ((values < self.gamma_min).any() or (values > self.gamma_max).any()):
            raise CheckpointError(
                f"Expected AdaFocalLoss gammas between gamma_min={self.gamma_min:g} and gamma_max={self.gamma_max:g}, "
                f"got {values.tolist()}."
            )

    def extra_repr(self) -> str:
        return (
            f"n_bins={self.n_bins}, lam={self.lam:g}, gamma_init={self.gamma_init:g}, "
            f"gamma_max={self.gamma_max:g}, gamma_min={self.gamma_min:g}, switch_threshold={self.switch_threshold:g}"
            f"{self.input_repr()}"
        )
