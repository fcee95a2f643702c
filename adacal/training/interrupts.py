"""Ctrl-C and SIGTERM during training: `InterruptGuard` decides when a signal may stop the loop (held during
checkpoint writes, deferred to the next batch boundary during the training batches), and `TrainingInterrupted` says
where training stopped, what was saved and the command that resumes it.

Interrupts (Ctrl-C, SIGTERM) during the training batches of an epoch are deferred to the end of the current batch
(forward, backward, optimiser step and any per-N-batches γ-update): the loop then writes checkpoints/interrupted.pt —
the state after that batch: `epoch` = the last completed epoch, `partial_epoch` = {epoch, batch, loss_sum, correct,
seen, updates} (the epoch's totals and γ-update records so far), RNG states taken at that batch boundary — and raises
`TrainingInterrupted`, whose message names the file and the resume command. A second signal while one is pending stops
at once (checkpoints/last.pt still holds the last completed epoch). Outside the batches (validation, checkpoint writes
held until they finish, the final evaluation) an interrupt stops at once, with last.pt as the resume point.

Resuming a run folder uses interrupted.pt when its `epoch` equals last.pt's (otherwise it is stale, e.g. left by a
SIGKILL after the next epoch finished, and ignored) and continues its epoch at the next batch: `BatchLoader.iterate`
replays the order and augmentation draws, so the result is exactly that of an uninterrupted run. interrupted.pt is
deleted as soon as the next end-of-epoch last.pt is written; last.pt keeps meaning "the end of an epoch" (what
evaluate, calibrate, ood and plot read). Under torchrun (world_size > 1) ranks may be between different batches when a
signal arrives, so there is no mid-epoch checkpoint there: an interrupt stops at once and resuming repeats the
interrupted epoch from its start (exact too).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path
from typing import Any


class TrainingInterrupted(Exception):
    """Ctrl-C or SIGTERM stopped training; checkpoints/last.pt holds the last completed epoch and `saved` (when not
    None) the mid-epoch checkpoint written after batch `batch` of epoch `epoch`."""

    def __init__(
        self, *, run_dir: Path, epoch: int, batch: int, epochs: int, checkpoint_epoch: int, phase: str = "training",
        saved: Path | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.saved = Path(saved) if saved is not None else None
        self.epoch = epoch
        self.batch = batch
        self.epochs = epochs
        self.checkpoint_epoch = checkpoint_epoch
        self.phase = phase
        super().__init__(self.message)

    @property
    def resume_command(self) -> str:
        return f"adacal train --resume {self.run_dir} --epochs {self.epochs}"

    @property
    def message(self) -> str:
        """One line: where training stopped, which checkpoint holds what the resume starts from, the command.

        Mid-epoch with interrupted.pt saved: "Interrupted at epoch E batch B; saved RUN/checkpoints/interrupted.pt;
        ...". Between epochs (during a checkpoint write, before an epoch's first batch): "Interrupted after epoch C;
        RUN/checkpoints/last.pt holds it; ...". Within an epoch without a mid-epoch checkpoint (a second signal, its
        validation pass, torchrun): last.pt's epoch C, so that epoch E is trained again."""
        last = self.run_dir / "checkpoints" / "last.pt"
        if self.phase == "evaluation":
            where = f"during the final evaluation after epoch {self.checkpoint_epoch}"
        elif self.saved is not None:
            where = f"at epoch {self.epoch} batch {self.batch}; saved {self.saved}"
        elif self.checkpoint_epoch >= self.epoch or (self.phase == "training" and self.batch == 0):
            where = (f"after epoch {self.checkpoint_epoch}; {last} holds it" if self.checkpoint_epoch
                     else f"before epoch 1; {last} holds the initial weights")
        else:
            at = (f"at the end of epoch {self.epoch}, before its checkpoint was written" if self.phase == "validation"
                  else f"at epoch {self.epoch} batch {self.batch}")
            where = f"{at}; {last} holds epoch {self.checkpoint_epoch}, so epoch {self.epoch} is trained again"
        return f"Interrupted {where}; resume with: {self.resume_command}"


class InterruptGuard:
    """SIGINT/SIGTERM raise KeyboardInterrupt in the main loop, except inside `critical()` (checkpoint writes), where
    they are held until the write has finished, and inside `deferring()` (the training batches), where the first one
    only sets `pending` for the loop to act on at a batch boundary and a second one raises at once."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._depth = 0
        self._deferring = False
        self._pending = False

    @property
    def pending(self) -> bool:
        return self._pending

    def __enter__(self) -> InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    self._previous[signum] = signal.signal(signum, self._handle)
                except (ValueError, OSError):  # pragma: no cover - platforms without the signal
                    pass
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self._depth or (self._deferring and not self._pending):
            self._pending = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferring(self):
        """Signals set `pending` instead of raising (a second one raises); a signal still pending when the block ends
        normally raises KeyboardInterrupt then."""
        self._deferring = True
        try:
            yield
        except BaseException:
            self._pending = False
            raise
        finally:
            self._deferring = False
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def critical(self):
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._pending:
                self._pending = False
                raise KeyboardInterrupt
