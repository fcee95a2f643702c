"""CALS, class-adaptive label smoothing (Liu, Rony, Galdran, Dolz & Ben Ayed, CVPR 2023, "Class Adaptive Network
Calibration"): cross-entropy plus an augmented-Lagrangian penalty on the logit distances, with one multiplier λ_j
and one penalty parameter ρ_j per class, learned from the validation set.

For each sample and class j the constraint is h_j = (max_k z_k − z_j − m) / m ≤ 0 (the logit distances from the
largest within a margin m, normalised by m). The loss of a batch is
    mean_i CE_i  +  mean_{i, j} P(h_ij; λ_j, ρ_j),
with the PHR penalty P(h; λ, ρ) = ((λ + ρh)² − λ²) / (2ρ) where λ + ρh ≥ 0, else −λ² / (2ρ) (its derivative
P'(h) = max(λ + ρh, 0)). `update(val_logits, val_labels)` sets every λ_j to the validation mean of
clip(P'(h_ij), λ_min, λ_max), clipped again to [λ_min, λ_max]; and every `rho_every`-th update multiplies ρ_j by
`rho_growth` where the class's mean validation constraint did not fall below `tau` times the previous update's
(clamped at 0), keeping ρ in [ρ_min, ρ_max]. Before the first update λ = λ_min and ρ = ρ_min for every class.

Everything follows the authors' code (github.com/by-liu/CALS @d72b31f: calibrate/lagrangian/penalty.py `phr`,
calibrate/lagrangian/aug_lagrangian_class.py `AugLagrangianClass`, driven by
calibrate/engine/distributed_lagrangian_trainer.py, which adds `penalty` to the CE loss and calls the λ update after
every validation epoch); defaults are their configs/lag/aug_lagrangian_class.yaml (λ_min 1e-6, λ_max 1e6, ρ 1, ρ
every 10 updates, growth 1.2, τ 0.9) with the margin their published commands use (lag.margin=10; the yaml's
default is 20). Their ρ_max (10) is the class's default. Differences: positions labelled `ignore_index` are left out
of an update (theirs count every position), and under torch.distributed the update is the mean over all ranks'
validation samples (theirs averages the per-rank means: the same for equal shards).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from adacal.errors import CheckpointError, InputError
from adacal.losses.base import (
    check_batch,
    check_non_negative,
    check_positive,
    check_positive_int,
    flatten_positions,
    format_value,
    ignored_mask,
    upcast,
)
from adacal.losses.records import MultiplierUpdate
from adacal.losses.registry import LOSSES
from adacal.losses.validation import DEFAULT_WARN_AFTER_STEPS, ValidationLoss

STATE_FORMAT_VERSION = 1
_STATE_BUFFERS = ("multipliers", "rho", "previous_constraints")


def cals_constraints(logits: torch.Tensor, margin: float) -> torch.Tensor:
    """The CALS constraints h_ij = (max_k z_ik − z_ij − m) / m of every sample and class (≤ 0 where satisfied).

    Args:
        logits: float tensor (N, K).
        margin: the margin m > 0.

    Returns:
        An (N, K) tensor; −1 at each sample's largest logit. Differentiable (through the maximum too).

    Example:
        >>> import torch
        >>> from adacal.losses.cals import cals_constraints
        >>> cals_constraints(torch.tensor([[12.0, 0.0, 7.0]]), 10.0).tolist()
        [[-1.0, 0.20000000298023224, -0.5]]
    """
    return (logits.amax(dim=-1, keepdim=True) - logits - margin) / margin


def phr_penalty(
    constraints: torch.Tensor, multipliers: torch.Tensor, rho: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The PHR augmented-Lagrangian penalty P(h; λ, ρ) and its derivative with respect to h, elementwise.

    Args:
        constraints: h, any shape (..., K).
        multipliers: λ ≥ 0, broadcastable to `constraints` (one per class: shape (K,)).
        rho: ρ > 0, broadcastable likewise.

    Returns:
        (P, P'): P = ((λ + ρh)² − λ²) / (2ρ) where λ + ρh ≥ 0 and −λ² / (2ρ) elsewhere; P' = max(λ + ρh, 0).

    Example:
        >>> import torch
        >>> from adacal.losses.cals import phr_penalty
        >>> value, slope = phr_penalty(torch.tensor([0.5, -2.0]), torch.tensor([1.0, 1.0]), torch.tensor([2.0, 2.0]))
        >>> value.tolist(), slope.tolist()  # ((1 + 1)² − 1) / 4 = 0.75; λ + ρh = −3 < 0: −1 / 4
        ([0.75, -0.25], [2.0, 0.0])
    """
    x = multipliers + rho * constraints
    active = x >= 0
    value = torch.where(active, (x.square() - multipliers.square()) / (2 * rho), -multipliers.square() / (2 * rho))
    return value, torch.where(active, x, torch.zeros_like(x))


