"""Progress events from the training loop, for whoever wants to show them (the CLI draws rich bars; the library draws
nothing).

Pass `progress=` to `train` as either
- an object with any of the methods below (missing ones are skipped), e.g. a subclass of `TrainingProgress`; or
- a callable `progress(event: str, info: dict)`.

Events (keyword arguments):
- train_start: run_dir, start_epoch (completed epochs before this call: 0, or the resumed epoch), epochs,
  batches_per_epoch, resumed (bool), device (str), notes (sentences the user should read before the first epoch)
- epoch_start: epoch (1-based), epochs, batches
- batch_end: epoch, batch (1-based), batches, running_loss (mean training loss of the epoch so far). On CUDA it is sent
  every few batches only, since reading the loss waits for the GPU.
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
"""

from __future__ import annotations

import inspect
from typing import Any

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
