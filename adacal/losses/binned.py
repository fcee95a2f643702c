"""Shared state of the losses that learn from validation bins (CalFocal, AdaFocal).

Bins follow Algorithm 1 of the AdaFocal paper: they start as M equal-width bins on [0, 1]; each `update` recomputes
them as equal-mass bins of the validation top-1 confidences (with `adacal.metrics.binning`, the only binning code).
Training samples are placed by their TRUE-class probability with the same (lower, upper] convention as
`adacal.metrics.binning.assign_bins`; the first bin is open below and the last open above, so every p has a bin.

State that a resumed run needs lives in `state_dict()`: the edges (and subclass state) as buffers, and the `history`
of update records as plain lists in the module's extra state, so it survives `torch.load(weights_only=True)`.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, TypeVar

import numpy as np
import torch

from adacal.checks import is_number, renamed_options
from adacal.conventions import LOSS_OPTION_ALIASES
from adacal.errors import CheckpointError, InputError
from adacal.losses.base import (
    check_batch,
    check_positive_int,
    flatten_positions,
    ignored_mask,
    upcast,
)
from adacal.losses.records import BinUpdate
from adacal.losses.validation import DEFAULT_WARN_AFTER_STEPS, MissingUpdateWarning, ValidationLoss
from adacal.metrics.binning import BinStatistics, bin_statistics, equal_width_edges

STATE_FORMAT_VERSION = 1
__all__ = ["DEFAULT_WARN_AFTER_STEPS", "MissingUpdateWarning", "ValidationBinnedLoss", "accepts_deprecated_options",
           "check_state_device"]


LossClass = TypeVar("LossClass", bound=type)


def accepts_deprecated_options(cls: LossClass) -> LossClass:
    """Let `cls(num_bins=...)` (a deprecated spelling in `conventions.LOSS_OPTION_ALIASES`) keep working with a
    DeprecationWarning; `inspect.signature`, `help()` and the loss registry see only the current names."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **options: Any) -> None:
        init(self, *args, **renamed_options(options, LOSS_OPTION_ALIASES, warn=True))

    cls.__init__ = __init__
    return cls