@LOSSES.register("cals")
class CALSLoss(ValidationLoss):
    """CALS: cross-entropy plus a per-class augmented-Lagrangian (PHR) penalty on the logit margins, its class
    multipliers λ and penalty parameters ρ updated from the validation set (see the module docstring).

    Args:
        margin: the margin m > 0 of the logit distances (default 10, the authors' published runs).
        lambda_min: λ's initial value and lower bound, ≥ 0 (default 1e-6).
        lambda_max: λ's upper bound, ≥ lambda_min (default 1e6).
        rho_min: ρ's initial value and lower bound, > 0 (default 1).
        rho_max: ρ's upper bound, ≥ rho_min (default 10).
        rho_every: ρ is updated at every `rho_every`-th update (default 10); None: ρ stays rho_min.
        rho_growth: the factor by which ρ grows where the constraint did not improve, > 0 (default 1.2).
        tau: the improvement asked of a class's mean validation constraint between updates, ≥ 0 (default 0.9).
        ignore_index, reduction, warn_after_steps: as `ValidationLoss`.

    State (in `state_dict()`, for an exact resume): `multipliers`, `rho` and `previous_constraints` (K values each,
    empty before the first update), the update count and `history` (the `MultiplierUpdate` records).

    Example:
        >>> import torch
        >>> from adacal.losses import CALSLoss
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 3.0]]), torch.tensor([0, 1, 0])
        >>> loss = CALSLoss()
        >>> ce = torch.nn.functional.cross_entropy(logits, labels).item()
        >>> abs(loss(logits, labels).item() - ce) < 1e-9  # every distance within the margin, λ = 1e-6: CE
        True
        >>> record = loss.update(torch.tensor([[30.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 1]))
        >>> lam = record["multipliers"]  # class 1 is 30 below the maximum, beyond the margin: h = 2 there
        >>> round(lam[1], 4), lam[0] == loss.lambda_min, record["rho"]  # (2 + 0) / 2; ρ waits for update 10
        (1.0, True, [1.0, 1.0])
    """

    name = "cals"
    record_type = MultiplierUpdate
    updated_state = "multipliers"
    initial_option = "lambda_min"

    def __init__(
        self, *, margin: float = 10.0, lambda_min: float = 1e-6, lambda_max: float = 1e6, rho_min: float = 1.0,
        rho_max: float = 10.0, rho_every: int | None = 10, rho_growth: float = 1.2, tau: float = 0.9,
        ignore_index: int | None = -100, reduction: str = "mean",
        warn_after_steps: int | None = DEFAULT_WARN_AFTER_STEPS,
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction, warn_after_steps=warn_after_steps)
        self.margin = check_positive("margin", margin)
        self.lambda_min = check_non_negative("lambda_min", lambda_min)
        self.lambda_max = check_non_negative("lambda_max", lambda_max)
        if self.lambda_max < self.lambda_min:
            raise InputError(f"Expected lambda_max to be at least lambda_min ({self.lambda_min:g}), got "
                             f"{format_value(lambda_max)}.")
        self.rho_min = check_positive("rho_min", rho_min)
        self.rho_max = check_positive("rho_max", rho_max)
        if self.rho_max < self.rho_min:
            raise InputError(f"Expected rho_max to be at least rho_min ({self.rho_min:g}), got "
                             f"{format_value(rho_max)}.")
        self.rho_every = None if rho_every is None else check_positive_int("rho_every", rho_every)
        self.rho_growth = check_positive("rho_growth", rho_growth)
        self.tau = check_non_negative("tau", tau)
        for name in _STATE_BUFFERS:
            self.register_buffer(name, torch.zeros(0, dtype=torch.float64))
        self.history: list[MultiplierUpdate] = []
        self.update_count = 0

    # --- the loss --------------------------------------------------------------------------------------------

    def _state(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """λ and ρ in the logits' dtype: the learned (K,) values, or λ_min and ρ_min before the first update."""
        k = logits.shape[-1]
        if self.multipliers.numel() == 0:
            return logits.new_full((k,), self.lambda_min), logits.new_full((k,), self.rho_min)
        if self.multipliers.device != logits.device:
            raise InputError(f"Expected logits on the device of the CALSLoss state ({self.multipliers.device}; move "
                             f"the loss with .to(device)), got {logits.device}.")
        if self.multipliers.numel() != k:
            raise InputError(f"Expected logits with {self.multipliers.numel()} classes (the CALSLoss multipliers), "
                             f"got {k}.")
        return self.multipliers.to(logits.dtype), self.rho.to(logits.dtype)

    def _penalty(self, logits: torch.Tensor) -> torch.Tensor:
        multipliers, rho = self._state(logits)
        return phr_penalty(cals_constraints(logits, self.margin), multipliers, rho)[0]

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels) + self._penalty(logits).mean()

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, labels, reduction="none") + self._penalty(logits).mean(dim=1)

    # --- the update ------------------------------------------------------------------------------------------

    def update(self, val_logits: Any, val_labels: Any) -> MultiplierUpdate:
        """Set λ from the validation logits and, every `rho_every`-th update, ρ (see the module docstring).

        Args:
            val_logits: validation logits (N, K) or (N, K, d1, ...), a tensor or an array.
            val_labels: validation class indices (N,) or (N, d1, ...); positions labelled `ignore_index` are left out.

        Returns:
            The `MultiplierUpdate` record (λ and ρ after the update, the mean constraint per class), also appended to
            `history`.
        """
        self._steps_since_update = 0
        logits = _validation_logits(val_logits, val_labels, self.ignore_index)
        k = logits.shape[1]
        if self.multipliers.numel() not in (0, k):
            raise InputError(f"Expected val_logits with {self.multipliers.numel()} classes (the CALSLoss multipliers), "
                             f"got {k}.")
        with torch.no_grad():
            z = logits.detach().to(torch.float64)
            device = self.multipliers.device
            if z.device != device:
                z = z.to(device)
            constraints = cals_constraints(z, self.margin)
            multipliers, rho = self._state(z)
            _, slope = phr_penalty(constraints, multipliers, rho)
            slope = slope.clamp(min=self.lambda_min, max=self.lambda_max)
            multipliers = slope.mean(dim=0).clamp(min=self.lambda_min, max=self.lambda_max)
            current = constraints.mean(dim=0)
            self.update_count += 1
            previous = self.previous_constraints
            if self.rho_every is not None:
                if self.update_count % self.rho_every == 0 and previous.numel():
                    grown = torch.where(current > previous.clamp(min=0) * self.tau, self.rho_growth * rho, rho)
                    rho = grown.clamp(min=self.rho_min, max=self.rho_max)
                previous = current
            self.multipliers, self.rho, self.previous_constraints = multipliers, rho.clone(), previous.clone()
        host = torch.cat([multipliers, rho, current]).cpu().numpy()  # the one device-to-host copy
        record = MultiplierUpdate(multipliers=host[:k], rho=host[k : 2 * k], val_constraints=host[2 * k :])
        self.history.append(record)
        return record

    # --- state -----------------------------------------------------------------------------------------------

    def get_extra_state(self) -> dict[str, Any]:
        return {"format_version": STATE_FORMAT_VERSION, "update_count": self.update_count,
                "history": [record.to_dict() for record in self.history]}

    def set_extra_state(self, state: Any) -> None:
        history, count = _checked_extra_state(state)
        self.history, self.update_count = history, count

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # Everything is checked before anything is copied, so a refused state leaves the loss as it was.
        values = {}
        for name in _STATE_BUFFERS:
            value = state_dict.get(prefix + name)
            if isinstance(value, torch.Tensor):
                values[name] = _checked_buffer(name, value)
        lengths = {name: v.size for name, v in values.items() if name != "previous_constraints" or v.size}
        if len(set(lengths.values())) > 1:
            raise CheckpointError(f"Expected the CALSLoss multipliers, rho and previous_constraints to hold one value "
                                  f"per class, got {lengths}.")
        if "multipliers" in values and (values["multipliers"] < 0).any():
            raise CheckpointError(
                f"Expected CALSLoss multipliers to be at least 0, got {values['multipliers'].tolist()}."
            )
        if "rho" in values and (values["rho"] <= 0).any():
            raise CheckpointError(f"Expected CALSLoss rho to be greater than 0, got {values['rho'].tolist()}.")
        extra = state_dict.get(prefix + "_extra_state")
        if extra is not None:
            _checked_extra_state(extra)
        for name, value in values.items():  # this loss's state takes the checkpoint's number of classes
            own = self._buffers[name]
            self._buffers[name] = torch.zeros(value.shape, dtype=own.dtype, device=own.device)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def extra_repr(self) -> str:
        rho_every = "None" if self.rho_every is None else str(self.rho_every)
        return (f"margin={self.margin:g}, lambda_min={self.lambda_min:g}, lambda_max={self.lambda_max:g}, "
                f"rho_min={self.rho_min:g}, rho_max={self.rho_max:g}, rho_every={rho_every}, "
                f"rho_growth={self.rho_growth:g}, tau={self.tau:g}{self.input_repr()}")


