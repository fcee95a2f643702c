"""Progress events from the training loop, for whoever wants to show them (the CLI draws rich bars; the library draws
nothing).

Pass `progress=` to `train` as either
- an object with any of the methods below (missing ones are skipped), e.g. a subclass of `TrainingProgress`; or
- a callable `progress(event: str, info: dict)`.

Events (keyword arguments):
- train_start: run_dir, start_epoch (completed epochs before this call: 0, or the resumed epoch), epochs,
  batches_per_epoch, resumed (bool), device (str)
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
"""

from __future__ import annotations

from typing import Any


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
        self.listener = listener

    def __call__(self, event: str, **info: Any) -> None:
        if self.listener is None:
            return
        method = getattr(self.listener, f"on_{event}", None)
        if method is not None:
            method(**info)
        elif callable(self.listener) and not isinstance(self.listener, TrainingProgress):
            self.listener(event, info)