class ValidationBinnedLoss(ValidationLoss):
    """Base class of the losses that learn from validation bins (CalFocal, AdaFocal): it holds `bin_edges` (a
    float64 buffer of n_bins + 1 edges, equal-width until the first `update`) and `history` (the `BinUpdate`s).

    Args:
        n_bins: the number of validation bins, a positive integer.
        ignore_index, reduction: as `CalibrationLoss` (positions labelled `ignore_index` are left out of `forward`,
            of `update` and of the training statistics; each other position is binned by its own confidence).
        warn_after_steps: warn (a `MissingUpdateWarning`, once) after this many training forward passes without an
            `update` (default 2000); None never warns.

    Example:
        >>> import torch
        >>> from adacal.losses import AdaFocalLoss
        >>> loss = AdaFocalLoss(n_bins=2)  # a ValidationBinnedLoss
        >>> loss.bin_edges.tolist(), loss.bin_index(torch.tensor([0.3, 0.5, 0.9])).tolist()
        ([0.0, 0.5, 1.0], [0, 0, 1])
    """

    needs_validation = True

    def __init__(
        self, *, n_bins: int, ignore_index: int | None = -100, reduction: str = "mean",
        warn_after_steps: int | None = DEFAULT_WARN_AFTER_STEPS,
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction, warn_after_steps=warn_after_steps)
        self.n_bins = check_positive_int("n_bins", n_bins)
        self.register_buffer("bin_edges", torch.from_numpy(equal_width_edges(self.n_bins)))
        self.history: list[BinUpdate] = []

    @property
    def num_bins(self) -> int:
        """Deprecated spelling of `n_bins`."""
        warnings.warn("The attribute 'num_bins' is deprecated; use 'n_bins'.", DeprecationWarning, stacklevel=2)
        return self.n_bins

    def bin_index(self, p_true: torch.Tensor) -> torch.Tensor:
        """Validation-bin index of each true-class probability: bin i holds (edges[i], edges[i+1]], bin 0 also
        everything at or below edges[1], the last bin everything above edges[-2] (= binning.assign_bins)."""
        edges = self.bin_edges
        return torch.bucketize(p_true.detach().to(edges.dtype), edges[1:-1], right=False)

    def _validation_statistics(
        self, val_logits: Any, val_labels: Any, carry: torch.Tensor | None = None
    ) -> tuple[BinStatistics, np.ndarray]:
        """Equal-mass bin statistics of the validation top-1 confidences, plus `carry` (e.g. the current γ) brought
        to the host in the same single device-to-host copy."""
        self._steps_since_update = 0
        val_logits = _as_tensor(val_logits, "val_logits")
        val_labels = _as_tensor(val_labels, "val_labels")
        for name, tensor in (("val_logits", val_logits), ("val_labels", val_labels)):
            if tensor.device.type == "meta":
                raise InputError(f"Expected {name} to hold values, got a tensor on torch's meta device (no data).")
        val_labels = val_labels.to(val_logits.device)
        val_logits, val_labels, _ = flatten_positions(val_logits, val_labels)  # (N, K, d1, ...): each position
        if not val_labels.dtype.is_floating_point and val_labels.dtype != torch.bool and val_labels.ndim == 1:
            keep = ignored_mask(val_labels, self.ignore_index)
            if keep is not None and val_logits.ndim == 2 and val_logits.shape[0] == keep.shape[0]:
                val_logits, val_labels = val_logits[keep], val_labels[keep]
        labels = check_batch(val_logits, val_labels, logits_name="val_logits", labels_name="val_labels")
        n, k = val_logits.shape
        if val_logits.device.type == "cpu":
            # numpy is several times faster than torch for this small, latency-bound work on a busy CPU
            labels_host = labels.numpy()
            host = _top1_host(upcast(val_logits.detach()).numpy(), labels_host)
            if carry is not None:
                host = np.concatenate([host, carry.detach().reshape(-1).cpu().numpy().astype(np.float64, copy=False)])
        else:
            with torch.no_grad():
                z = val_logits.detach().to(torch.float64)
                z_max, predicted = z.max(dim=1, keepdim=True)
                confidences = 1.0 / torch.exp(z - z_max).sum(dim=1)
                parts = [
                    confidences,
                    (predicted.squeeze(1) == labels).to(torch.float64),
                    torch.stack([labels.min(), labels.max()]).to(torch.float64),
                ]
                if carry is not None:
                    parts.append(carry.detach().reshape(-1).to(device=z.device, dtype=torch.float64))
                host = torch.cat(parts).cpu().numpy()  # the one device-to-host copy (and sync) of an update
        confidences, correct = host[:n], host[n : 2 * n]
        _check_label_range(host[2 * n], host[2 * n + 1], k)
        if not np.isfinite(confidences).all():
            raise InputError("Expected val_logits to be finite, got NaN or infinite values.")
        stats = bin_statistics(confidences, correct, n_bins=self.n_bins, binning="equal-mass")
        return stats, host[2 * n + 2 :]

    # --- state -------------------------------------------------------------------------------------------------

    def get_extra_state(self) -> dict[str, Any]:
        return {"format_version": STATE_FORMAT_VERSION, "history": [record.to_dict() for record in self.history]}

    def set_extra_state(self, state: Any) -> None:
        if (
            not isinstance(state, dict)
            or state.get("format_version") != STATE_FORMAT_VERSION
            or not isinstance(state.get("history"), list)
            or not all(isinstance(record, dict) for record in state["history"])
        ):
            raise CheckpointError(
                f"Expected {type(self).__name__} extra state with format_version {STATE_FORMAT_VERSION} "
                "and a list of history records, got something else."
            )
        try:
            self.history = [BinUpdate.from_dict(record) for record in state["history"]]
        except (KeyError, TypeError) as exc:
            raise CheckpointError(
                f"Expected every {type(self).__name__} history record to hold edges, gammas, val_confidence, "
                f"val_accuracy and counts, got one without {exc}."
            ) from None

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # Everything is checked before anything is copied, so a refused state leaves the loss as it was.
        edges = state_dict.get(prefix + "bin_edges")
        if isinstance(edges, torch.Tensor):
            if edges.ndim != 1 or tuple(edges.shape) != (self.n_bins + 1,):
                name = type(self).__name__
                raise CheckpointError(
                    f"Expected {'an' if name[0] in 'AEIOU' else 'a'} {name} state with n_bins={self.n_bins}, "
                    f"got one with {edges.numel() - 1} bins."
                )
            values = _state_values(edges, "bin_edges", self)
            if values[0] != 0.0 or values[-1] != 1.0 or (np.diff(values) < 0).any():
                raise CheckpointError(
                    f"Expected {type(self).__name__} bin_edges to rise from 0 to 1 in non-decreasing order, "
                    f"got {values.tolist()}."
                )
        for name, tensor in self._buffers.items():
            value = state_dict.get(prefix + name)
            if name == "bin_edges" or tensor is None or not isinstance(value, torch.Tensor):
                continue
            if tuple(value.shape) != tuple(tensor.shape):
                raise CheckpointError(
                    f"Expected {type(self).__name__} {name} of shape {tuple(tensor.shape)} (n_bins={self.n_bins}), "
                    f"got shape {tuple(value.shape)}."
                )
            self._check_state_buffer(name, _state_values(value, name, self))
        extra = state_dict.get(prefix + "_extra_state")
        if isinstance(extra, dict) and isinstance(extra.get("history"), list):
            for record in extra["history"]:
                if isinstance(record, dict):
                    self._check_history_record(record)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def _check_state_buffer(self, name: str, values: np.ndarray) -> None:
        """Raise CheckpointError when a loaded per-bin buffer holds values this loss could never have written."""
        if name.endswith("count") and (values < 0).any():
            raise CheckpointError(f"Expected {type(self).__name__} {name} to be at least 0, got {values.tolist()}.")
        if name.endswith("confidence_sum") and (values < 0).any():
            raise CheckpointError(f"Expected {type(self).__name__} {name} to be at least 0, got {values.tolist()}.")
        if name in ("val_confidence", "val_accuracy") and ((values < 0).any() or (values > 1).any()):
            raise CheckpointError(f"Expected {type(self).__name__} {name} in [0, 1], got {values.tolist()}.")

    def _check_history_record(self, record: dict[str, Any]) -> None:
        """Raise CheckpointError unless a history record has n_bins + 1 edges and n_bins values per bin field."""
        m = self.n_bins
        expected = {"edges": m + 1, "gammas": m, "val_confidence": m, "val_accuracy": m, "counts": m}
        for key, length in expected.items():
            value = record.get(key)
            if key == "gammas" and value is None:
                continue
            if not isinstance(value, (list, tuple)) or len(value) != length:
                found = f"{len(value)} values" if isinstance(value, (list, tuple)) else repr(value)
                raise CheckpointError(
                    f"Expected every {type(self).__name__} history record to hold {length} {key} "
                    f"(n_bins={m}), got {found}."
                )
            if not all(v is None or (is_number(v) and math.isfinite(v)) for v in value):
                raise CheckpointError(
                    f"Expected {type(self).__name__} history {key} to be finite numbers, got {list(value)}."
                )


