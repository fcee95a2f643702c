"""The one writer: every file adacal writes (reports, calibrators, figures, run-folder files) goes through `write_file`.

- A regular file (or a new one) is written to a temp file beside it and renamed over it: readers see the old or the
  new file, never half of one; a failed write leaves the old file and no temp file. A replaced file keeps its
  permissions; a new one gets 0o666 less the umask (both as `open(path, "w")` would).
- A symbolic link is written through: the temp file goes beside the link's final target, which is replaced; the link
  stays a link.
- A device, a FIFO or a `/dev/stdout`-like path is written directly (renaming over it would replace the device node or
  pipe with a regular file); `-` means standard output.
- Temp files left by a killed writer (SIGKILL, power loss) are removed by the next write to the same file; their name
  carries the writer's process id, so a write in progress in another live process is never touched.

`check_output` is the cheap check a command runs on each output path before any long work: a folder, a name longer
than the OS allows, one of the command's own inputs, or a file `adacal train` wrote in a run folder are refused (the
last two unless `force`).
"""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from adacal.errors import InputError

STDOUT = "-"
# Files `adacal train` writes in a run folder (and checkpoints/*.pt): other commands never replace them silently.
TRAIN_FILES = ("config.json", "history.jsonl", "predictions.npz", "evaluate.json", ".lock")
FIFO_WAIT_SECONDS = 10.0  # how long a FIFO output waits for a reader before the write is refused
_NAME_MAX_DEFAULT = 255


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import (single-threaded): changing the umask to read it is not thread-safe.
_FILE_MODE = 0o666 & ~_current_umask()


def is_stdout(path: str | os.PathLike | None) -> bool:
    return path is not None and str(path) == STDOUT


def _describe(flag: str | None, path: Any) -> str:
    return f"{flag} {path}" if flag else str(path)


def _existing_ancestor(path: Path) -> Path:
    probe = path
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    return probe


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(_existing_ancestor(folder), "PC_NAME_MAX"))
    except (OSError, ValueError):
        return _NAME_MAX_DEFAULT


def check_name_lengths(path: str | os.PathLike, flag: str | None) -> None:
    """Every component of `path` within the file system's name limit (ENAMETOOLONG otherwise, after the work); an
    empty path or one with a NUL byte (which no file system accepts) is refused too."""
    if not os.fspath(path):
        raise InputError(f"Expected {flag or 'the output path'} to be a file path, got an empty path.")
    if "\0" in str(path):
        raise InputError(
            f"Expected {flag or 'the output path'} to be a file path, got a path with a NUL byte: {str(path)!r}."
        )
    path = Path(path)
    limit = _name_max(path.parent if str(path.parent) else Path("."))
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            raise InputError(
                f"Expected {flag or 'the output path'} to have file and folder names of at most {limit} bytes, got a "
                f"name of {size} bytes ({part[:24]}...)."
            )


