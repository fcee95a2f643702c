"""What every adacal loss shares: input checks, float32 maths under autocast, and one-sentence option checks."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import nn

from adacal.checks import check_positive_int as _positive_int
from adacal.errors import InputError

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_AUTOCAST_DEVICES = ("cpu", "cuda")
_WIDE_UNSIGNED = tuple(getattr(torch, name) for name in ("uint16", "uint32", "uint64") if hasattr(torch, name))


class CalibrationLoss(nn.Module):
    """Base class of every adacal loss: `forward(logits, labels)` checks the batch, upcasts float16/bfloat16 logits
    to float32 with autocast off, and returns the scalar mean loss computed by `_forward`, which subclasses implement.

    Losses that learn from the validation set set `needs_validation = True` and implement
    `update(val_logits, val_labels) -> record`.

    Args:
        none of its own: subclasses take keyword-only options, checked in `__init__`.

    Example:
        >>> import torch
        >>> from adacal.losses import CalibrationLoss
        >>> class MeanLogit(CalibrationLoss):
        ...     def _forward(self, logits, labels):
        ...         return logits.mean()
        >>> MeanLogit()(torch.tensor([[1.0, 3.0]]), torch.tensor([0])).item()
        2.0
    """

    name: str = ""
    needs_validation: bool = False

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The mean loss of a batch.

        Args:
            logits: float tensor (N, K), N ≥ 1, K ≥ 2; float16/bfloat16 are computed in float32.
            labels: integer class indices (N,) in [0, K), on the device of `logits`.

        Returns:
            A scalar tensor (float32 even under autocast), differentiable with respect to `logits`.
        """
        labels = check_batch(logits, labels)
        device_type = logits.device.type
        if device_type in _AUTOCAST_DEVICES and torch.is_autocast_enabled(device_type):
            context = torch.autocast(device_type=device_type, enabled=False)
        else:
            context = contextlib.nullcontext()
        with context:
            return self._forward(upcast(logits), labels)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """float16/bfloat16 logits become float32 (float32 and float64 are kept as they are)."""
    return logits.float() if logits.dtype in _LOW_PRECISION else logits


def check_batch(logits: Any, labels: Any, *, logits_name: str = "logits", labels_name: str = "labels") -> torch.Tensor:
    """Check a (N, K) logits / (N,) labels pair; returns int64 labels. On the CPU the labels' range is checked too
    (every loss refuses labels outside [0, K), -100 included, which `F.cross_entropy` alone would skip); on an
    accelerator the data is not touched, as that would cost a device sync per batch (torch's kernels assert there)."""
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise InputError(
            f"Expected {logits_name} and {labels_name} to be torch tensors, "
            f"got {type(logits).__name__} and {type(labels).__name__}."
        )
    if logits.ndim != 2 or logits.shape[0] < 1 or logits.shape[1] < 2:
        raise InputError(
            f"Expected {logits_name} of shape (N, K) with N >= 1 and K >= 2, got shape {tuple(logits.shape)}."
        )
    if not logits.dtype.is_floating_point:
        raise InputError(f"Expected {logits_name} to be a floating-point tensor, got {logits.dtype}.")
    if labels.ndim != 1 or labels.shape[0] != logits.shape[0]:
        raise InputError(
            f"Expected {labels_name} of shape ({logits.shape[0]},) to match {logits_name}, "
            f"got shape {tuple(labels.shape)}."
        )
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise InputError(f"Expected {labels_name} to be an integer tensor of class indices, got {labels.dtype}.")
    if labels.device != logits.device:
        raise InputError(
            f"Expected {labels_name} on the same device as {logits_name}, got {labels.device} and {logits.device}."
        )
    if labels.device.type == "cpu" and labels.numel():
        if labels.dtype in _WIDE_UNSIGNED:
            # torch has no min/max for uint16/32/64 on the CPU; numpy checks them without wrapping around int64
            from adacal.arrays import check_labels

            return torch.from_numpy(check_labels(labels.numpy(), num_classes=int(logits.shape[1]), name=labels_name))
        lowest, highest = int(labels.min()), int(labels.max())
        if lowest < 0 or highest >= logits.shape[1]:
            from adacal.arrays import check_labels

            check_labels(labels, num_classes=int(logits.shape[1]), name=labels_name)  # raises, with a hint
    return labels if labels.dtype == torch.int64 else labels.long()


# ----------------------------------------------------------------------------------------------------------------
# Option checks (called from __init__): one sentence naming the option, what was expected and what was found.


def format_value(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"Expected {name} to be a number, got {format_value(value)}.")
    if not math.isfinite(float(value)):
        raise InputError(f"Expected {name} to be a finite number, got {format_value(value)}.")
    return float(value)


def check_positive(name: str, value: Any) -> float:
    number = check_number(name, value)
    if number <= 0:
        raise InputError(f"Expected {name} to be greater than 0, got {format_value(value)}.")
    return number


def check_non_negative(name: str, value: Any) -> float:
    number = check_number(name, value)
    if number < 0:
        raise InputError(f"Expected {name} to be at least 0, got {format_value(value)}.")
    return number


def check_between(name: str, value: Any, low: float, high: float) -> float:
    number = check_number(name, value)
    if not low <= number <= high:
        raise InputError(f"Expected {name} to be between {low:g} and {high:g}, got {format_value(value)}.")
    return number


def check_positive_int(name: str, value: Any) -> int:
    return _positive_int(value, name)


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise InputError(f"Expected {name} to be one of {listed}, got {format_value(value)}.")
    return value
