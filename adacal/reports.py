"""JSON reports and safe file I/O: nothing adacal writes is ever left half-written, nothing it reads can run code."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from adacal import __version__
from adacal.errors import CheckpointError, InputError

SCHEMA_VERSION = 1


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def to_jsonable(value: Any) -> Any:
    """Plain JSON types from numpy/torch scalars and arrays; non-finite floats become None (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import (single-threaded): changing the umask to read it is not thread-safe.
_FILE_MODE = 0o666 & ~_current_umask()


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], *, binary: bool = False) -> Path:
    """Write through `write(file)` into a temp file beside `path`, then rename over it: readers see old or new, never half.

    The file gets the permissions a plain `open(path, "w")` would give (0o666 less the umask), not the temp file's 0o600.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"Cannot write {path}: {exc.strerror or exc}.") from None
        raise
    return path


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n"
    return atomic_write(path, lambda handle: handle.write(text))


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    import torch

    return atomic_write(path, lambda handle: torch.save(obj, handle), binary=True)


def safe_torch_load(path: str | os.PathLike, *, what: str = "torch file") -> Any:
    """`torch.load(weights_only=True)` on the CPU of a regular file: see `adacal.sources.files.safe_torch_load`."""
    from adacal.sources.files import safe_torch_load as load

    return load(path, what=what)


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_report(
    kind: str,
    *,
    config: dict[str, Any],
    results: dict[str, Any],
    input_path: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """The common envelope of every JSON report adacal writes."""
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "adacal_version": __version__,
        "created": utc_now(),
    }
    if input_path is not None:
        report["input"] = {"path": str(input_path), "sha256": file_sha256(input_path)}
    report["config"] = config
    report["results"] = results
    return report


def read_json(path: str | os.PathLike) -> Any:
    """A JSON document, parsed strictly with limits: see `adacal.sources.documents.read_json`."""
    from adacal.sources.documents import read_json as read

    return read(path)


def read_report(path: str | os.PathLike, kind: str | None = None) -> dict[str, Any]:
    """An adacal report, its envelope, kind (when given) and schema checked: see `adacal.sources.documents`."""
    from adacal.sources.documents import read_report as read

    return read(path, kind)


def new_run_dir(root: str | os.PathLike, name: str) -> Path:
    """Create a fresh run folder `root/name`, adding -2, -3, ... when taken; never reuses an existing one."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"Cannot create the output folder {root}: {exc.strerror or exc}.") from None
    if not os.access(root, os.W_OK):
        raise InputError(f"Cannot write to the output folder {root}: permission denied.")
    for attempt in range(1, 1000):
        candidate = root / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            candidate.mkdir()  # atomic: two runs racing for one name cannot both succeed
            return candidate
        except FileExistsError:
            continue
    raise InputError(f"Cannot create a run folder under {root}: too many folders named {name}.")