def _validation_logits(val_logits: Any, val_labels: Any, ignore_index: int | None) -> torch.Tensor:
    """The (N, K) validation logits of the positions kept (not labelled `ignore_index`), checked: labels in range,
    values finite."""
    tensors = []
    for name, values in (("val_logits", val_logits), ("val_labels", val_labels)):
        if not isinstance(values, torch.Tensor):
            try:
                values = torch.as_tensor(np.ascontiguousarray(values))
            except (TypeError, ValueError, RuntimeError):
                raise InputError(f"Expected {name} to be a tensor or an array of numbers, got "
                                 f"{type(values).__name__}.") from None
        if values.device.type == "meta":
            raise InputError(f"Expected {name} to hold values, got a tensor on torch's meta device (no data).")
        tensors.append(values)
    logits, labels = tensors
    labels = labels.to(logits.device)
    logits, labels, _ = flatten_positions(logits, labels)
    if not labels.dtype.is_floating_point and labels.dtype != torch.bool and labels.ndim == 1:
        keep = ignored_mask(labels, ignore_index)
        if keep is not None and logits.ndim == 2 and logits.shape[0] == keep.shape[0]:
            logits, labels = logits[keep], labels[keep]
    check_batch(logits, labels, logits_name="val_logits", labels_name="val_labels")
    logits = upcast(logits)
    if not bool(torch.isfinite(logits).all()):
        raise InputError("Expected val_logits to be finite, got NaN or infinite values.")
    return logits


