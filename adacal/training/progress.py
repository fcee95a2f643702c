"""Progress events from the training loop, for whoever wants to show them (the CLI draws rich bars; the library draws
nothing).

Pass `progress=` to `train` as either
- an object with any of the methods below (missing ones are skipped), e.g. a subclass of `TrainingProgress`; or
- a callable `progress(event: str, info: dict)`.

Events (keyword arguments):
- train_start: run_dir, start_epoch (completed epochs before this call: 0, or the resumed epoch), epochs,
  batches_per_epoch, resumed (bool), device (str), notes (sentences the user should read before the first epoch)
- epoch_start: epoch (1-based), epochs, batches
- batch_end: epoch, batch (1-based), batches, running_loss (mean training loss of the epoch up to that batch). On CUDA
  it is sent every few batches only, and a batch's event comes some batches later, once the GPU has got there: the
  loss is read without making the GPU wait (`EpochTotals` below).
- update: epoch, batch (0 for the end-of-epoch update), record (the loss's update record)
- predict_start: split ("val" or "test"), batches; predict_batch: split, batch (batches done), batches; predict_end:
  split. Around every evaluation pass (the validation pass of each epoch, γ-updates, the final evaluation).
  predict_batch is sent only when there is a listener.
- epoch_end: epoch, epochs, record (the history.jsonl line), seconds
- evaluate_start: selected_epoch, select
- train_end: result (TrainResult)
Only rank 0 of a distributed run sends events.

A listener that cannot take these calls (a callable of one argument, a method without the event's keywords or
`**info`, something neither callable nor with any `on_<event>` method) is refused as an InputError by `train` before
any work starts, not as a TypeError from inside the first epoch.

The running totals of an epoch (`EpochTotals`, below: what batch_end reports and the loop's NaN/Inf check reads) stay
where the model computes and are read on the host only now and then. A read of a GPU value on the host (`.item()`,
`float(t)`, `bool(t)`, `.cpu()`) waits until the GPU has finished every kernel queued before it, and the GPU then
idles while Python queues the next ones. `EpochTotals` keeps the summed loss, the correct predictions and each
batch's loss on the device, adds one kernel a batch (the loss sum; the predictions' argmax is the other), and reads
them where the loop asks: every `Trainer.read_every` batches, and where the host must know (the epoch's end, before a
γ-update or a mid-epoch checkpoint). On a GPU a periodic read starts its device-to-host copy without waiting and
collects it at the next read, by when it is long done; on the CPU a read is immediate. On the CPU the totals are bit
for bit those of adding each batch's loss × size to a float64 sum in batch order: the product is exact (a float32
loss times a batch size has fewer than 53 significant bits), so `add_(loss, alpha=size)` rounds once, as
`sum += loss.double() * size` did.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from adacal.errors import InputError

# The keyword arguments each event is sent with (what `Trainer` passes; a listener's method must accept them all).
EVENTS: dict[str, tuple[str, ...]] = {
    "train_start": ("run_dir", "start_epoch", "epochs", "batches_per_epoch", "resumed", "device", "notes"),
    "epoch_start": ("epoch", "epochs", "batches"),
    "batch_end": ("epoch", "batch", "batches", "running_loss"),
    "update": ("epoch", "batch", "record"),
    "predict_start": ("split", "batches"),
    "predict_batch": ("split", "batch", "batches"),
    "predict_end": ("split",),
    "epoch_end": ("epoch", "epochs", "record", "seconds"),
    "evaluate_start": ("selected_epoch", "select"),
    "train_end": ("result",),
}


class TrainingProgress:
    """No-op base class: override the events you want."""

    def on_train_start(self, **info: Any) -> None: ...

    def on_epoch_start(self, **info: Any) -> None: ...

    def on_batch_end(self, **info: Any) -> None: ...

    def on_update(self, **info: Any) -> None: ...

    def on_epoch_end(self, **info: Any) -> None: ...

    def on_predict_start(self, **info: Any) -> None: ...

    def on_predict_batch(self, **info: Any) -> None: ...

    def on_predict_end(self, **info: Any) -> None: ...

    def on_evaluate_start(self, **info: Any) -> None: ...

    def on_train_end(self, **info: Any) -> None: ...


class ProgressDispatcher:
    """Sends events to an object's `on_<event>` method or to a plain callable; silent when there is no listener."""

    def __init__(self, listener: Any = None) -> None:
        check_progress(listener)
        self.listener = listener

    def __call__(self, event: str, **info: Any) -> None:
        if self.listener is None:
            return
        method = getattr(self.listener, f"on_{event}", None)
        if method is not None:
            method(**info)
        elif callable(self.listener) and not isinstance(self.listener, TrainingProgress):
            self.listener(event, info)


def _signature(function: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):  # builtins and C callables without a signature: not checked
        return None