def _is_special(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


def _direct_path(path: Path) -> bool:
    """Paths written in place: devices, FIFOs and /dev/stdout-like names (/dev/fd/N, /proc/self/fd/N)."""
    text = str(path)
    if text.startswith(("/dev/fd/", "/dev/stdout", "/dev/stderr", "/proc/self/fd/", "/proc/thread-self/fd/")):
        return True
    try:
        return _is_special(os.stat(path).st_mode)
    except OSError:
        return False


def _link_loop(path: Path) -> bool:
    """Whether `path` is a symbolic link whose chain of links comes back on itself (ELOOP)."""
    if not os.path.islink(path):
        return False
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def train_file(path: str | os.PathLike) -> bool:
    """Whether `path` is an existing file that `adacal train` wrote in a run folder."""
    from adacal.runs import CONFIG_FILE, CHECKPOINT_DIR

    real = Path(os.path.realpath(path))
    if not real.is_file():
        return False
    if real.name in TRAIN_FILES and (real.parent / CONFIG_FILE).is_file():
        return True
    return real.suffix == ".pt" and real.parent.name == CHECKPOINT_DIR and (real.parent.parent / CONFIG_FILE).is_file()


def _same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """The same file under two names (a hard link too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str | os.PathLike | None,
    *,
    flag: str | None = None,
    inputs: Iterable[str | os.PathLike | None] = (),
    force: bool = False,
) -> None:
    """Refuse, before any work, an output path that cannot or must not be written (see the module docstring)."""
    if path is None or is_stdout(path):
        return
    check_name_lengths(path, flag)  # first: stat() on a too-long name raises (and Path("") would be ".")
    path = Path(path)
    where = _describe(flag, path)
    if path.is_dir():
        raise InputError(f"Expected {flag or 'the output'} to be a file path, but {path} is a folder.")
    if _link_loop(path):
        raise InputError(f"Expected {flag or 'the output'} to be a file path, but {path} is a symbolic link loop.")
    if os.path.lexists(path) and not path.is_file() and not _direct_path(path):
        try:
            kind = "a socket" if stat.S_ISSOCK(os.stat(path).st_mode) else "not a regular file"
        except OSError:
            kind = "a broken link"
        if kind != "a broken link":
            raise InputError(f"Expected {flag or 'the output'} to be a file path, but {path} is {kind}.")
    if _direct_path(path):
        return
    if not force:
        real = os.path.realpath(path)
        for given in inputs:
            if given is None or is_stdout(given):
                continue
            if os.path.exists(given) and (os.path.realpath(given) == real or _same_file(given, path)):
                raise InputError(
                    f"Refusing to write {where}: it is one of this command's inputs (give --force to replace it)."
                )
        if train_file(path):
            raise InputError(
                f"Refusing to write {where}: 'adacal train' wrote it in a run folder (give --force to replace it)."
            )
    ancestor = _existing_ancestor(Path(os.path.realpath(path)).parent)
    if not ancestor.is_dir():
        raise InputError(f"Cannot write {where}: {ancestor} is not a folder.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"Cannot write {where}: permission denied in {ancestor}.")


# ---------------------------------------------------------------------------------------------------------------------
# writing


def _temp_prefix(name: str, limit: int) -> str:
    """`.<name>.<pid>.`, the name shortened so that the temp name (with mkstemp's 8 characters and .tmp) fits."""
    pid = str(os.getpid())
    room = max(8, limit - len(pid) - 8 - 4 - 3 - 8)
    short = os.fsdecode(os.fsencode(name)[:room]) if len(os.fsencode(name)) > room else name
    return f".{short}.{pid}."


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# The temp names write_file makes: "." + target name + "." + writer's pid + "." + mkstemp's 8 characters + ".tmp".
TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[a-z0-9_]{8}\.tmp$", re.IGNORECASE)


def remove_dead_writers_temp_files(folder: str | os.PathLike, *, suffixes: tuple[str, ...]) -> list[Path]:
    """Delete the temp files in `folder` of targets ending in one of `suffixes` whose writer process is gone (a
    killed command's leftovers); return them. Temp files of live writers are left alone."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = TEMP_NAME.match(entry.name)
        if match is None or not match["target"].lower().endswith(suffixes):
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or pid_alive(pid) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def remove_stale_temp_files(path: str | os.PathLike) -> None:
    """Delete `.<name>.<pid>.*.tmp` files beside `path` whose writer process is gone."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return
    limit = _name_max(folder)
    stem = _temp_prefix(path.name, limit).rsplit(".", 2)[0]  # `.<name>` without the pid
    # The whole name is matched: `.a.json.5.<pid>.<8>.tmp` belongs to a target `a.json.5`, not to `a.json` (pid 5).
    own = re.compile(re.escape(stem) + r"\.(\d+)\.[a-z0-9_]{8}\.tmp", re.IGNORECASE)
    for leftover in glob.glob(os.path.join(glob.escape(str(folder)), glob.escape(stem) + ".*.tmp")):
        match = own.fullmatch(os.path.basename(leftover))
        if match is None:
            continue
        middle = match.group(1)
        if int(middle) != os.getpid() and not pid_alive(int(middle)):
            try:
                os.unlink(leftover)
            except OSError:
                pass


def _open_direct(path: Path, binary: bool) -> Any:
    """Open a device, FIFO or /dev/stdout-like path for writing without replacing it; a FIFO nobody reads is refused
    after FIFO_WAIT_SECONDS instead of blocking for ever."""
    flags = os.O_WRONLY
    try:
        is_fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        is_fifo = False
    if is_fifo:
        deadline = time.monotonic() + FIFO_WAIT_SECONDS
        while True:
            try:
                fd = os.open(path, flags | os.O_NONBLOCK)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                if time.monotonic() > deadline:
                    raise InputError(
                        f"Cannot write {path}: it is a FIFO and no process opened it for reading within "
                        f"{FIFO_WAIT_SECONDS:g} seconds."
                    ) from None
                time.sleep(0.05)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    else:
        try:
            fd = os.open(path, flags | os.O_TRUNC)
        except OSError:
            fd = os.open(path, flags)  # devices that refuse O_TRUNC
    return os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8")


def write_file(path: str | os.PathLike, write: Callable[[Any], None], *, binary: bool = False) -> Path:
    """Write through `write(file)`: `-` to stdout, devices and FIFOs in place, everything else atomically (a temp file
    in the final target's folder, then `os.replace`), symbolic links written through. OSError becomes InputError."""
    if is_stdout(path):
        stream = sys.stdout.buffer if binary else sys.stdout
        write(stream)
        stream.flush()
        return Path(STDOUT)
    check_name_lengths(path, None)  # first: stat() on a too-long name raises (and Path("") would be ".")
    path = Path(path)
    try:
        if path.is_dir():
            raise InputError(f"Expected {path} to be a file path, but it is a folder.")
        if _direct_path(path):
            with _open_direct(path, binary) as handle:
                write(handle)
                handle.flush()
            return path
        if _link_loop(path):  # realpath() would give the link itself, and the rename would replace it
            raise InputError(f"Expected {path} to be a file path, but it is a symbolic link loop.")
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        if target.is_dir():
            raise InputError(f"Expected {path} to be a file path, but it links to a folder.")
        check_name_lengths(target, None)
        directory = target.parent if str(target.parent) else Path(".")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"Cannot write {path}: cannot create the folder {directory} "
                             f"({exc.strerror or exc}).") from None
        remove_stale_temp_files(target)
        mode = _FILE_MODE
        if target.is_file():  # replacing a file keeps its permissions, as open(path, "w") would
            mode = stat.S_IMODE(os.stat(target).st_mode)
        fd, tmp_name = tempfile.mkstemp(
            prefix=_temp_prefix(target.name, _name_max(directory)), suffix=".tmp", dir=directory
        )
    except OSError as exc:
        raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None
        raise
    return path


__all__ = ["STDOUT", "TRAIN_FILES", "check_name_lengths", "check_output", "is_stdout", "remove_stale_temp_files",
           "train_file", "write_file"]