def check_state_device(loss: ValidationBinnedLoss, logits: torch.Tensor) -> None:
    """Raise InputError unless `logits` are on the device of the loss's state (its bins), where torch would fail."""
    device = loss.bin_edges.device
    if logits.device != device:
        raise InputError(
            f"Expected logits on the device of the {type(loss).__name__} state ({device}; move the loss with "
            f".to(device)), got {logits.device}."
        )


def _state_values(value: torch.Tensor, name: str, loss: ValidationBinnedLoss) -> np.ndarray:
    """A loaded buffer as float64 numpy values; NaN or Inf is a CheckpointError naming the buffer."""
    if value.dtype.is_complex or value.device.type == "meta":
        raise CheckpointError(
            f"Expected {type(loss).__name__} {name} to hold real numbers, got {value.dtype} on {value.device}."
        )
    values = value.detach().cpu().to(torch.float64).numpy()
    if not np.isfinite(values).all():
        raise CheckpointError(f"Expected {type(loss).__name__} {name} to be finite, got {values.tolist()}.")
    return values


def _as_tensor(values: Any, name: str) -> torch.Tensor:
    """`values` as a tensor (numpy arrays and nested lists are converted); anything else is an InputError."""
    if isinstance(values, torch.Tensor):
        return values
    try:
        # numpy views with negative strides (a reversed array) are copied: torch cannot view them.
        return torch.as_tensor(np.ascontiguousarray(values))
    except (TypeError, ValueError, RuntimeError):
        found = f"an array of dtype {values.dtype}" if isinstance(values, np.ndarray) else type(values).__name__
        raise InputError(f"Expected {name} to be a tensor or an array of numbers, got {found}.") from None


def _check_label_range(lowest: float, highest: float, num_classes: int) -> None:
    if lowest < 0 or highest >= num_classes:
        raise InputError(
            f"Expected val_labels in [0, {num_classes - 1}], got values from {int(lowest)} to {int(highest)}."
        )


def _top1_host(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """[top-1 softmax confidences (N), correct 0/1 (N), min label, max label] as one float64 array.

    The confidence is 1 / Σ_k exp(z_k − max z), the max of a max-shifted softmax, with exp in the logits' own
    precision (float32 logits already carry that much rounding) and the sum in float64. Correct means
    argmax == label, with argmax's first-index rule on ties. Works on a (K, N) copy: numpy reduces much faster
    along the long axis than over K ~ 10 columns.
    """
    columns = np.ascontiguousarray(logits.T)
    z_max = columns.max(axis=0)
    shifted = columns - z_max
    np.exp(shifted, out=shifted)
    confidences = 1.0 / shifted.sum(axis=0, dtype=np.float64)
    n = labels.shape[0]
    at_max = columns == z_max
    correct = at_max[labels, np.arange(n)]
    tied = correct & (at_max.sum(axis=0) > 1)
    if tied.any():  # rare: the label shares the max with another class; argmax takes the first
        correct[tied] = columns[:, tied].argmax(axis=0) == labels[tied]
    return np.concatenate([confidences, correct.astype(np.float64), [labels.min(), labels.max()]])

