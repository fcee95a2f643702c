"""PyTorch Lightning callbacks: AdaFocal's γ updated from Lightning's own validation loop, and the calibration
metrics of every validation epoch logged through `LightningModule.log`.

- `CalibrationLossCallback` (alias `AdaFocalCallback`): updates a loss that learns from validation (AdaFocal,
  CalFocal) after each validation epoch of `trainer.fit` (never in the sanity check) or every N training batches, the
  γ every rank applies under DDP being the whole validation set's; logs its state and the metrics; keeps its state in
  Lightning checkpoints.
- `CalibrationMetricsCallback`: the calibration metrics only (ECE-EM, ECE-EW, NLL, Brier by default), for any loss.

What they read from `validation_step` is written in docs/inputs.md ("Lightning callbacks"); the user's guide is
docs/integrations.md §2. Reading those outputs, the DDP padding and gather, and the metrics and loss state logged need
no Lightning: they live in `adacal.integrations.lightning_outputs` and are re-exported here.

Lightning is imported here only (`lightning.pytorch`, else `pytorch_lightning`): `pip install "adacal[lightning]"`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import torch

from adacal.checks import check_non_negative_int, check_positive_int
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import CheckpointError, InputError
from adacal.integrations.lightning_outputs import (
    DEFAULT_METRICS,
    Parts,
    calibration_metrics,
    drop_sampler_padding,
    gather_positions,
    loss_state,
    validation_step_pair,
)
from adacal.losses.base import check_ignore_index
from adacal.losses.validation import validation_outputs

try:
    import lightning.pytorch as pl
except ImportError:
    try:
        import pytorch_lightning as pl  # type: ignore[no-redef]
    except ImportError:
        raise ImportError(
            'adacal.integrations.lightning needs PyTorch Lightning, which is not installed: pip install '
            '"adacal[lightning]".',
            name="lightning",
        ) from None

LIGHTNING_PACKAGE = pl.__name__  # "lightning.pytorch" or "pytorch_lightning": the Callback class these derive from


class CalibrationMetricsCallback(pl.Callback):
    """Logs the calibration metrics of each validation epoch (`adacal.metrics.compute_metrics` on every sample of the
    epoch, gathered across ranks) through `pl_module.log`, as `prefix + report key` ("val/ece_em").

    `validation_step` must return the batch's logits and labels: `{"logits": ..., "labels": ...}` or
    `(logits, labels)`. Nothing is logged in the sanity check.

    Args:
        metrics: metric names, any spelling `adacal.metrics.resolve_metric_names` reads (default ECE-EM, ECE-EW, NLL,
            Brier); None or an empty sequence logs none.
        prefix: put before each report key (default "val/").
        n_bins: bins of the binned metrics (default 15).
        ignore_index: the label of positions left out (default -100, as torch); None: every label is a class.
        dataloader_idx: which validation dataloader the metrics are of (default 0, the first).

    Example:
        >>> from adacal.integrations.lightning import CalibrationMetricsCallback
        >>> CalibrationMetricsCallback(metrics="ECE-EM,nll").keys
        ('val/ece_em', 'val/nll')
    """

    def __init__(
        self,
        *,
        metrics: Any = DEFAULT_METRICS,
        prefix: str = "val/",
        n_bins: int = DEFAULT_N_BINS,
        ignore_index: int | None = -100,
        dataloader_idx: int = 0,
    ) -> None:
        from adacal.metrics import metric_key, resolve_metric_names

        super().__init__()
        if not isinstance(prefix, str):
            raise InputError(f"Expected prefix to be a string (e.g. 'val/'), got {prefix!r}.")
        empty = metrics is None or (not isinstance(metrics, str) and len(tuple(metrics)) == 0)
        self.metrics: tuple[str, ...] = () if empty else resolve_metric_names(metrics)
        self.prefix = prefix
        self.keys = tuple(prefix + metric_key(name) for name in self.metrics)
        self.n_bins = check_positive_int(n_bins, "n_bins")
        self.ignore_index = check_ignore_index(ignore_index)
        self.dataloader_idx = check_non_negative_int(dataloader_idx, "dataloader_idx")
        self.last_metrics: dict[str, float] = {}  # the values logged at the last validation epoch
        self._parts: Parts = []

    # --- Lightning hooks ---------------------------------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage in ("fit", "validate"):
            check_validation_loop(trainer, pl_module, type(self).__name__)

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._parts = []

    def on_validation_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        if trainer.sanity_checking or dataloader_idx != self.dataloader_idx:
            return
        self._parts.append(validation_step_pair(outputs, type(self).__name__))

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        logits, labels = self._epoch_outputs(trainer)
        self._log_metrics(trainer, pl_module, logits, labels)

    # --- shared with CalibrationLossCallback ---------------------------------------------------------------------

    def _epoch_outputs(self, trainer: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The validation epoch's logits (positions, K) and labels (positions,), every rank's, on the CPU."""
        parts, self._parts = self._parts, []
        if not parts:
            raise InputError(
                f"Expected validation dataloader {self.dataloader_idx} to yield batches for {type(self).__name__}, "
                "got none: pass dataloader_idx= of a validation loader that runs."
            )
        loader = validation_loader(trainer, self.dataloader_idx)
        return gather_positions(drop_sampler_padding(parts, loader))

    def _log_metrics(self, trainer: Any, pl_module: Any, logits: torch.Tensor, labels: torch.Tensor) -> None:
        if not self.metrics:
            return
        values = calibration_metrics(
            logits, labels, names=self.metrics, n_bins=self.n_bins, ignore_index=self.ignore_index
        )
        self.last_metrics = {key: values[name] for key, name in zip(self.keys, self.metrics)}
        _log(trainer, pl_module, self.last_metrics)