def _checked_buffer(name: str, value: torch.Tensor) -> np.ndarray:
    if value.ndim != 1 or value.dtype.is_complex or value.device.type == "meta":
        raise CheckpointError(f"Expected CALSLoss {name} to be one real value per class, got shape "
                              f"{tuple(value.shape)} of {value.dtype}.")
    values = value.detach().cpu().to(torch.float64).numpy()
    if not np.isfinite(values).all():
        raise CheckpointError(f"Expected CALSLoss {name} to be finite, got {values.tolist()}.")
    return values


def _checked_extra_state(state: Any) -> tuple[list[MultiplierUpdate], int]:
    count = state.get("update_count") if isinstance(state, dict) else None
    if (
        not isinstance(state, dict)
        or state.get("format_version") != STATE_FORMAT_VERSION
        or not isinstance(state.get("history"), list)
        or isinstance(count, bool) or not isinstance(count, int) or count < 0
    ):
        raise CheckpointError(
            f"Expected CALSLoss extra state with format_version {STATE_FORMAT_VERSION}, an update_count and a list "
            "of history records, got something else."
        )
    try:
        history = [MultiplierUpdate.from_dict(record) for record in state["history"]]
    except (KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(
            f"Expected every CALSLoss history record to hold multipliers, rho and val_constraints, got one without "
            f"{exc}."
        ) from None
    return history, count
