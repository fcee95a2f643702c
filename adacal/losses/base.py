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


REDUCTIONS = ("mean", "sum", "none")
# Options about the input (as `torch.nn.CrossEntropyLoss` takes them) rather than hyper-parameters of a method: the
# trainer's config records and checks only the hyper-parameters (`adacal.training.config`).
INPUT_OPTIONS = ("ignore_index", "reduction", "warn_after_steps")


class CalibrationLoss(nn.Module):
    """Base class of every adacal loss, a drop-in for `torch.nn.CrossEntropyLoss`'s inputs: `forward(logits, labels)`
    checks the batch, reads (N, K, d1, ...) logits with (N, d1, ...) labels as N·d1·... samples, leaves out the
    positions labelled `ignore_index`, upcasts float16/bfloat16 logits to float32 with autocast off, and reduces.

    Subclasses implement `_forward(logits, labels)`, the mean over a (N, K) batch, and `_terms(logits, labels)`, the
    (N,) per-sample losses (for reduction "sum" and "none"; a loss without per-sample terms refuses "none").
    Losses that learn from the validation set set `needs_validation = True` and implement
    `update(val_logits, val_labels) -> record`.

    Args:
        ignore_index: the label of positions that count for nothing, in the loss and in the mean's denominator
            (default -100, as torch); None: every label must be a class (no per-batch check on an accelerator).
            When every position is ignored, "mean" is NaN with a zero gradient (as torch), "sum" is 0.
        reduction: "mean" (default) over the positions kept, "sum", or "none" (one loss per position, shaped like
            `labels`, 0 where ignored).

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
    reductions: tuple[str, ...] = REDUCTIONS

    def __init__(self, *, ignore_index: int | None = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.ignore_index = check_ignore_index(ignore_index)
        self.reduction = check_reduction(reduction, type(self).__name__, self.reductions)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The loss of a batch, reduced by `reduction`.

        Args:
            logits: float tensor (N, K) or (N, K, d1, ...), N ≥ 1, K ≥ 2; float16/bfloat16 are computed in float32.
            labels: integer class indices (N,) or (N, d1, ...) in [0, K) or `ignore_index`, on the device of `logits`.

        Returns:
            A scalar tensor (float32 even under autocast), or with reduction "none" one loss per position shaped like
            `labels`; differentiable with respect to `logits`.
        """
        logits, labels, shape = flatten_positions(logits, labels)
        labels = check_batch(logits, labels, ignore_index=self.ignore_index)
        device_type = logits.device.type
        if device_type in _AUTOCAST_DEVICES and torch.is_autocast_enabled(device_type):
            context = torch.autocast(device_type=device_type, enabled=False)
        else:
            context = contextlib.nullcontext()
        with context:
            logits = upcast(logits)
            keep = ignored_mask(labels, self.ignore_index)
            if self.reduction == "mean" and keep is None:
                return self._forward(logits, labels)  # the plain (N, K) batch: the loss's own code, bit for bit
            return self._reduce(logits, labels, keep, shape)

    def _reduce(
        self, logits: torch.Tensor, labels: torch.Tensor, keep: torch.Tensor | None, shape: tuple[int, ...]
    ) -> torch.Tensor:
        """`reduction` over the positions kept (`keep`, None for all), with the existing 2-D code on those rows."""
        if keep is not None:
            kept_logits, kept_labels = logits[keep], labels[keep]
        else:
            kept_logits, kept_labels = logits, labels
        n = kept_labels.shape[0]
        if self.reduction == "none":
            values = logits.new_zeros(labels.shape[0])
            if n:
                terms = self._terms(kept_logits, kept_labels)
                values = values.masked_scatter(keep, terms) if keep is not None else terms
            return values.reshape(shape)
        if n == 0:  # every position ignored: torch's mean is NaN (0 / 0), its sum 0; the gradient is 0 either way
            empty = logits[:0].sum()
            return empty + float("nan") if self.reduction == "mean" else empty
        if self.reduction == "mean":
            return self._forward(kept_logits, kept_labels)
        return self._sum(kept_logits, kept_labels)

    def _forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._terms(logits, labels).mean()

    def _terms(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _sum(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._terms(logits, labels).sum()

    def input_repr(self) -> str:
        """", ignore_index=..., reduction=..." for the options that differ from torch's defaults (for `extra_repr`)."""
        parts = []
        if self.ignore_index != -100:
            parts.append(f"ignore_index={self.ignore_index}")
        if self.reduction != "mean":
            parts.append(f"reduction={self.reduction!r}")
        return "".join(f", {part}" for part in parts)


def check_ignore_index(value: Any) -> int | None:
    """`ignore_index` as an int (or None for no ignored label); anything else is a one-line InputError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(
            f"Expected ignore_index to be an integer label (or None), got {format_value(value)}: "
            "pass ignore_index=-100 as torch's CrossEntropyLoss does."
        )
    return int(value)


def check_reduction(value: Any, loss: str, choices: tuple[str, ...] = REDUCTIONS) -> str:
    """`reduction` as one of `choices`; a reduction the loss cannot compute is refused in one line."""
    if value in REDUCTIONS and value not in choices:
        listed = " or ".join(repr(c) for c in choices)
        raise InputError(
            f"Expected reduction to be {listed} for {loss}, got {value!r}: its batch term is one value per batch, "
            "not one per sample."
        )
    return check_choice("reduction", value, choices)


def flatten_positions(logits: Any, labels: Any) -> tuple[Any, Any, tuple[int, ...]]:
    """(N, K, d1, ...) logits and (N, d1, ...) labels as (N·d1·..., K) and (N·d1·...,), each position a sample, as
    `torch.nn.functional.cross_entropy` reads them; also returns the labels' shape (for reduction "none"). A (N, K)
    batch, and anything that is not a pair of tensors (for `check_batch` to refuse), pass unchanged."""
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor) or logits.ndim <= 2:
        return logits, labels, tuple(labels.shape) if isinstance(labels, torch.Tensor) else ()
    expected = (logits.shape[0], *logits.shape[2:])
    if tuple(labels.shape) != expected:
        raise InputError(
            f"Expected labels of shape {expected} (logits {tuple(logits.shape)} without the class dimension 1), "
            f"got shape {tuple(labels.shape)}."
        )
    k = logits.shape[1]
    return logits.movedim(1, -1).reshape(-1, k), labels.reshape(-1), expected


def ignored_mask(labels: torch.Tensor, ignore_index: int | None) -> torch.Tensor | None:
    """The positions to keep (labels != ignore_index), or None when none is ignored (one device sync off the CPU)."""
    if ignore_index is None or labels.device.type == "meta":  # meta tensors hold no values to look at
        return None
    keep = labels != ignore_index
    return None if bool(keep.all()) else keep


def upcast(logits: torch.Tensor) -> torch.Tensor:
    """float16/bfloat16 logits become float32 (float32 and float64 are kept as they are)."""
    return logits.float() if logits.dtype in _LOW_PRECISION else logits


def check_batch(
    logits: Any, labels: Any, *, logits_name: str = "logits", labels_name: str = "labels",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """Check a (N, K) logits / (N,) labels pair; returns int64 labels. On the CPU the labels' range is checked too
    (labels outside [0, K) are refused, except `ignore_index` when given); on an accelerator the data is not touched,
    as that would cost a device sync per batch (torch's kernels assert there)."""
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

            if ignore_index is not None:
                labels_kept = labels[labels != ignore_index]
                if labels_kept.numel():
                    check_labels(labels_kept, num_classes=int(logits.shape[1]), name=labels_name)
            else:
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
