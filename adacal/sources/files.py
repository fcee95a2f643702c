"""Opening a path a user typed: only regular files, sizes checked against memory before anything is allocated.

Every reader in adacal opens files through `open_regular`: a FIFO, socket or device is refused from its `stat`
(and the descriptor is opened non-blocking and checked again, so a path swapped for a FIFO in between cannot hang
the command). Array containers (.npz, .npy, .pt) have their declared sizes compared with the memory this machine has
before a byte is decompressed, and only the members a caller asks for are ever read.
"""

from __future__ import annotations

import math
import os
import stat
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from adacal.errors import CheckpointError, InputError
from adacal.memory import available_memory

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)
# Largest npy header numpy itself reads by default (np.lib.format), for the same reason: a header is metadata.
MAX_NPY_HEADER = 10_000
# Most dimensions a declared shape may have: numpy 1.x's limit (NPY_MAXDIMS; numpy 2 allows 64). Arrays of scores and
# labels have one or two; a header declaring more is damaged or not an array adacal reads.
MAX_NDIM = 32


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def memory_budget() -> int:
    """Bytes one array may take: `adacal.memory.available_memory` (the memory available now, lowered by
    `ADACAL_MEMORY_LIMIT`)."""
    return available_memory()


def check_allocation(nbytes: int, *, what: str) -> None:
    """Refuse to allocate `nbytes` for `what` when this machine does not have that much memory available."""
    budget = memory_budget()
    if nbytes > budget:
        raise InputError(
            f"Expected {what} to fit in memory, but it would need {human_bytes(nbytes)} and "
            f"{human_bytes(budget)} is available."
        )


def _shown_shape(shape: Any) -> str:
    """A declared shape as a message shows it: a tuple, cut short when a hostile header lists many dimensions."""
    text = str(tuple(shape)) if isinstance(shape, (list, tuple)) else repr(shape)
    return text if len(text) <= 120 else text[:117] + "..."


def check_declared_shape(shape: Any, itemsize: int, *, what: str, budget: int | None = None,
                         error: type[InputError] = InputError) -> tuple[int, ...]:
    """`shape` as a tuple of ints when a file may declare it for `what` ("FILE:KEY"), checked before anything is
    allocated: every dimension a non-negative integer (not a bool), at most `MAX_NDIM` of them, and the dimensions of
    an empty array within memory all the same.

    The memory an array needs is the caller's check (its own words: "it would need ..."); but an array with a
    zero-length dimension needs 0 bytes whatever its other dimensions declare, and numpy fails on (0, 10**30) or
    (0, 2**62) with a traceback (OverflowError, "array is too big") after such a check passed. So here the non-zero
    dimensions times the item size (at least 1 byte) must be within `budget` (default `memory_budget()`, never above
    the largest array index) even when another dimension is 0.
    """
    if not isinstance(shape, (list, tuple)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in shape):
        raise error(f"Expected {what} to declare a shape of non-negative integers, got {_shown_shape(shape)}.")
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise error(f"Expected {what} to declare a shape of non-negative integers, got {_shown_shape(dims)}.")
    if len(dims) > MAX_NDIM:
        raise error(f"Expected {what} to declare at most {MAX_NDIM} dimensions, got {len(dims)}.")
    if 0 in dims:
        limit = min(memory_budget() if budget is None else budget, int(np.iinfo(np.intp).max))
        span = math.prod(d for d in dims if d) * max(int(itemsize), 1)
        if span > limit:
            raise error(
                f"Expected every dimension of {what} to fit in memory, but its shape {_shown_shape(dims)} has "
                f"dimensions besides the zero-length one that would need {human_bytes(span)} and {human_bytes(limit)} "
                "is available: its header is damaged."
            )
    return dims


