"""Reading `.safetensors` files (Hugging Face's tensor format) without the safetensors package, and without pickle.

The format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N, N bytes of JSON
mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional "__metadata__" of
strings), then one byte buffer holding every tensor, little-endian and C-ordered, at those offsets. The whole header
is checked as the reference implementation checks it — offsets contiguous from 0 and covering the buffer to the end of
the file, each tensor's byte count equal to its shape times its dtype's size — before any tensor is read, and each
tensor is read only when asked for, after its size is checked against memory. A bfloat16 tensor is returned as a
torch bfloat16 tensor (numpy has no bfloat16), so that its probabilities get bfloat16's rounding tolerance downstream.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from adacal.errors import InputError
from adacal.sources.documents import parse_json
from adacal.sources.files import (
    MAX_NDIM, NamedArrayFile, check_allocation, check_declared_shape, human_bytes, open_regular,
)

# The reference implementation refuses headers above 100 MB: a header is metadata, never data.
MAX_HEADER_BYTES = 100_000_000
# safetensors dtype names → numpy dtypes (little-endian). BF16 is read as its raw 16 bits (see __getitem__).
DTYPES = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype("u1"), "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"),
    "U32": np.dtype("<u4"), "I32": np.dtype("<i4"),
    "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
}


# numpy's largest array index (and byte count): no array, not even an empty one, has dimensions past it.
_LARGEST_INDEX = int(np.iinfo(np.intp).max)


class SafetensorsFile(NamedArrayFile):
    """The tensors of one .safetensors file by name, as numpy arrays, each read when asked for."""

    def __init__(self, path: str | os.PathLike, what: str = "a .safetensors file") -> None:
        self.path = Path(path)
        self._handle = open_regular(self.path, what)
        try:
            self._size = os.fstat(self._handle.fileno()).st_size
            self.metadata, self._index, self._start = self._read_header()
        except BaseException:
            self._handle.close()
            raise

    def _fail(self, problem: str) -> InputError:
        return InputError(f"Expected {self.path} to be a readable .safetensors file, but {problem}.")

    def _read_header(self) -> tuple[dict[str, str], dict[str, tuple[np.dtype, str, tuple[int, ...], int, int]], int]:
        prefix = self._handle.read(8)
        if len(prefix) < 8:
            raise self._fail(f"it holds {len(prefix)} bytes, fewer than the 8 of its header length")
        length = int.from_bytes(prefix, "little")
        if length > MAX_HEADER_BYTES or 8 + length > self._size:
            raise self._fail(f"its header length ({length:,} bytes) runs past the file ({self._size:,} bytes) or "
                             f"above {MAX_HEADER_BYTES:,}")
        # parse_json bounds nesting and integer sizes (a hostile header must not recurse or hang the parser).
        header = parse_json(self._handle.read(length), label=f"the header of {self.path}")
        if not isinstance(header, dict):
            raise self._fail("its header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise self._fail("its __metadata__ is not a map of strings")
        entries = {}
        for name, entry in header.items():
            entries[name] = self._entry(name, entry)
        start = 8 + length
        # Offsets must tile the buffer from 0 to the end of the file, in some order, without gaps or overlaps.
        spans = sorted((begin, end) for _, _, _, begin, end in entries.values())
        position = 0
        for begin, end in spans:
            if begin != position:
                raise self._fail(f"its tensors' data_offsets leave a gap or overlap at byte {position:,}")
            position = end
        if start + position != self._size:
            raise self._fail(f"its tensors end at byte {start + position:,} but the file has {self._size:,} "
                             "(truncated, or trailing data)")
        return metadata, entries, start

    def _entry(self, name: str, entry: Any) -> tuple[np.dtype, str, tuple[int, ...], int, int]:
        if not isinstance(entry, dict):
            raise self._fail(f"the entry of tensor {name!r} is not an object")
        dtype_name, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype_name not in DTYPES:
            known = ", ".join(DTYPES)
            raise self._fail(f"tensor {name!r} has dtype {dtype_name!r}, which adacal does not read (it reads {known})")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise self._fail(f"tensor {name!r} has shape {_shown(shape)}, not a list of non-negative integers")
        if len(shape) > MAX_NDIM:
            raise self._fail(f"tensor {name!r} has {len(shape)} dimensions, more than the {MAX_NDIM} adacal reads")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            raise self._fail(f"tensor {name!r} has data_offsets {_shown(offsets)}, not [begin, end] with "
                             "0 <= begin <= end")
        dtype = DTYPES[dtype_name]
        if 0 in shape and math.prod(d for d in shape if d) * dtype.itemsize > _LARGEST_INDEX:
            # An empty tensor needs no bytes, but numpy cannot build (0, 10**30) either: the header is damaged. (The
            # memory its dimensions would need is checked when it is asked for, by `check_declared_shape`.)
            raise self._fail(f"tensor {name!r} has shape {_shown(shape)}, whose dimensions no array can have (the "
                             "product of the non-zero ones is past the largest array index)")
        expected = math.prod(shape) * dtype.itemsize
        if offsets[1] - offsets[0] != expected:
            raise self._fail(f"tensor {name!r} ({dtype_name}, shape {_shown(tuple(shape))}) needs {expected:,} bytes "
                             f"but its data_offsets span {offsets[1] - offsets[0]:,}")
        return dtype, dtype_name, tuple(shape), offsets[0], offsets[1]

    def __getitem__(self, key: str) -> Any:
        """The tensor `key`: a numpy array in native byte order, or a torch bfloat16 tensor for BF16."""
        dtype, dtype_name, shape, begin, end = self._index[key]
        nbytes = end - begin
        check_allocation(nbytes, what=f"{self.path}:{key}")
        check_declared_shape(shape, dtype.itemsize, what=f"{self.path}:{key}")  # an empty one's dimensions too
        self._handle.seek(self._start + begin)
        data = self._handle.read(nbytes)
        if len(data) != nbytes:  # the file shrank since its header was checked
            raise self._fail(f"tensor {key!r} holds {human_bytes(len(data))} of its {human_bytes(nbytes)}")
        array = np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))  # native, writable
        if dtype_name == "BF16":
            import torch

            return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        return array


def _shown(value: Any) -> str:
    """A header value as a message shows it: cut short (a hostile header may hold a long list or a huge number)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
