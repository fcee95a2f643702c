"""JSON reports: the envelope every report carries (`make_report`), strict JSON written through adacal's one writer
(`write_json`, `adacal.writing.write_file`: never left half-written), torch saves, and new run folders.

Reports are read back by `adacal.sources.documents.read_report`, which checks their envelope, kind and schema."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.version import __version__
from adacal.writing import check_name_lengths, write_file

SCHEMA_VERSION = 1
_NUMPY_FLOATS = ("torch.float16", "torch.float32", "torch.float64")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def to_jsonable(value: Any) -> Any:
    """Plain JSON types from numpy/torch scalars and arrays; non-finite floats become None (strict JSON has no NaN).
    Keys become strings; two keys that become the same string (1 and "1") are refused rather than one value lost."""
    if isinstance(value, Mapping):  # dicts and typed records such as adacal.losses.records.BinUpdate
        converted: dict[str, Any] = {}
        for key, item in value.items():
            text = str(key)
            if text in converted:
                raise InputError(
                    f"Expected the keys of a report mapping to be distinct as strings, got two keys written {text!r}."
                )
            converted[text] = to_jsonable(item)
        return converted
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if value.is_floating_point() and str(value.dtype) not in _NUMPY_FLOATS:
            value = value.float()  # bfloat16 and float8 have no numpy dtype
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """`obj` as strict JSON (`to_jsonable`), indented, written atomically by `adacal.writing.write_file` (`-`:
    stdout)."""
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n"
    return write_file(path, lambda handle: handle.write(text))


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """`torch.save(obj)` written atomically by `adacal.writing.write_file` (read back with
    `adacal.sources.files.safe_torch_load`)."""
    import torch

    return write_file(path, lambda handle: torch.save(obj, handle), binary=True)


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_sha256(path: str | os.PathLike) -> str:
    """A folder read as one input (lm-evaluation-harness samples): the sha256 of its sorted file list with sizes,
    "files-sha256:<hex>" (the files' bytes are not read: such folders run to gigabytes)."""
    root = Path(path)
    digest = hashlib.sha256()
    for file in sorted(item for item in root.rglob("*") if item.is_file()):
        digest.update(f"{file.relative_to(root).as_posix()}\t{file.stat().st_size}\n".encode())
    return f"files-sha256:{digest.hexdigest()}"


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
        try:
            digest = folder_sha256(input_path) if Path(input_path).is_dir() else file_sha256(input_path)
        except OSError as exc:
            raise InputError(
                f"Expected the report's input {input_path} to be a readable file, but it could not be read "
                f"({exc.strerror or exc})."
            ) from None
        report["input"] = {"path": str(input_path), "sha256": digest}
    report["config"] = config
    report["results"] = results
    return report


def _check_run_name(name: Any, unique: bool) -> None:
    """A run folder name is one plain folder name: not empty, no separator, not `.` or `..` (which would put the run
    outside --out, or make `root/name` the root itself)."""
    what = "--name" if not unique else "the run folder name"
    separators = {"/", os.sep, os.altsep} - {None}
    if (
        not isinstance(name, str) or not name.strip() or name in (".", "..") or "\0" in name
        or any(sep in name for sep in separators)
    ):
        raise InputError(f"Expected {what} to be a folder name (no '/', not '.' or '..'), got {name!r}.")


def new_run_dir(root: str | os.PathLike, name: str, *, unique: bool = True) -> Path:
    """Create a fresh run folder `root/name`; when taken, add -2, -3, ... (`unique`) or refuse (an explicit --name).
    Never reuses an existing folder."""
    root = Path(root)
    _check_run_name(name, unique)
    check_name_lengths(root / name, "--name" if not unique else None)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"Cannot create the output folder {root}: {exc.strerror or exc}.") from None
    if not os.access(root, os.W_OK):
        raise InputError(f"Cannot write to the output folder {root}: permission denied.")
    for attempt in range(1, 1000 if unique else 2):
        candidate = root / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            candidate.mkdir()  # atomic: two runs racing for one name cannot both succeed
            return candidate
        except FileExistsError:
            if not unique:
                raise InputError(
                    f"Expected --name {name} to be a new run folder, but {candidate} already exists (choose another "
                    f"--name, or continue that run with --resume {candidate})."
                ) from None
            continue
        except OSError as exc:
            # mkdir can fail where access() said the folder is writable (read-only mounts, ACLs, quotas).
            raise InputError(f"Cannot create the run folder {candidate}: {exc.strerror or exc}.") from None
    raise InputError(f"Cannot create a run folder under {root}: too many folders named {name}.")