def check_progress(listener: Any) -> None:
    """Refuse a `progress=` listener the events cannot be sent to, in one sentence naming what it must accept:
    a callable `progress(event, info)`, or an object whose `on_<event>` methods take the event's keywords."""
    if listener is None:
        return
    methods = {event: getattr(listener, f"on_{event}", None) for event in EVENTS}
    methods = {event: method for event, method in methods.items() if method is not None}
    uses_call = callable(listener) and not isinstance(listener, TrainingProgress) and len(methods) < len(EVENTS)
    if not methods and not uses_call:
        raise InputError(
            f"Expected progress to be a callable progress(event, info) or an object with on_<event> methods (such as "
            f"a TrainingProgress subclass), got {listener!r:.80}."
        )
    for event, method in methods.items():
        if not callable(method):
            raise InputError(f"Expected progress.on_{event} to be a method, got {method!r:.80}.")
        signature = _signature(method)
        if signature is None:
            continue
        try:
            signature.bind(**{name: None for name in EVENTS[event]})
        except TypeError as exc:
            raise InputError(
                f"Expected progress.on_{event} to take the keyword arguments {', '.join(EVENTS[event])} (or **info), "
                f"but it does not ({exc})."
            ) from None
    if uses_call:
        signature = _signature(listener)
        if signature is None:
            return
        try:
            signature.bind("train_start", {})
        except TypeError as exc:
            raise InputError(
                f"Expected the progress callable to take two positional arguments, progress(event, info), but it does "
                f"not ({exc})."
            ) from None


# ---------------------------------------------------------------------------------------------------------------------
# the running totals of an epoch


@dataclass(frozen=True)
class Reading:
    """What a read found: the batches [first, last] it covered (1-based), whether their losses were all finite, the
    window's losses (on the device, for the error message), and the running mean loss after batch `last`."""

    first: int
    last: int
    finite: bool
    losses: torch.Tensor
    running_loss: float


class EpochTotals:
    """Loss sum (float64), correct predictions (int64) and samples seen of one epoch, plus the losses of the batches
    not read yet; `add` after each batch, `read` when the host needs them.

    Args:
        device: where the model computes.
        start: the batches of this epoch already counted (a resumed mid-epoch checkpoint), with their `loss_sum`,
            `correct` and `seen`.
        defer: start a periodic read's copy and collect it at the next read (GPU); False reads at once (CPU).
    """

    def __init__(self, device: torch.device, *, start: int = 0, loss_sum: float = 0.0, correct: int = 0,
                 seen: int = 0, defer: bool | None = None) -> None:
        self.device = device
        self.defer = device.type == "cuda" if defer is None else bool(defer)
        self.loss_sum = torch.tensor(float(loss_sum), device=device, dtype=torch.float64)
        self.correct = torch.tensor(int(correct), device=device, dtype=torch.int64)
        self.seen = int(seen)
        self.checked = int(start)  # the last batch whose loss a read covered
        self.batch = int(start)
        self._losses: list[torch.Tensor] = []
        self._predicted: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []
        self._pending: tuple[Any, torch.Tensor, int, int, torch.Tensor, int] | None = None

    def add(self, loss: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """Count one batch: its mean loss (a 0-dim tensor), its logits and labels. No read of device values."""
        size = int(labels.shape[0])
        value = loss.detach()
        self.batch += 1
        self.seen += size
        self.loss_sum.add_(value, alpha=size)
        self._losses.append(value)
        self._predicted.append(logits.detach().argmax(dim=1))
        self._labels.append(labels)

    @property
    def unread(self) -> bool:
        """Whether batches were added since the last read (or a deferred read is still to be collected)."""
        return self.checked < self.batch or self._pending is not None

    def read(self, *, wait: bool) -> list[Reading]:
        """Read the batches added since the last read. With `wait` (or on the CPU) everything is read now; otherwise
        (GPU) this read's copy is started and the previous read's is collected and returned.

        Returns the readings now known, oldest first (none, one or two)."""
        readings: list[Reading] = []
        if self.checked < self.batch:
            first, last = self.checked + 1, self.batch
            losses = torch.stack(self._losses)
            if self._predicted:
                hits = (torch.cat(self._predicted) == torch.cat(self._labels)).sum()
                self.correct.add_(hits)
            self._losses, self._predicted, self._labels = [], [], []
            summary = torch.stack([torch.isfinite(losses).all().to(torch.float64), self.loss_sum])
            self.checked = last
            if self.defer:
                host = torch.empty(2, dtype=torch.float64, pin_memory=True)
                host.copy_(summary, non_blocking=True)
                event = torch.cuda.Event()
                event.record()
                previous, self._pending = self._pending, (event, host, first, last, losses, self.seen)
                if previous is not None:
                    readings.append(self._collect(previous))
            else:
                readings.append(self._reading(summary.tolist(), first, last, losses, self.seen))
        if wait and self._pending is not None:
            pending, self._pending = self._pending, None
            readings.append(self._collect(pending))
        return readings

    def _collect(self, pending: tuple[Any, torch.Tensor, int, int, torch.Tensor, int]) -> Reading:
        event, host, first, last, losses, seen = pending
        event.synchronize()
        return self._reading(host.tolist(), first, last, losses, seen)

    @staticmethod
    def _reading(values: list[float], first: int, last: int, losses: torch.Tensor, seen: int) -> Reading:
        finite_flag, loss_sum = values
        return Reading(first=first, last=last, finite=bool(finite_flag), losses=losses,
                       running_loss=loss_sum / max(seen, 1))

    def totals(self) -> torch.Tensor:
        """(loss_sum, correct, seen) as one float64 tensor on the device, after a waiting `read`."""
        if self.unread:
            raise RuntimeError("EpochTotals.totals() before a waiting read of every batch")
        seen = torch.tensor(float(self.seen), device=self.device, dtype=torch.float64)
        return torch.stack([self.loss_sum, self.correct.to(torch.float64), seen])