class CalibrationLossCallback(CalibrationMetricsCallback):
    """Updates a loss that learns from validation (AdaFocal, CalFocal) from Lightning's validation loop, logs its
    state and the calibration metrics, and keeps its state in Lightning checkpoints.

    When: with `update_every="epoch"` (default) after each validation epoch of `trainer.fit`, from the logits and
    labels `validation_step` returns (`{"logits": ..., "labels": ...}` or `(logits, labels)`); with an integer N after
    every N training batches of each epoch (the count restarts every epoch; no update at the epoch's end), from a pass
    of `pl_module(inputs)` over the whole validation loader in eval mode (batches `(inputs, labels)` or dicts with
    "labels"); or any schedule of `adacal train --update-every` ("paper", "epoch:25,100:40,1"). Never in the sanity
    check or in `trainer.validate`. Under DDP every rank's samples are gathered (Lightning's padding repeats left
    out), so all ranks apply the same update. The loss's `warn_after_steps` is switched off: the callback updates it.

    Logged at each validation epoch (through `pl_module.log`): `"<loss name>/gamma_mean"`, `"/gamma_min"`,
    `"/gamma_max"`, `"/inverse_focal_bins"` (bins with γ < 0; losses with a γ per bin), `"/updates"`, and the
    metrics as `CalibrationMetricsCallback` logs them.

    Checkpoints: a loss that is a submodule of the LightningModule is in its `state_dict`; otherwise (a plain
    attribute, or a loss only the callback holds) the callback's own state holds it. Either way resuming a fit from a
    checkpoint continues with the same bins, γ and history.

    Args:
        loss: the loss (an `AdaFocalLoss`, `CalFocalLoss`, ...); None: the one the LightningModule holds as an
            attribute or submodule (refused when it holds none or several).
        update_every: "epoch" (default), an integer N of training batches, or an `adacal train --update-every` spec.
        every_n_batches: another spelling of update_every=N (give one of the two).
        metrics, prefix, n_bins, dataloader_idx: as `CalibrationMetricsCallback` (positions labelled the loss's
            `ignore_index` are left out of the metrics too).
        log_state: log the loss's state (default True).

    Example:
        >>> from adacal.integrations.lightning import CalibrationLossCallback
        >>> from adacal.losses import AdaFocalLoss
        >>> callback = CalibrationLossCallback(AdaFocalLoss(n_bins=10), update_every=50)
        >>> callback.loss.n_bins, callback.schedule.batches_for_epoch(1)
        (10, 50)
    """

    def __init__(
        self,
        loss: Any = None,
        *,
        update_every: Any = "epoch",
        every_n_batches: int | None = None,
        metrics: Any = DEFAULT_METRICS,
        prefix: str = "val/",
        n_bins: int = DEFAULT_N_BINS,
        dataloader_idx: int = 0,
        log_state: bool = True,
    ) -> None:
        super().__init__(metrics=metrics, prefix=prefix, n_bins=n_bins, dataloader_idx=dataloader_idx)
        if loss is not None:
            _check_validation_loss(loss)
        self.loss = loss
        if every_n_batches is not None:
            if update_every != "epoch":
                raise InputError(
                    f"Expected one of update_every and every_n_batches, got update_every={update_every!r} and "
                    f"every_n_batches={every_n_batches!r}: pass only one."
                )
            update_every = check_positive_int(every_n_batches, "every_n_batches")
        self.schedule = _schedule(update_every)
        self.log_state = bool(log_state)
        self._given = loss is not None
        self._registered = False  # whether the loss is a submodule of the LightningModule (set in setup)
        self._pending_state: dict[str, Any] | None = None
        self._loss_training: bool | None = None

    # --- Lightning hooks ---------------------------------------------------------------------------------------

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        if not self._given:
            self.loss = find_validation_loss(pl_module)
        self.ignore_index = getattr(self.loss, "ignore_index", self.ignore_index)
        self._registered = any(module is self.loss for module in pl_module.modules())
        if getattr(self.loss, "warn_after_steps", None) is not None:
            self.loss.warn_after_steps = None  # γ is updated on the callback's schedule
        if self._pending_state is not None:
            state, self._pending_state = self._pending_state, None
            self._load_loss_state(state)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        if not self._registered:  # a submodule moved with the module; a plain attribute goes where the module is
            self.loss.to(pl_module.device)

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if not self._registered:  # as Lightning does for submodules: no training statistics from validation
            self._loss_training = self.loss.training
            self.loss.eval()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self._loss_training is not None:
            self.loss.train(self._loss_training)
            self._loss_training = None

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        logits, labels = self._epoch_outputs(trainer)
        if _stage(trainer) == "fit" and self.schedule.batches_for_epoch(trainer.current_epoch + 1) is None:
            self.loss.update(logits, labels)
        self._log_metrics(trainer, pl_module, logits, labels)
        if self.log_state:
            _log(trainer, pl_module, loss_state(self.loss))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        every = self.schedule.batches_for_epoch(trainer.current_epoch + 1)
        if every is None or (batch_idx + 1) % every:
            return
        self.loss.update(*self._validation_pass(trainer, pl_module))

    def state_dict(self) -> dict[str, Any]:
        if self.loss is None or self._registered:
            return {}
        return {"loss_state": self.loss.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = state_dict.get("loss_state") if isinstance(state_dict, Mapping) else None
        if state is None:
            return
        if self.loss is None:  # restored before setup found the loss: load it there
            self._pending_state = state
        else:
            self._load_loss_state(state)

    # --- helpers -------------------------------------------------------------------------------------------------

    def _load_loss_state(self, state: Any) -> None:
        try:
            self.loss.load_state_dict(state)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(
                f"Expected the checkpoint's {type(self).__name__} state to fit {type(self.loss).__name__}, but it "
                f"does not ({first})."
            ) from None

    def _validation_pass(self, trainer: Any, pl_module: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """A mid-epoch validation pass: `pl_module(inputs)` over the whole validation loader in eval mode without
        gradients (the module's modes restored after), under the trainer's precision; every rank's, on the CPU."""
        loader = validation_loader(trainer, self.dataloader_idx, setup=True)
        if loader is None:
            raise InputError(
                f"Expected a validation dataloader {self.dataloader_idx} for {type(self).__name__}(update_every=...), "
                "got none: pass val_dataloaders to trainer.fit or define val_dataloader()."
            )
        with _precision_context(trainer):
            logits, labels = validation_outputs(pl_module, loader)
        parts = [(logits.detach().cpu(), labels.detach().cpu())]
        return gather_positions(drop_sampler_padding(parts, loader))


AdaFocalCallback = CalibrationLossCallback


# ---------------------------------------------------------------------------------------------------------------------
# checks and readings


def check_validation_loop(trainer: Any, pl_module: Any, owner: str) -> None:
    """Raise InputError unless the fit has a validation loop: a `validation_step`, a validation dataloader and
    `limit_val_batches` above 0."""
    name = type(pl_module).__name__
    if getattr(type(pl_module), "validation_step", None) is getattr(pl.LightningModule, "validation_step", None):
        raise InputError(
            f"Expected {name} to define validation_step for {owner}, got none: add a validation_step that returns "
            "{'logits': logits, 'labels': labels}."
        )
    source = getattr(getattr(getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None), "val_loop", None),
                     "_data_source", None)
    if _stage(trainer) == "validate":
        source = getattr(getattr(trainer, "validate_loop", None), "_data_source", None)
    defined = getattr(source, "is_defined", None)
    if callable(defined) and not defined():
        raise InputError(
            f"Expected a validation dataloader for {owner}, got none: pass val_dataloaders to trainer.fit, or define "
            f"val_dataloader() on {name} or its datamodule."
        )
    if trainer.limit_val_batches == 0:
        raise InputError(
            f"Expected limit_val_batches above 0 for {owner}, got {trainer.limit_val_batches}: the validation loop "
            "never runs, so nothing is updated or logged."
        )


def find_validation_loss(pl_module: Any) -> Any:
    """The one loss that learns from validation a LightningModule holds, as a submodule or a plain attribute.

    Example:
        >>> import torch
        >>> from adacal.integrations.lightning import find_validation_loss
        >>> from adacal.losses import AdaFocalLoss
        >>> module = torch.nn.Module()
        >>> module.criterion = AdaFocalLoss()
        >>> find_validation_loss(module) is module.criterion
        True
    """
    found: dict[int, tuple[str, Any]] = {}
    others: list[str] = []
    candidates = [(name, module) for name, module in pl_module.named_modules() if name]
    candidates += [(name, value) for name, value in vars(pl_module).items() if isinstance(value, torch.nn.Module)]
    for name, value in candidates:
        if _is_validation_loss(value):
            found.setdefault(id(value), (name, value))
        elif type(value).__name__.endswith("Loss"):
            others.append(f"self.{name} ({type(value).__name__})")
    module_name = type(pl_module).__name__
    if not found:
        held = f" (it holds {', '.join(others)}, which does not learn from validation)" if others else ""
        raise InputError(
            f"Expected {module_name} to hold a loss that learns from validation (AdaFocalLoss, CalFocalLoss) as an "
            f"attribute, got none{held}: set e.g. self.loss = AdaFocalLoss(), or pass CalibrationLossCallback(loss=...)"
            "; to log the metrics only, use CalibrationMetricsCallback."
        )
    if len(found) > 1:
        names = ", ".join(f"self.{name} ({type(value).__name__})" for name, value in found.values())
        raise InputError(
            f"Expected {module_name} to hold one loss that learns from validation, got {len(found)}: {names}; pass "
            "the one to update as CalibrationLossCallback(loss=...)."
        )
    return next(iter(found.values()))[1]


def _is_validation_loss(value: Any) -> bool:
    return (isinstance(value, torch.nn.Module) and bool(getattr(value, "needs_validation", False))
            and callable(getattr(value, "update", None)))


def _check_validation_loss(loss: Any) -> None:
    if not _is_validation_loss(loss):
        raise InputError(
            f"Expected loss to learn from validation (AdaFocalLoss, CalFocalLoss: an update(val_logits, val_labels)), "
            f"got {type(loss).__name__}: use CalibrationMetricsCallback to log the calibration metrics of any loss."
        )


def _schedule(update_every: Any) -> Any:
    from adacal.training.update_schedule import parse_update_every

    if isinstance(update_every, bool):
        raise InputError(f"Expected update_every to be 'epoch', a positive number of batches or a spec, got "
                         f"{update_every!r}.")
    try:
        return parse_update_every(update_every)
    except InputError as exc:
        raise InputError(str(exc).replace("--update-every", "update_every")) from None


def _stage(trainer: Any) -> str:
    """"fit", "validate", ... (the `TrainerFn` of the call running)."""
    return str(getattr(trainer.state.fn, "value", trainer.state.fn))


# ---------------------------------------------------------------------------------------------------------------------
# the trainer's side: its validation loaders, logging, precision


def validation_loader(trainer: Any, dataloader_idx: int, *, setup: bool = False) -> Any:
    """Validation dataloader `dataloader_idx` of the trainer, or None. With `setup`, the fit's validation loaders are
    set up first when Lightning has not yet done so (a mid-epoch pass before the first validation)."""
    loaders = trainer.val_dataloaders
    if loaders is None and setup:
        val_loop = getattr(getattr(trainer.fit_loop, "epoch_loop", None), "val_loop", None)
        if val_loop is not None and callable(getattr(val_loop, "setup_data", None)):
            val_loop.setup_data()
            loaders = trainer.val_dataloaders
    if loaders is None:
        return None
    if isinstance(loaders, Mapping):
        loaders = list(loaders.values())
    if not isinstance(loaders, (list, tuple)):
        loaders = [loaders]
    return loaders[dataloader_idx] if dataloader_idx < len(loaders) else None


def _log(trainer: Any, pl_module: Any, values: dict[str, float]) -> None:
    # Every rank holds the same values (computed from the gathered set): sync_dist's mean of equal numbers is that
    # number, and Lightning wants it for epoch-level values under DDP.
    distributed = int(getattr(trainer, "world_size", 1) or 1) > 1
    for key, value in values.items():
        pl_module.log(key, value, on_step=False, on_epoch=True, sync_dist=distributed)


def _precision_context(trainer: Any) -> Any:
    plugin = getattr(trainer, "precision_plugin", None)
    context = getattr(plugin, "val_step_context", None) or getattr(plugin, "forward_context", None)
    return context() if callable(context) else contextlib.nullcontext()


__all__ = [
    "AdaFocalCallback",
    "CalibrationLossCallback",
    "CalibrationMetricsCallback",
    "DEFAULT_METRICS",
    "LIGHTNING_PACKAGE",
    "calibration_metrics",
    "check_validation_loop",
    "drop_sampler_padding",
    "find_validation_loss",
    "gather_positions",
    "loss_state",
    "validation_loader",
    "validation_step_pair",
]
