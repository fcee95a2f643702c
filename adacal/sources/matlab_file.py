"""Reading MATLAB / Octave `.mat` files (v4 to v7, as `save` writes them) through scipy.io, without pickle.

Variables are listed with `scipy.io.whosmat`, which reads their headers only; a variable is loaded (decompressed) only
when asked for, after its declared size is checked against memory, so a small compressed file cannot expand past the
budget. Numeric and logical arrays, and char arrays (class names), are read; cell arrays and structs are refused by
name. v7.3 files are HDF5, which needs a library outside adacal's dependencies: they are refused with what to do.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from adacal.errors import InputError
from adacal.sources.files import NamedArrayFile, check_allocation, check_declared_shape, open_regular

# Bytes per element of each MATLAB class scipy reads (char: up to 4 bytes per character once decoded).
CLASS_BYTES = {
    "double": 8, "single": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
    "uint64": 8, "logical": 1, "char": 4,
}
NUMERIC_CLASSES = frozenset(CLASS_BYTES) - {"char"}
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
OCTAVE_TEXT = b"# Created by Octave"
_BUILTIN_ERRORS = (ValueError, TypeError, OSError, EOFError, KeyError, IndexError, OverflowError, MemoryError,
                   UnicodeDecodeError)


def _scipy_errors() -> tuple[type[BaseException], ...]:
    """What scipy.io raises for a damaged file: builtin errors and its own MatReadError (an Exception, not a
    ValueError)."""
    from scipy.io.matlab import MatReadError

    return (*_BUILTIN_ERRORS, MatReadError)


class MatFile(NamedArrayFile):
    """The variables of one .mat file by name, each read when asked for."""

    def __init__(self, path: str | os.PathLike, what: str = "a .mat file") -> None:
        from scipy.io import whosmat

        self.path = Path(path)
        self._handle = open_regular(self.path, what)
        try:
            listed = whosmat(self._handle)
        except NotImplementedError:
            self._handle.close()
            raise InputError(
                f"Expected {self.path} to be a MATLAB file of version 7 or earlier, but it is a v7.3 file (HDF5), "
                "which adacal does not read: save it with save(path, ..., '-v7') in MATLAB (Octave: '-v7')."
            ) from None
        except _scipy_errors() as exc:
            self._handle.seek(0)
            start = self._handle.read(32)
            self._handle.close()
            if start.startswith(HDF5_SIGNATURE):
                # HDF5 without MATLAB's 512-byte preamble: Octave's `save -hdf5`, h5py, hdf5storage.
                raise InputError(
                    f"Expected {self.path} to be a MATLAB file of version 7 or earlier, but it is an HDF5 file, "
                    "which adacal does not read: save it with save(path, ..., '-v7') in MATLAB (Octave: '-v7'), or "
                    "with scipy.io.savemat in Python."
                ) from None
            if start.lstrip().startswith(OCTAVE_TEXT):
                raise InputError(
                    f"Expected {self.path} to be a binary MATLAB file, but it is in Octave's text format (what "
                    "Octave's save writes by default), which adacal does not read: save it with save('-v7', path, ...)."
                ) from None
            raise InputError(
                f"Expected {self.path} to be a readable .mat file, but it is not ({exc.__class__.__name__})."
            ) from None
        self._index = {name: (tuple(shape), kind) for name, shape, kind in listed}

    def __getitem__(self, key: str) -> np.ndarray:
        from scipy.io import loadmat

        shape, kind = self._index[key]
        if kind not in CLASS_BYTES:
            raise InputError(
                f"Expected {self.path}:{key} to be a numeric, logical or char array, got a MATLAB {kind}: save the "
                "scores and labels as plain arrays."
            )
        # The dimensions a header declares (int32 in the format, so a damaged one may be negative) are checked before
        # anything is read: non-negative, and within memory on their own even when another one is 0.
        shape = check_declared_shape(shape, CLASS_BYTES[kind], what=f"{self.path}:{key}")
        check_allocation(math.prod(shape) * CLASS_BYTES[kind], what=f"{self.path}:{key}")
        self._handle.seek(0)
        try:
            value = loadmat(self._handle, variable_names=[key], chars_as_strings=True)[key]
        except _scipy_errors() as exc:
            raise InputError(
                f"Expected {self.path} to be a readable .mat file, but {key!r} could not be read "
                f"({exc.__class__.__name__})."
            ) from None
        if kind == "char":
            # A char matrix reads as one string per row (MATLAB pads names with spaces to a common length).
            return np.array([str(row).rstrip() for row in np.atleast_1d(value)])
        value = np.asarray(value)
        if self._row_vector(key):
            return value.reshape(-1)
        return value

    def _row_vector(self, key: str) -> bool:
        """Whether `key` is a vector MATLAB stored as a row (1, n): scipy's savemat writes every 1-D array so, and
        MATLAB's own vectors are often rows. Read as 1-D when another variable has n rows or is a row of n too (labels
        beside (n, K) scores, binary scores beside labels); a lone (1, K) is one sample's scores."""
        shape, _ = self._index[key]
        if len(shape) != 2 or shape[0] != 1 or shape[1] < 2:
            return False
        n = shape[1]
        return any(other != key and kind in NUMERIC_CLASSES and len(dims) == 2 and (dims[0] == n or dims == (1, n))
                   for other, (dims, kind) in self._index.items())