def _describe_stat(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None


def _os_error(path: Path, exc: OSError, what: str) -> InputError:
    reason = (exc.strerror or exc.__class__.__name__).lower()
    return InputError(f"Cannot read {what} {path}: {reason}.")


def check_regular_file(path: str | os.PathLike, what: str = "a file", *, error: type[InputError] = InputError) -> Path:
    """`path` when it is an existing regular file (symlinks followed); otherwise one sentence saying what it is."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"Expected {what} at {path}, but it does not exist.") from None
    except NotADirectoryError:
        raise error(f"Expected {what} at {path}, but a part of that path is a file, not a folder.") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError):  # an embedded NUL byte
            raise error(f"Expected {what} at {str(path)!r}, but that is not a valid path.") from None
        raise error(str(_os_error(path, exc, what))) from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"Expected {what} at {path}, but it is a folder.")
    kind = _describe_stat(info.st_mode)
    if kind is not None or not stat.S_ISREG(info.st_mode):
        raise error(f"Expected {what} at {path} to be a regular file, but it is {kind or 'not one'}.")
    return path


def open_regular(path: str | os.PathLike, what: str = "a file", *, error: type[InputError] = InputError) -> IO[bytes]:
    """A binary file object for the regular file at `path`; never blocks on a FIFO or device.

    The path is checked with `stat`, opened with O_NONBLOCK (opening a FIFO without a writer would otherwise wait
    forever) and checked again with `fstat` on the descriptor, so nothing but a regular file is ever read.
    """
    path = check_regular_file(path, what, error=error)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise error(str(_os_error(path, exc, what))) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _describe_stat(info.st_mode) or ("a folder" if stat.S_ISDIR(info.st_mode) else "not one")
            raise error(f"Expected {what} at {path} to be a regular file, but it is {kind}.")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike, what: str = "a file", *, limit: int,
               error: type[InputError] = InputError) -> bytes:
    """The whole regular file, refused when larger than `limit` bytes (a text document has no business being huge)."""
    with open_regular(path, what, error=error) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(f"Expected {what} at {path} to be at most {human_bytes(limit)}, but it is larger.")
    return data


# ---------------------------------------------------------------------------------------------------- npy / npz


def _npy_header(handle: IO[bytes], label: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, data bytes) from the header of an .npy stream, reading nothing else."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(handle, max_header_size=MAX_NPY_HEADER)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(handle, max_header_size=MAX_NPY_HEADER)
        else:
            raise ValueError(f"unsupported version {version}")
    except (ValueError, EOFError, OSError, SyntaxError, TypeError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(f"Expected {label} to be a readable .npy array, but its header is not "
                         f"({exc.__class__.__name__}).") from None
    if dtype.hasobject:
        raise InputError(
            f"Expected {label} to be a readable .npz/.npy array of numbers, but it holds Python objects (dtype "
            f"{dtype}), which need pickle to load and could run code."
        )
    dims = check_declared_shape(shape, dtype.itemsize, what=f"{label} ({dtype})")
    return dims, bool(fortran), dtype, math.prod(dims) * dtype.itemsize


def _read_npy_body(handle: IO[bytes], shape: tuple[int, ...], dtype: np.dtype, nbytes: int, label: str) -> np.ndarray:
    """The array whose header `_npy_header` checked, read by numpy from the start of `handle` once the memory it
    needs is known to be there (numpy allocates the array, then fills it: nothing is read twice)."""
    check_allocation(nbytes, what=f"{label} (shape {shape}, {dtype})")
    try:
        handle.seek(0)
        return np.lib.format.read_array(handle, allow_pickle=False, max_header_size=MAX_NPY_HEADER)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError) as exc:
        raise InputError(
            f"Expected {label} to hold the {human_bytes(nbytes)} its header declares (shape {shape}), but it is "
            f"truncated or corrupt ({exc.__class__.__name__})."
        ) from None


def read_npy(path: str | os.PathLike, what: str = "an .npy array") -> np.ndarray:
    """One .npy array (no pickles), its declared size checked against the file and the memory before reading."""
    path = Path(path)
    with open_regular(path, what) as handle:
        shape, fortran, dtype, nbytes = _npy_header(handle, str(path))
        available = os.fstat(handle.fileno()).st_size - handle.tell()
        if nbytes > available:
            raise InputError(
                f"Expected {path} to hold the {human_bytes(nbytes)} its header declares (shape {shape}), "
                f"but it holds {human_bytes(max(available, 0))}: the file is truncated or its header is wrong."
            )
        return _read_npy_body(handle, shape, dtype, nbytes, str(path))


_File = TypeVar("_File", bound="NamedArrayFile")


class NamedArrayFile:
    """A file of named arrays, each read when asked for: the protocol `.npz`, `.mat` and `.safetensors` readers share.

    A subclass opens `_handle` (through `open_regular`), fills `_index` (name -> what its `__getitem__` needs to read
    that array) and defines `__getitem__`; listing names reads no array data. Use it as a context manager.
    """

    _handle: IO[bytes]
    _index: dict[str, Any]

    @property
    def files(self) -> list[str]:
        return list(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __getitem__(self, key: str) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        self._handle.close()

    def __enter__(self: _File) -> _File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class NpzArchive(NamedArrayFile):
    """The arrays of an .npz file, read one key at a time: listing keys decompresses nothing, and each member's
    declared size (its npy header and its zip entry) is checked against the memory before it is decompressed."""

    def __init__(self, path: str | os.PathLike, what: str = "an .npz file") -> None:
        self.path = Path(path)
        self._handle = open_regular(self.path, what)
        try:
            self._zip = zipfile.ZipFile(self._handle)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            self._handle.close()
            raise InputError(f"Expected {self.path} to be a readable .npz file, but it is not "
                             f"({exc.__class__.__name__}).") from None
        self._index = {}
        for info in self._zip.infolist():
            name = info.filename
            key = name[:-4] if name.endswith(".npy") else name
            self._index.setdefault(key, info)

    def close(self) -> None:
        self._zip.close()
        super().close()

    def __getitem__(self, key: str) -> np.ndarray:
        info = self._index[key]
        label = f"{self.path}:{key}"
        if info.file_size > memory_budget():
            raise InputError(
                f"Expected {label} to fit in memory, but it would need {human_bytes(info.file_size)} uncompressed and "
                f"{human_bytes(memory_budget())} is available."
            )
        try:
            with self._zip.open(info) as member:
                shape, fortran, dtype, nbytes = _npy_header(member, label)
                header = member.tell() if member.seekable() else None
                if header is not None and nbytes > info.file_size - header:
                    raise InputError(
                        f"Expected {label} to hold the {human_bytes(nbytes)} its header declares (shape {shape}), "
                        f"but its zip entry holds {human_bytes(max(info.file_size - header, 0))}: the file is damaged "
                        "or its header is wrong."
                    )
                return _read_npy_body(member, shape, dtype, nbytes, label)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise InputError(f"Expected {self.path} to be a readable .npz file, but it is not "
                             f"({exc.__class__.__name__}).") from None


# ---------------------------------------------------------------------------------------------------- torch files

_TORCH_ERRORS = (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile, UnicodeDecodeError, KeyError,
                 AttributeError, TypeError, IndexError, MemoryError, OverflowError, RecursionError)


def _check_torch_zip(handle: IO[bytes], path: Path, what: str, error: type[InputError]) -> None:
    """A torch zip archive's entries, by their declared sizes: a member that would not fit is refused unread."""
    start = handle.tell()
    try:
        if not zipfile.is_zipfile(handle):
            return  # legacy (non-zip) torch format: torch.load checks it
        handle.seek(start)
        with zipfile.ZipFile(handle) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # torch.load reports the damage in its own words below
    finally:
        handle.seek(start)
    budget = memory_budget()
    if total > budget:
        raise error(
            f"Expected the {what} {path} to fit in memory, but its entries declare {human_bytes(total)} and "
            f"{human_bytes(budget)} is available."
        )


def _numpy_safe_globals() -> list[Any]:
    """What torch's weights-only unpickler needs to rebuild numpy arrays and scalars of numbers, booleans and strings
    (`torch.save({"logits": np_array})` is common): the array and scalar constructors and those dtype classes. Object
    arrays stay refused: their elements would be arbitrary pickled objects (and still need globals not listed here)."""
    kinds = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
             np.float16, np.float32, np.float64, np.str_, np.bytes_)
    return [np.ndarray, np.dtype, np.ndarray(0).__reduce__()[0], np.float64(0).__reduce__()[0],
            *{type(np.dtype(kind)) for kind in kinds}]


