"""What every loss that learns from validation shares (`ValidationLoss`: `update_from`, the missing-update warning,
its own record kind), and the validation pass itself: a model's logits and labels over a loader, in eval mode
without gradients, gathered across `torch.distributed` ranks so every rank updates alike."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from adacal.errors import InputError
from adacal.losses.base import CalibrationLoss, format_value
from adacal.losses.records import BinUpdate

# Training forward passes without an `update` after which a validation-driven loss warns (once); None: never.
DEFAULT_WARN_AFTER_STEPS = 2000

_LABEL_KEYS = ("labels", "label")


class MissingUpdateWarning(UserWarning):
    """A validation-driven loss (AdaFocal, CalFocal, CALS) has trained `warn_after_steps` steps without an
    `update`: its γ (CALS: its multipliers) is still what the last update (or the initial value) left.

    Args:
        message: what happened and how to fix it (the loss writes it).

    Returns:
        A warning for `warnings.warn`; filter it with `warnings.filterwarnings("ignore", category=...)`.

    Example:
        >>> import warnings, torch
        >>> from adacal.losses import AdaFocalLoss, MissingUpdateWarning
        >>> loss = AdaFocalLoss(warn_after_steps=2)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     for _ in range(3):
        ...         _ = loss(torch.zeros(1, 2), torch.tensor([0]))
        >>> [issubclass(w.category, MissingUpdateWarning) for w in caught]  # once, at the second step
        [True]
    """


class ValidationLoss(CalibrationLoss):
    """Base class of the losses that learn from the validation set (AdaFocal, CalFocal, CALS): `needs_validation`
    is True, `update(val_logits, val_labels)` (each subclass's) returns a record of kind `record_type`, which the
    trainer writes to history.jsonl; `update_from(model, val_loader)` runs the validation pass first; `forward`
    warns once (`MissingUpdateWarning`) after `warn_after_steps` training steps without an update.

    Args:
        ignore_index, reduction: as `CalibrationLoss`.
        warn_after_steps: warn after this many training forward passes without an `update` (default 2000); None
            never warns.

    Example:
        >>> from adacal.losses import AdaFocalLoss
        >>> from adacal.losses.validation import ValidationLoss
        >>> loss = AdaFocalLoss()
        >>> isinstance(loss, ValidationLoss), loss.needs_validation, loss.record_type.__name__
        (True, True, 'BinUpdate')
    """

    needs_validation = True
    record_type: type = BinUpdate  # the kind of record `update` returns (history.jsonl's "updates")
    updated_state = "γ"  # what an update changes, and the option that sets it first (for the warning)
    initial_option = "gamma_init"

    def __init__(
        self, *, ignore_index: int | None = -100, reduction: str = "mean",
        warn_after_steps: int | None = DEFAULT_WARN_AFTER_STEPS,
    ) -> None:
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.warn_after_steps = _check_warn_after_steps(warn_after_steps)
        self._steps_since_update = 0
        self._warned = False

    def update(self, val_logits: Any, val_labels: Any) -> Any:
        raise NotImplementedError

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """`CalibrationLoss.forward`, counting the training steps since the last `update` (see warn_after_steps).

        Returns:
            The loss, reduced by `reduction` (a scalar, or one value per position with "none").
        """
        if self.training and self.warn_after_steps is not None and not self._warned:
            self._steps_since_update += 1
            if self._steps_since_update >= self.warn_after_steps:
                self._warned = True
                warnings.warn(
                    f"{type(self).__name__} has run {self._steps_since_update} training steps without update(): its "
                    f"{self.updated_state} stays what the last update (or {self.initial_option}) set. Call "
                    f"loss.update_from(model, val_loader) (or loss.update(val_logits, val_labels)) e.g. once per "
                    f"epoch, or pass warn_after_steps=None.",
                    MissingUpdateWarning,
                    stacklevel=3,
                )
        return super().forward(logits, labels)

    def update_from(
        self, model: Any, val_loader: Any, *, device: Any = None, amp_dtype: torch.dtype | None = None
    ) -> Any:
        """`update` from a validation pass: `validation_outputs(model, val_loader, ...)` (eval mode and no_grad
        inside, each module's mode restored after), gathered across ranks under an initialised `torch.distributed`
        process group so that every rank applies the same update.

        Args:
            model: the network (an `nn.Module`); its outputs are the logits (or an object with `.logits`).
            val_loader: an iterable of `(inputs, labels)` batches (or dicts with "labels"), or a callable returning
                `(val_logits, val_labels)`.
            device: where the inputs are moved (default: the device of the model's first parameter).
            amp_dtype: run the model under `torch.autocast` with this dtype (e.g. torch.bfloat16); None: no autocast.

        Returns:
            The record of `update` (a `record_type`).

        Example:
            >>> import torch
            >>> from adacal.losses import AdaFocalLoss
            >>> model, loss = torch.nn.Linear(4, 3), AdaFocalLoss(n_bins=2)
            >>> batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(2)]
            >>> record = loss.update_from(model, batches)
            >>> sum(record["counts"]), model.training  # 16 validation samples; the model is back in train mode
            (16, True)
        """
        logits, labels = validation_outputs(model, val_loader, device=device, amp_dtype=amp_dtype)
        logits, labels = gather_across_ranks(logits, labels)
        return self.update(logits, labels)


def _check_warn_after_steps(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(
            f"Expected warn_after_steps to be a positive integer, got {format_value(value)}: pass None to never warn."
        )
    return int(value)


def validation_outputs(
    model: Any, val_loader: Any, *, device: Any = None, amp_dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits and labels of a validation pass: the model in eval mode under `torch.no_grad()`, each of its
    modules put back in the mode it had (also when the pass raises).

    Args:
        model: an `nn.Module` whose output is the logits, or an object with `.logits` (a Hugging Face output); may be
            None when `val_loader` is a callable.
        val_loader: an iterable of `(inputs, labels)` batches (inputs a tensor, or a tuple of tensors passed as
            positional arguments), or of dicts holding "labels" (the rest passed as keyword arguments); or a callable
            returning `(val_logits, val_labels)`.
        device: where the inputs go (default: the device of the model's first parameter, else the CPU).
        amp_dtype: run the model under `torch.autocast(dtype=amp_dtype)`; None: no autocast.

    Returns:
        (logits, labels): the batches concatenated along dimension 0, logits as float32 or float64, on the device.

    Example:
        >>> import torch
        >>> from adacal.losses.validation import validation_outputs
        >>> model = torch.nn.Linear(4, 3)
        >>> logits, labels = validation_outputs(model, [(torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1]))])
        >>> tuple(logits.shape), labels.tolist(), logits.requires_grad
        ((5, 3), [0, 1, 2, 0, 1], False)
    """
    if model is not None and not isinstance(model, torch.nn.Module):
        raise InputError(f"Expected model to be a torch.nn.Module, got {type(model).__name__}.")
    if device is None:
        device = _model_device(model)
    device = torch.device(device)
    modes = [(module, module.training) for module in model.modules()] if model is not None else []
    if model is not None:
        model.eval()
    try:
        with torch.no_grad(), _autocast(device, amp_dtype):
            if callable(val_loader) and not isinstance(val_loader, (Iterable, torch.nn.Module)):
                return _pair(val_loader(), "the val_loader callable")
            if model is None:
                raise InputError("Expected a model to run over val_loader, got None: pass the network as model.")
            if not isinstance(val_loader, Iterable) or isinstance(val_loader, (torch.Tensor, str, Mapping)):
                raise InputError(
                    f"Expected val_loader to be an iterable of (inputs, labels) batches or a callable returning "
                    f"(logits, labels), got {type(val_loader).__name__}."
                )
            logits, labels = [], []
            for batch in val_loader:
                batch_logits, batch_labels = _run_batch(model, batch, device)
                logits.append(batch_logits)
                labels.append(batch_labels)
    finally:
        for module, training in modes:
            module.training = training
    if not logits:
        raise InputError("Expected val_loader to yield at least one batch, got none: pass the validation loader.")
    return torch.cat(logits), torch.cat(labels)


def gather_across_ranks(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Under an initialised `torch.distributed` process group of several ranks, every rank's logits and labels
    concatenated in rank order (shards may differ in size), on this rank's device; otherwise unchanged.

    Example:
        >>> import torch
        >>> from adacal.losses.validation import gather_across_ranks
        >>> gather_across_ranks(torch.zeros(2, 3), torch.zeros(2))[0].shape  # no process group: as given
        torch.Size([2, 3])
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return logits, labels
    device = logits.device
    mine = (logits.detach().cpu().numpy(), labels.detach().cpu().numpy())
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, mine)
    all_logits = np.concatenate([part[0] for part in gathered])
    all_labels = np.concatenate([part[1] for part in gathered])
    return torch.from_numpy(all_logits).to(device), torch.from_numpy(all_labels).to(device)


def _run_batch(model: torch.nn.Module, batch: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(batch, Mapping):
        key = next((k for k in _LABEL_KEYS if k in batch), None)
        if key is None:
            raise InputError(
                f"Expected every val_loader batch to hold labels, got a dict with keys {sorted(map(str, batch))}: "
                "add a 'labels' entry, or pass a callable returning (logits, labels)."
            )
        labels = batch[key]
        inputs = {k: _to(v, device) for k, v in batch.items() if k != key}
        output = model(**inputs)
    elif isinstance(batch, (tuple, list)) and len(batch) >= 2:
        inputs, labels = batch[0], batch[1]
        output = model(*(_to(x, device) for x in inputs)) if isinstance(inputs, (tuple, list)) else model(
            _to(inputs, device)
        )
    else:
        found = f"a batch of {len(batch)} item(s)" if isinstance(batch, (tuple, list)) else type(batch).__name__
        raise InputError(
            f"Expected val_loader to yield (inputs, labels) pairs, got {found} without labels: pass a loader whose "
            "batches carry labels, or a callable returning (logits, labels)."
        )
    logits = getattr(output, "logits", output)
    return _pair((logits, labels), "the model and val_loader")


def _pair(value: Any, source: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InputError(f"Expected {source} to give (logits, labels), got {type(value).__name__}.")
    logits, labels = value
    if not isinstance(logits, torch.Tensor):
        raise InputError(f"Expected {source} to give logits as a tensor, got {type(logits).__name__}.")
    labels = torch.as_tensor(np.asarray(labels)) if not isinstance(labels, torch.Tensor) else labels
    logits = logits.detach()
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    return logits, labels.detach().to(logits.device)


def _to(value: Any, device: torch.device) -> Any:
    return value.to(device, non_blocking=True) if isinstance(value, torch.Tensor) else value


def _model_device(model: Any) -> torch.device:
    if model is not None:
        for parameter in model.parameters():
            return parameter.device
    return torch.device("cpu")


def _autocast(device: torch.device, amp_dtype: torch.dtype | None) -> Any:
    if amp_dtype is None:
        return contextlib.nullcontext()
    if not isinstance(amp_dtype, torch.dtype):
        raise InputError(f"Expected amp_dtype to be a torch dtype (e.g. torch.bfloat16) or None, got {amp_dtype!r}.")
    return torch.autocast(device_type=device.type, dtype=amp_dtype)
