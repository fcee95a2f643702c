"""The epoch loop (`Trainer`); `adacal.training.entry.train(config)` builds it and runs it for `adacal train`.

Each epoch: train on shuffled batches (order and augmentation depend on (seed, epoch) only), then ONE validation
forward pass in eval mode whose logits give the validation metrics and, for losses that learn from validation
(AdaFocal), the γ-update. One history.jsonl line and checkpoints/last.pt (and best.pt on a new best validation
accuracy) are written after every epoch; an epoch-0 checkpoint is written before training starts.

What a checkpoint holds and how a run continues from one: `adacal.training.trainer_state`; what the run returns and
reports at the end: `adacal.training.results`; resuming and interrupts: `adacal.training.entry` and
`adacal.training.interrupts`.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adacal.errors import AdacalError, InputError
from adacal.losses.base import CalibrationLoss
from adacal.losses.records import BinnedLossEpoch, TrainBinStatistics, UpdateRecord, update_record_from_dict
from adacal.losses.validation import ValidationLoss
from adacal.predictions import Predictions
from adacal.runs import EVALUATE_FILE, RunFolder
from adacal.training.checkpoints import load_checkpoint
from adacal.training.config import TrainConfig
from adacal.training.distributed import DistributedContext
from adacal.training.inference import CUDA_EVAL_BATCH_SIZE, EVAL_BATCH_SIZE, predict, slice_split
from adacal.training.interrupts import InterruptGuard, TrainingInterrupted
from adacal.training.optimizers import build_optimizer
from adacal.training.progress import EpochTotals, ProgressDispatcher, Reading
from adacal.training.results import TrainResult, report_metrics, run_evaluation_report, validation_metrics
from adacal.training.run_writer import INTERRUPTED, RunWriter
from adacal.training.schedules import build_scheduler
from adacal.training.trainer_state import TrainerState
from adacal.training.update_schedule import idle_update_epochs, parse_update_every

CUDA_SYNC_EVERY = 25  # batches between reads of the running totals on a GPU (progress and the NaN/Inf check)


class NonFiniteLossError(AdacalError):
    """Training diverged: the training loss, or the model's outputs on the validation or test split, became NaN or
    Inf. The run folder keeps its last good checkpoint and stays resumable."""


# ---------------------------------------------------------------------------------------------------------------------
# the trainer


# Below this many validation samples per bin, a bin's C_val - A_val is mostly sampling noise (train notes it).
MIN_VAL_PER_BIN = 10


class Trainer(TrainerState):
    """Owns one training run: model, optimiser, schedule, loss, loaders and the run folder. Its checkpoints and
    resuming from one are `TrainerState`'s."""

    def __init__(
        self,
        config: TrainConfig,
        *,
        dataset: Any,
        model: torch.nn.Module,
        loss: torch.nn.Module,
        model_name: str,
        model_options: dict[str, Any],
        device: torch.device,
        run: RunFolder,
        dist: DistributedContext | None = None,
        progress: Any = None,
        writer: RunWriter | None = None,
    ) -> None:
        from adacal.data import BatchLoader

        self.config = config
        self.dataset = dataset
        self.device = device
        self.folder = run
        self.dist = dist or DistributedContext()
        self.writer = writer or RunWriter(run, enabled=self.dist.is_main)
        self.emit = ProgressDispatcher(progress if self.dist.is_main else None)
        self.model_name = model_name
        self.model_options = model_options
        self.schedule = parse_update_every(config.update_every)
        self.loss = loss.to(device)
        if isinstance(loss, CalibrationLoss):  # every label is a class (checked as before): no look for -100
            loss.ignore_index = None
        if isinstance(loss, ValidationLoss):  # γ (λ) is updated on the trainer's own schedule: never warn
            loss.warn_after_steps = None
        self.needs_validation = bool(getattr(loss, "needs_validation", False))
        self.channels_last = bool(config.channels_last)
        # Batches between host reads of the running loss (progress, NaN/Inf check): every batch on the CPU, where a
        # read costs nothing; every CUDA_SYNC_EVERY on a GPU, where each read would otherwise wait for the GPU.
        self.read_every = 1 if device.type == "cpu" else CUDA_SYNC_EVERY

        self.net = model.to(device)
        if self.channels_last:
            self.net = self.net.to(memory_format=torch.channels_last)
        self.model = self.dist.wrap_model(self.net, device)
        self.optimizer = build_optimizer(
            self.net.parameters(), name=config.optimizer, lr=config.lr, weight_decay=config.weight_decay,
            momentum=config.momentum,
        )
        self.scheduler = build_scheduler(self.optimizer, config.milestones or (), config.lr_decay)

        self.amp_dtype: torch.dtype | None = None
        if config.amp:
            if device.type == "cuda":
                self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            else:
                self.amp_dtype = torch.bfloat16  # CPU autocast supports bfloat16 only
        # float16 gradients are scaled against underflow; otherwise the scaler is disabled: its scale, unscale_ and
        # update do nothing and its step is the optimiser's, so `_step` is one path for both.
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)

        per_rank = math.ceil(len(dataset.train) / self.dist.world_size)
        self.train_loader = BatchLoader(
            dataset.train, config.batch_size, dataset=dataset, shuffle=True, augment=dataset.kind == "image",
            device=device, seed=config.seed, rank=self.dist.rank, world_size=self.dist.world_size,
            # a final batch of one sample breaks batch norm in training mode
            drop_last=per_rank % config.batch_size == 1 and per_rank > 1,
            channels_last=self.channels_last,
        )
        self._eval_loaders: dict[str, Any] = {}
        self.start_epoch = 0
        self.best_metric = None
        self.resumed_from = None
        self.resumed_batch = None
        self.partial_epoch = None
        self._epoch = 0
        self._batch = 0
        self._completed = 0
        self._phase = "training"
        self._guard: InterruptGuard | None = None
        self._saved_interrupted: Path | None = None
        self._epoch_lr: float | None = None

    def _autocast(self) -> Any:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    # ------------------------------------------------------------------------------------------------ evaluation

    def _eval_loader(self, split: str) -> Any:
        from adacal.data import BatchLoader

        if split not in self._eval_loaders:
            data = self.dataset.split(split)
            start, stop = self.dist.shard_bounds(len(data))
            shard = slice_split(data, start, stop) if self.dist.enabled else data
            # a GPU scores a split in a few large batches (fewer launches); the CPU keeps its batches, and so its bits
            eval_batch = EVAL_BATCH_SIZE if self.device.type == "cpu" else CUDA_EVAL_BATCH_SIZE
            self._eval_loaders[split] = BatchLoader(
                shard, max(eval_batch, self.config.batch_size), dataset=self.dataset, shuffle=False,
                augment=False, device=self.device, channels_last=self.channels_last,
            ) if len(shard) else None
        return self._eval_loaders[split]

    def predict_split(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Logits and labels of a whole split (sharded across ranks and gathered in order), eval mode, no grad."""
        loader = self._eval_loader(split)
        self.dist.broadcast_buffers(self.net)  # every shard scored by the model rank 0 checkpoints
        if loader is None:
            num_classes = int(self.dataset.num_classes)
            logits, labels = np.zeros((0, num_classes), np.float32), np.zeros(0, np.int64)
        else:
            batches = len(loader)
            self.emit("predict_start", split=split, batches=batches)

            def on_batch(done: int) -> None:
                self.emit("predict_batch", split=split, batch=done, batches=batches)

            try:
                logits, labels = predict(
                    self.net, loader, self.device, autocast_dtype=self.amp_dtype,
                    on_batch=on_batch if self.emit.listener is not None else None,
                )
            finally:
                self.emit("predict_end", split=split)
        logits, labels = self.dist.gather_arrays(logits, labels)
        self._check_outputs(split, logits)
        return logits, labels

    def _check_outputs(self, split: str, logits: np.ndarray) -> None:
        """Weights can diverge while the training loss stays finite (a huge --lr): NaN or Inf logits are then refused
        here, like a NaN loss, before any metric, γ-update or file sees them; last.pt keeps the last good epoch."""
        finite = np.isfinite(logits)
        if bool(finite.all()):
            return
        kind = "NaN" if bool(np.isnan(logits).any()) else "Inf"
        rows = int((~finite).any(axis=1).sum())
        lr = self._epoch_lr if self._epoch_lr is not None else self.optimizer.param_groups[0]["lr"]
        last = self.folder.checkpoint("last")
        name = "validation" if split == "val" else split
        if self._phase == "evaluation":
            raise NonFiniteLossError(
                f"The outputs of the model selected for the final evaluation on the {name} split are {kind} in {rows} "
                f"of {len(logits)} rows: its weights diverged; training stopped before writing predictions.npz and "
                f"evaluate.json, with every checkpoint kept — try a lower --lr or --grad-clip."
            )
        raise NonFiniteLossError(
            f"The model's outputs on the {name} split became {kind} at epoch {self._epoch} ({rows} of {len(logits)} "
            f"rows; lr {lr:g}): its weights diverged although the training loss stayed finite; training stopped and "
            f"the last good checkpoint {last} (epoch {self._completed}) was kept — try a lower --lr or --grad-clip."
        )

    def _update_loss(self, logits: np.ndarray, labels: np.ndarray) -> UpdateRecord:
        """Update the loss from the validation logits, handed on the device the loss computes on; the record is of
        the loss's own kind (a `BinUpdate`, or CALS's `MultiplierUpdate`)."""
        record = self.loss.update(
            torch.from_numpy(logits).to(self.device), torch.from_numpy(labels).to(self.device)
        )
        return update_record_from_dict(record)

    def _train_statistics(self) -> TrainBinStatistics | None:
        pop = getattr(self.loss, "pop_train_statistics", None)
        if pop is None:
            return None
        stats = pop()
        if not self.dist.enabled or stats is None:
            return stats
        # Each rank saw its own training samples: add up counts, weight the mean confidences by them.
        return TrainBinStatistics.merge(self.dist.gather_objects(stats.to_dict()))

    @contextlib.contextmanager
    def _writing(self):
        """Around the run's file writes: when one fails (disk full, folder gone), the error also says which
        checkpoint is intact and how to resume from it (nothing half-written replaced a good file)."""
        try:
            yield
        except InputError as exc:
            last = self.folder.checkpoint("last")
            if not last.is_file():
                raise
            raise InputError(
                f"{str(exc).rstrip('.')}; training stopped with {last} intact at epoch {self._completed}; "
                f"resume with: adacal train --resume {self.folder.root} --epochs {self.config.epochs}"
            ) from None

    # ------------------------------------------------------------------------------------------------ the loop

    def _start_notes(self) -> list[str]:
        """What the user should know before the first epoch: a resume from inside an epoch, pretrained word vectors
        that cover little of the vocabulary, a γ-update schedule some epochs never reach, validation bins too small to
        measure."""
        notes = self._resume_notes() + self._embedding_notes()
        if not self.needs_validation:
            return notes
        return notes + self._update_notes()

    def _resume_notes(self) -> list[str]:
        """A resume from a mid-epoch checkpoint (interrupted.pt) continues inside the epoch: say from which batch."""
        if self.partial_epoch is None:
            return []
        epoch, batch = int(self.partial_epoch["epoch"]), int(self.partial_epoch["batch"])
        return [f"resuming after batch {batch} of {len(self.train_loader)} of epoch {epoch} (checkpoints/"
                f"{INTERRUPTED}.pt): the epoch's first {batch} batch(es) are not trained again"]

    def _embedding_notes(self) -> list[str]:
        coverage = getattr(self.net, "embedding_coverage", None)
        embeddings = (self.config.model_options or {}).get("embeddings")
        if coverage is None or not embeddings or self.resumed_from is not None or coverage >= 0.5:
            return []
        return [f"--embeddings {embeddings} holds {100 * coverage:.0f} % of the vocabulary's words: the others start "
                "random" + (" (no word matched: is it the right file?)" if coverage == 0 else "")]

    def _update_notes(self) -> list[str]:
        notes = idle_update_epochs(self.config.update_every, epochs=self.config.epochs,
                                   batches_per_epoch=len(self.train_loader))
        n_bins, n_val = int(getattr(self.loss, "n_bins", 0) or 0), len(self.dataset.split("val"))
        if n_bins and n_val < MIN_VAL_PER_BIN * n_bins:
            notes.append(f"{n_val} validation samples in {n_bins} bins leave fewer than {MIN_VAL_PER_BIN} in each: "
                         "every γ follows the calibration of a handful of samples (use fewer --n-bins or a larger "
                         "--val-size)")
        return notes

    def train_epoch(self, epoch: int) -> dict[str, Any]:
        """One pass over the training split (with any per-n-batch γ-updates); no validation, no files.

        No step reads a device value on the host: the running totals stay on the device (`EpochTotals`) and are read
        every `read_every` batches (progress, the NaN/Inf check), before a mid-epoch γ-update or checkpoint, and at the
        epoch's end."""
        model, loss_fn, device = self.model, self.loss, self.device
        loader = self.train_loader
        loader.set_epoch(epoch)
        n_batches = len(loader)
        every = self.schedule.batches_for_epoch(epoch) if self.needs_validation else None
        # Summed over the batch (the reference code's reduction) = the per-sample mean times the batch size, for every
        # loss; the mean is what history.jsonl and the progress bar report either way.
        summed = self.config.loss_reduction == "sum"
        model.train()
        loss_fn.train()
        self.emit("epoch_start", epoch=epoch, epochs=self.config.epochs, batches=n_batches)

        # Continuing an epoch from a mid-epoch checkpoint: its totals and γ-update records so far.
        partial = self.partial_epoch if self.partial_epoch and self.partial_epoch["epoch"] == epoch else None
        self.partial_epoch = None
        start = int(partial["batch"]) if partial else 0
        totals = EpochTotals(device, start=start, **({key: partial[key] for key in ("loss_sum", "correct", "seen")}
                                                     if partial else {}))
        updates = [update_record_from_dict(u) for u in partial["updates"]] if partial else []
        cached_val: tuple[np.ndarray, np.ndarray] | None = None
        guard = self._guard if not self.dist.enabled else None
        with guard.deferring() if guard is not None else contextlib.nullcontext():
            for batch, (inputs, labels) in enumerate(loader.iterate(start), start=start + 1):
                self._batch = batch
                with self._autocast():
                    logits = model(inputs)
                value = loss_fn(logits.float(), labels)
                totals.add(value, logits, labels)
                updating = every is not None and batch % every == 0
                readings: list[Reading] = []
                if batch % self.read_every == 0 or batch == n_batches or updating:
                    # read before a γ-update too: a NaN loss must not surface as NaN validation outputs
                    readings = totals.read(wait=batch == n_batches or updating)
                    self._refuse_non_finite(epoch, readings)
                self._step(value * labels.shape[0] if summed else value)

                if updating:
                    # γ-update from a validation pass in eval mode; `predict` puts the model back in train mode.
                    cached_val = self.predict_split("val")
                    record = self._update_loss(*cached_val)
                    updates.append(record)
                    self.emit("update", epoch=epoch, batch=batch, record=record)
                    if batch != n_batches:
                        cached_val = None
                self._report(epoch, readings, n_batches)
                if guard is not None and guard.pending:
                    readings = totals.read(wait=True)  # never save a state whose latest losses were not checked
                    self._refuse_non_finite(epoch, readings)
                    self._report(epoch, readings, n_batches)
                    self._save_interrupted(guard, epoch, batch, totals=totals, updates=updates)
        if totals.unread:
            self._refuse_non_finite(epoch, totals.read(wait=True))
        summary = totals.totals()
        if self.dist.enabled:
            import torch.distributed as tdist

            tdist.all_reduce(summary)
        total_loss, total_correct, total_seen = (float(v) for v in summary.cpu())
        return {
            "train": {"loss": total_loss / max(total_seen, 1), "accuracy": total_correct / max(total_seen, 1)},
            "updates": updates,
            "every": every,
            "cached_val": cached_val,
        }

    def _refuse_non_finite(self, epoch: int, readings: list[Reading]) -> None:
        """Raise NonFiniteLossError when a reading holds a NaN or Inf loss (decided on every rank at once)."""
        for reading in readings:
            if self.dist.any(not reading.finite, self.device):
                self._raise_non_finite(epoch, reading.first - 1, reading.last, reading.losses)

    def _report(self, epoch: int, readings: list[Reading], n_batches: int) -> None:
        for reading in readings:
            self.emit("batch_end", epoch=epoch, batch=reading.last, batches=n_batches,
                      running_loss=reading.running_loss)

    def _step(self, objective: torch.Tensor) -> None:
        """One optimiser step on `objective`: gradients from zero, backward (scaled under float16 AMP), the gradient
        norm clipped to --grad-clip (after unscaling), then the step; the scaler skips a step with Inf or NaN gradients
        and adjusts its scale. Without float16 AMP the scaler is disabled: a plain backward and step."""
        optimizer, scaler, grad_clip = self.optimizer, self.scaler, self.config.grad_clip
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(objective).backward()
        if grad_clip is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()

    def _save_interrupted(
        self, guard: InterruptGuard, epoch: int, batch: int, *, totals: EpochTotals, updates: list[UpdateRecord],
    ) -> None:
        """Write checkpoints/interrupted.pt (the state after `batch` of `epoch`), then raise KeyboardInterrupt: the
        pending signal is raised when `critical()` ends, after the write."""
        counts = totals.totals().cpu().tolist()
        partial = {"epoch": epoch, "batch": batch, "loss_sum": counts[0], "correct": int(counts[1]),
                   "seen": int(totals.seen), "updates": [u.to_dict() for u in updates]}
        with guard.critical(), self._writing():
            self.writer.save_checkpoint(INTERRUPTED, self.checkpoint(epoch - 1, partial_epoch=partial))
            self._saved_interrupted = self.folder.checkpoint(INTERRUPTED)
        raise KeyboardInterrupt

    def _raise_non_finite(self, epoch: int, checked: int, batch: int, window: torch.Tensor) -> None:
        values = window.detach().cpu()
        finite = torch.isfinite(values)
        first = checked + (int((~finite).nonzero()[0]) + 1 if not bool(finite.all()) else batch - checked)
        kind = "NaN" if bool(torch.isnan(values).any()) else "Inf"
        lr = self.optimizer.param_groups[0]["lr"]
        last = self.folder.checkpoint("last")
        raise NonFiniteLossError(
            f"The training loss became {kind} at epoch {epoch}, batch {first} (lr {lr:g}); training stopped and the "
            f"last good checkpoint {last} (epoch {epoch - 1}) was kept — try a lower --lr or --grad-clip."
        )

    def epoch_record(self, epoch: int) -> dict[str, Any]:
        """Train one epoch, step the LR schedule, validate once (and update the loss from that same forward pass);
        returns the history.jsonl line. Writes no files."""
        started = time.perf_counter()
        lr = float(self.optimizer.param_groups[0]["lr"])
        self._epoch_lr = lr  # the epoch's rate, which a diverged validation pass reports (the schedule steps first)
        trained = self.train_epoch(epoch)
        self._phase = "validation"  # the epoch's batches are done; its validation pass and checkpoint come next
        self.scheduler.step()
        self._batch = 0
        if trained["cached_val"] is not None:
            val_logits, val_labels = trained["cached_val"]
        else:
            val_logits, val_labels = self.predict_split("val")
        updates = trained["updates"]
        if self.needs_validation and trained["every"] is None:
            record = self._update_loss(val_logits, val_labels)
            updates.append(record)
            self.emit("update", epoch=epoch, batch=0, record=record)
        history: dict[str, Any] = {"epoch": epoch, "lr": lr, "train": trained["train"]}
        history["val"] = validation_metrics(val_logits, val_labels)
        k = self.config.eval_test_every
        if k and epoch % k == 0:
            history["test"] = validation_metrics(*self.predict_split("test"))
        stats = self._train_statistics()
        if self.needs_validation or stats is not None:
            history[self.config.loss] = BinnedLossEpoch(updates=tuple(updates), train=stats).to_dict()
        history["seconds"] = time.perf_counter() - started
        return history

    def _run_epoch(self, epoch: int, guard: InterruptGuard) -> dict[str, Any]:
        history = self.epoch_record(epoch)
        accuracy = 1.0 - history["val"]["error"]
        improved = self.best_metric is None or accuracy > self.best_metric["value"]
        if improved:
            self.best_metric = {"name": "val_accuracy", "value": accuracy, "epoch": epoch}
        with guard.critical(), self._writing():
            self.writer.append_history(history)
            checkpoint = self.checkpoint(epoch)
            if improved:
                self.writer.save_checkpoint("best", checkpoint)
            self.writer.save_checkpoint("last", checkpoint)
            self._completed = epoch
            self._phase = "training"
            self.writer.discard_interrupted()
            self.dist.barrier()
        return history

    def run(self) -> TrainResult:
        """Train epochs start_epoch+1 .. epochs, then evaluate the selected model; returns the summary."""
        started = time.perf_counter()
        config = self.config
        self._epoch = self._completed = self.start_epoch  # the last epoch on disk (a resumed run's checkpoint)
        with InterruptGuard() as guard:
            self._guard = guard
            try:
                if self.resumed_from is None:
                    with guard.critical():
                        self.writer.save_checkpoint("last", self.checkpoint(0))  # an interrupt in epoch 1 can resume
                else:
                    with guard.critical(), self._writing():
                        self.writer.remove_stale_temp_files()
                        self.truncate_history(self.start_epoch)
                self.emit(
                    "train_start", run_dir=self.folder.root, start_epoch=self.start_epoch, epochs=config.epochs,
                    batches_per_epoch=len(self.train_loader), resumed=self.resumed_from is not None,
                    device=str(self.device), notes=self._start_notes(),
                )
                for epoch in range(self.start_epoch + 1, config.epochs + 1):
                    self._epoch = epoch
                    epoch_started = time.perf_counter()
                    history = self._run_epoch(epoch, guard)
                    self.emit(
                        "epoch_end", epoch=epoch, epochs=config.epochs, record=history,
                        seconds=time.perf_counter() - epoch_started,
                    )
                self._batch = 0
                self._phase = "evaluation"
                result = self._finish(started, guard)
            except KeyboardInterrupt:
                raise TrainingInterrupted(
                    run_dir=self.folder.root, epoch=self._epoch, batch=self._batch, epochs=config.epochs,
                    checkpoint_epoch=self._completed, phase=self._phase, saved=self._saved_interrupted,
                ) from None
            finally:
                self._guard = None
        self.emit("train_end", result=result)
        return result

    def _finish(self, started: float, guard: InterruptGuard) -> TrainResult:
        config = self.config
        selected_epoch = config.epochs
        if config.select == "best-val" and self.best_metric is not None and self.best_metric["epoch"] != config.epochs:
            best = load_checkpoint(self.folder.checkpoint("best"))
            self.net.load_state_dict(best["model_state"])
            selected_epoch = int(best["epoch"])
        self.emit("evaluate_start", selected_epoch=selected_epoch, select=config.select)
        val_logits, val_labels = self.predict_split("val")
        test_logits, test_labels = self.predict_split("test")
        report: dict[str, Any] = {}
        if self.dist.is_main:
            with guard.critical():
                with self._writing():
                    self.writer.write_predictions(
                        val=Predictions(logits=val_logits, labels=val_labels),
                        test=Predictions(logits=test_logits, labels=test_labels),
                    )
                report = run_evaluation_report(test_logits, test_labels, run=self.folder)
                report["config"]["model"] = {"selected_epoch": selected_epoch, "select": config.select}
                with self._writing():
                    self.writer.write_report(EVALUATE_FILE, report)
        report = self.dist.broadcast(report)
        gammas = None
        gamma_tensor = getattr(self.loss, "gammas", None)
        if gamma_tensor is not None:
            gammas = [float(g) for g in torch.as_tensor(gamma_tensor).detach().cpu().flatten()]
        return TrainResult(
            run_dir=self.folder.root,
            epochs=config.epochs,
            select=config.select,
            selected_epoch=selected_epoch,
            test_metrics=report_metrics(report),
            val_metrics=validation_metrics(val_logits, val_labels),
            best_epoch=self.best_metric["epoch"] if self.best_metric else None,
            best_val_accuracy=self.best_metric["value"] if self.best_metric else None,
            gammas=gammas,
            seconds=time.perf_counter() - started,
            resumed_from=self.resumed_from,
            config=config.to_dict(),
            evaluate_report=report,
            rank=self.dist.rank,
        )