def _numpy_to_tensors(value: Any) -> Any:
    """Numeric numpy arrays and scalars inside a loaded structure as torch tensors (strings stay numpy arrays), so
    that readers see one kind of array whatever the file's author saved."""
    import torch

    if isinstance(value, dict):
        return {key: _numpy_to_tensors(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy_to_tensors(item) for item in value)
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biuf":
        return torch.from_numpy(np.array(value, copy=True))  # a writable, contiguous copy (0-d for a scalar)
    return value


def safe_torch_load(path: str | os.PathLike, *, what: str = "torch file",
                    error: type[InputError] = CheckpointError) -> Any:
    """`torch.load(weights_only=True)` on the CPU of a regular file; a pickle payload is refused, a damaged file is
    an `error`, and every tensor it holds is checked by `check_tensors`. numpy arrays of numbers, booleans or strings
    are allowed too (rebuilt by the same restricted unpickler) and numeric ones become tensors."""
    import pickle

    import torch

    path = Path(path)
    with open_regular(path, f"a {what}", error=error) as handle:
        _check_torch_zip(handle, path, what, error)
        try:
            with warnings.catch_warnings():
                # torch warns on stderr while validating sparse tensors: nothing may print ahead of the one line.
                warnings.simplefilter("ignore")
                with torch.serialization.safe_globals(_numpy_safe_globals()):
                    data = torch.load(handle, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as exc:
            # The weights-only unpickler names the global it refused; anything else is a damaged or foreign file.
            refused = ("unsupported global", "unsupported class", "allowlisted via")
            if any(phrase in str(exc).lower() for phrase in refused):
                raise error(
                    f"Refusing to load {path}: it holds Python objects other than tensors and plain values, "
                    "which could run code (adacal loads torch files with weights_only=True only)."
                ) from None
            raise error(f"Expected {path} to be a readable {what}, but it is truncated or corrupt "
                        "(UnpicklingError).") from None
        except _TORCH_ERRORS as exc:
            raise error(
                f"Expected {path} to be a readable {what}, but it is truncated or corrupt ({exc.__class__.__name__})."
            ) from None
    data = _numpy_to_tensors(data)
    check_tensors(data, path, error=error)
    return data


def check_tensors(value: Any, path: Path, *, error: type[InputError] = CheckpointError, max_depth: int = 32) -> None:
    """Every tensor inside `value` (nested dicts, lists, tuples) is a dense, strided tensor whose materialised size
    fits in memory: sparse, nested (ragged), quantized or meta tensors are refused, and so is a view (stride 0, an
    `expand`) that would need more memory than the machine has once copied."""
    import torch

    budget = memory_budget()
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > max_depth:
            raise error(f"Expected {path} to nest at most {max_depth} levels deep, but it nests deeper.")
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
        elif isinstance(item, torch.Tensor):
            name = f"'{where}' in {path}" if where else str(path)
            if item.layout != torch.strided or item.is_sparse:
                raise error(f"Expected {name} to be a dense tensor, got a {str(item.layout).replace('torch.', '')} "
                            "one.")
            if getattr(item, "is_nested", False):
                raise error(f"Expected {name} to be a dense tensor, got a nested (ragged) one.")
            if item.is_quantized or item.device.type == "meta":
                raise error(f"Expected {name} to be a plain tensor, got a "
                            f"{'quantized' if item.is_quantized else 'meta'} one.")
            nbytes = item.numel() * item.element_size()
            if nbytes > budget:
                raise error(
                    f"Expected {name} to fit in memory, but its shape {tuple(item.shape)} would need "
                    f"{human_bytes(nbytes)} and {human_bytes(budget)} is available."
                )
            # An empty tensor too: shape (0, 2**62) holds nothing, but numpy fails on it later with a traceback.
            check_declared_shape(tuple(item.shape), item.element_size(), what=name, budget=budget, error=error)
