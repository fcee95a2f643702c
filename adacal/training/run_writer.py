"""The run-folder writer: every file `adacal train` writes in a run folder, and the lock that makes it the only one.

The counterpart of timm's `CheckpointSaver`, usable without training:

    writer = RunWriter(RunFolder(path))
    with writer.locked():                      # one process per run folder (fcntl.flock, released if it dies)
        writer.remove_stale_temp_files()
        writer.save_checkpoint("last", checkpoint)
        writer.append_history({"epoch": 1, ...})
        writer.write_config(report)
        writer.write_predictions(val=..., test=...)
        writer.write_report("evaluate.json", report)
        writer.discard_interrupted()

Checkpoints, config and reports are written atomically (temp file, then rename); a history line is appended and
fsync'ed, and a failed append (disk full) is cut back off so the file never ends in half a line. Under torchrun only
rank 0 writes: a writer made with `enabled=False` does nothing.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adacal.errors import InputError
from adacal.predictions import Predictions, save_split_predictions
from adacal.reports import to_jsonable, write_json
from adacal.runs import EVALUATE_FILE, RunFolder, run_id_of
from adacal.training.checkpoints import save_checkpoint

LOCK_FILE = ".lock"
INTERRUPTED = "interrupted"  # checkpoints/interrupted.pt: the mid-epoch checkpoint an interrupt writes
CHECKPOINTS = ("last", "best", INTERRUPTED)


class RunLockedError(InputError):
    """Another process holds the run folder's lock (a second `train --resume` of the same run)."""


class RunWriter:
    """Writes one run folder: checkpoints (last, best, interrupted), history.jsonl, config.json, predictions.npz and
    evaluate.json; holds the folder's lock while training."""

    def __init__(self, folder: RunFolder | str | os.PathLike, *, enabled: bool = True) -> None:
        self.folder = RunFolder(Path(folder.root if isinstance(folder, RunFolder) else folder))
        self.enabled = enabled
        # The run id of the config.json this writer wrote (`write_config`), stored in predictions.npz too.
        self.run_id: str | None = None
        self._lock_fd: int | None = None

    # ------------------------------------------------------------------------------------------------ the lock

    @property
    def lock_path(self) -> Path:
        return self.folder.root / LOCK_FILE

    def lock(self) -> None:
        """Take the run folder's exclusive lock, or fail at once when another process holds it.

        `fcntl.flock` on `<run>/.lock` (an empty file, never rewritten: taking the lock changes nothing in the
        folder): the OS releases it when the process exits or is killed, so a crashed run never leaves a stale lock."""
        if not self.enabled or self._lock_fd is not None:
            return
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"Cannot lock the run folder {self.folder.root}: {exc.strerror or exc}.") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunLockedError(
                    f"Expected no other 'adacal train' to be writing the run folder {self.folder.root}, but one is; "
                    "wait for it to finish, then resume."
                ) from None
            raise InputError(f"Cannot lock the run folder {self.folder.root}: {exc.strerror or exc}.") from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def locked_by_us(self) -> bool:
        return self._lock_fd is not None

    @contextlib.contextmanager
    def locked(self) -> Iterator[RunWriter]:
        self.lock()
        try:
            yield self
        finally:
            self.unlock()

    # ------------------------------------------------------------------------------------------------ files

    def save_checkpoint(self, which: str, checkpoint: dict[str, Any]) -> None:
        """checkpoints/<which>.pt, atomically."""
        if self.enabled:
            save_checkpoint(checkpoint, self.folder.checkpoint(which))

    def append_history(self, record: dict[str, Any]) -> None:
        """Append one line; a failed write (disk full) is cut back off, so the file never ends in half a line."""
        if not self.enabled:
            return
        line = json.dumps(to_jsonable(record), allow_nan=False) + "\n"
        path = self.folder.history
        size = path.stat().st_size if path.exists() else 0
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.truncate(path, size)
            raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None

    def write_config(self, report: dict[str, Any]) -> None:
        if self.enabled:
            write_json(self.folder.config, report)
            self.run_id = run_id_of(report)

    def write_predictions(self, *, val: Predictions, test: Predictions) -> None:
        if self.enabled:
            save_split_predictions(self.folder.predictions, run_id=self.run_id, val=val, test=test)

    def write_report(self, name: str, report: dict[str, Any]) -> None:
        if self.enabled:
            write_json(self.folder.report(name), report)

    def discard_interrupted(self) -> None:
        """A mid-epoch checkpoint is superseded once last.pt holds a later epoch end."""
        if self.enabled:
            with contextlib.suppress(FileNotFoundError):
                self.folder.checkpoint(INTERRUPTED).unlink()

    def written_files(self) -> list[Path]:
        return [self.folder.config, self.folder.history, self.folder.predictions, self.folder.report(EVALUATE_FILE),
                *(self.folder.checkpoint(which) for which in CHECKPOINTS)]

    def remove_stale_temp_files(self) -> None:
        """A run killed during a write (SIGKILL, power loss) leaves the temp file of that atomic write behind; the
        file it was replacing is intact, so the next writer deletes the leftover (the `.<name>.*.tmp` files of what
        train writes, nothing else). Call it while holding the lock: then no other writer of this folder is alive."""
        if not self.enabled:
            return
        for target in self.written_files():
            if target.parent.is_dir():
                for path in target.parent.glob(f".{target.name}.*.tmp"):
                    with contextlib.suppress(OSError):
                        path.unlink()


__all__ = ["RunWriter", "RunLockedError", "LOCK_FILE", "INTERRUPTED"]
