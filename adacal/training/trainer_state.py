"""What a `Trainer` saves and restores, so that a resumed run continues exactly as the uninterrupted one would.

A checkpoint holds the model, optimiser, LR schedule, loss state (AdaFocal's γ, bins and history), the AMP gradient
scaler, every random generator and the best validation accuracy so far; a mid-epoch checkpoint (interrupted.pt) also
the `partial_epoch` record: the batches of the epoch already trained, their running totals and γ-update records.
`TrainerState` is the half of `adacal.training.loop.Trainer` that writes and reads those dicts; the loop sets the
attributes it reads (`net`, `optimizer`, `scheduler`, `loss`, `scaler`, `dataset`, `config`, `device`, `folder`, ...).
"""

from __future__ import annotations

import json
from typing import Any

import torch

from adacal.reports import to_jsonable
from adacal.training.checkpoints import capture_rng_state, checkpoint_safe, make_checkpoint, restore_rng_state
from adacal.writing import write_file


class TrainerState:
    """Checkpoint dicts of a training run, and continuing from one (`load_state`)."""

    # What `load_state` restores (a new run: epoch 0, None; `Trainer.__init__` sets them).
    start_epoch: int  # the last epoch the checkpoint completed; training continues with the next
    resumed_from: int | None
    resumed_batch: int | None  # the last batch a mid-epoch checkpoint trained
    partial_epoch: dict[str, Any] | None  # a mid-epoch checkpoint's record, until the loop continues its epoch
    best_metric: dict[str, Any] | None  # {"name": "val_accuracy", "value": ..., "epoch": ...}

    def checkpoint(self, epoch: int, partial_epoch: dict[str, Any] | None = None) -> dict[str, Any]:
        """The checkpoint of the state after `epoch` (and, for a mid-epoch checkpoint, `partial_epoch`: the batches of
        the next epoch already trained, their totals and γ-update records): model, optimiser, LR schedule, loss (γ,
        bins, history), gradient scaler, every random generator, the best validation accuracy so far."""
        extra: dict[str, Any] = {}
        if self.scaler.is_enabled():
            extra["scaler_state"] = self.scaler.state_dict()
        if partial_epoch is not None:
            extra["partial_epoch"] = partial_epoch
        return make_checkpoint(
            model_name=self.model_name,
            model_options=checkpoint_safe(self.model_options),
            dataset=self.dataset.name,
            num_classes=int(self.dataset.num_classes),
            input_shape=tuple(self.dataset.input_shape),
            config=self.config.to_dict(),
            epoch=epoch,
            model_state=self.net.state_dict(),
            optimizer_state=self.optimizer.state_dict(),
            scheduler_state=self.scheduler.state_dict(),
            loss_state=self.loss.state_dict(),
            rng_state=capture_rng_state(),
            best_metric=self.best_metric,
            split=checkpoint_safe(self.dataset.split_info),  # how the data was split (the test subset's method)
            **extra,
        )

    def load_state(self, checkpoint: dict[str, Any]) -> None:
        """Continue from a checkpoint of this run (same model, optimiser, loss)."""
        from adacal.errors import CheckpointError

        try:
            self.net.load_state_dict(checkpoint["model_state"])
            self.optimizer.load_state_dict(checkpoint["optimizer_state"])
            self.scheduler.load_state_dict(checkpoint["scheduler_state"])
            if checkpoint.get("loss_state") is not None:
                self.loss.load_state_dict(checkpoint["loss_state"])
            if self.scaler.is_enabled() and checkpoint.get("scaler_state"):
                self.scaler.load_state_dict(checkpoint["scaler_state"])
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
            raise CheckpointError("Expected the checkpoint to fit this run's model and optimiser, but it does not "
                                  f"({first}).") from None
        # Optimiser state comes back on the CPU; move it next to the parameters.
        for state in self.optimizer.state.values():
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and key != "step":
                    state[key] = value.to(self.device)
        restore_rng_state(checkpoint["rng_state"])
        self.start_epoch = int(checkpoint["epoch"])
        self.resumed_from = self.start_epoch
        self.best_metric = checkpoint.get("best_metric")
        partial = checkpoint.get("partial_epoch")
        if partial is not None:
            if partial["batch"] > len(self.train_loader):
                raise CheckpointError(
                    f"Expected the mid-epoch checkpoint's batch {partial['batch']} to be within the "
                    f"{len(self.train_loader)} batches of an epoch of this run, but it is not."
                )
            record_type = getattr(self.loss, "record_type", None)  # the kind of update record this loss writes
            for update in partial["updates"] if record_type is not None else ():
                try:
                    record_type.from_dict(update)
                except (KeyError, TypeError, ValueError) as exc:
                    raise CheckpointError(
                        f"Expected the mid-epoch checkpoint's update records to be {record_type.__name__}s of "
                        f"--loss {self.config.loss}, got one without {exc}."
                    ) from None
            self.partial_epoch = partial
            self.resumed_batch = int(partial["batch"])

    def truncate_history(self, last_epoch: int) -> None:
        """Keep the history lines of epochs 1..last_epoch (a crash may have left one for an epoch not checkpointed)."""
        if not self.dist.is_main or not self.folder.history.exists():
            return
        from adacal.sources import read_history

        # Validated line by line (a damaged line is refused with its number); only a torn last line, the write a
        # killed run left half-done, and records of epochs after the checkpoint (trained again now) are dropped.
        records = read_history(self.folder.history, torn_tail=True)
        kept = [json.dumps(to_jsonable(r), allow_nan=False) + "\n" for r in records if r["epoch"] <= last_epoch]
        write_file(self.folder.history, lambda handle: handle.writelines(kept))


__all__ = ["TrainerState"]
