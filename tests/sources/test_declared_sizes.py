"""Declared sizes in array headers (.npy, .npz, .safetensors, .mat, .pt), checked dimension by dimension before
anything is allocated.

A shape such as (0, 10**30) declares 0 bytes, so a check of the product alone passes it, and numpy then fails with a
traceback (OverflowError, "array is too big"). Every reader must refuse such shapes, and negative or non-integer
dimensions, in one line naming the file, the key and the shape; an empty array whose other dimensions do fit is still
read, as the empty array it is. Each case also goes through `adacal evaluate` (exit 2, one `Error:` line).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.cli import app
from adacal.errors import CheckpointError, InputError
from adacal.sources.files import MAX_NDIM, NpzArchive, check_declared_shape, read_npy, safe_torch_load
from adacal.sources.matlab_file import MatFile
from adacal.sources.safetensors_file import SafetensorsFile

from cli_helpers import one_line_error, runner

LIMIT = 16 << 20  # ADACAL_MEMORY_LIMIT for every test: (0, 3_000_000) float64 needs 24 MB > 16 MiB, (0, 1000) fits
HUGE = 10**30


@pytest.fixture(autouse=True)
def _memory_limit(monkeypatch):
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(LIMIT))


def _npy_bytes(shape, descr="<f8", body=b""):
    """An .npy file whose header declares `shape` (any tuple numpy's header writer takes), followed by `body`."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue() + body


def _npz(path: Path, **members: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for key, data in members.items():
            archive.writestr(f"{key}.npy", data)
    return path


def _safetensors(path: Path, header: dict, body: bytes = b"") -> Path:
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)
    return path


# Shapes no array of scores can have, though the product of their dimensions fits (it is 0).
EMPTY_BUT_HUGE = [(0, HUGE), (HUGE, 0), (0, 2**62), (3, 2**40, 0), (0, 3_000_000)]
NEGATIVE = [(0, -1), (-1, -1), (-3, 2)]


# ------------------------------------------------------------------------------------------------ the shared check


@pytest.mark.parametrize("shape", EMPTY_BUT_HUGE)
def test_every_dimension_of_an_empty_array_must_fit_in_memory(shape):
    with pytest.raises(InputError, match=r"Expected every dimension of f\.npy:k to fit in memory, but its shape "
                                         r"\(.*\) has dimensions besides the zero-length one"):
        check_declared_shape(shape, 8, what="f.npy:k")


@pytest.mark.parametrize("shape", [*NEGATIVE, (True, 3), (1.5, 2), ("3",), 3])
def test_negative_and_non_integer_dimensions_are_refused(shape):
    with pytest.raises(InputError, match=r"Expected f\.npy:k to declare a shape of non-negative integers"):
        check_declared_shape(shape, 8, what="f.npy:k")


def test_shapes_that_fit_are_returned_as_ints():
    assert check_declared_shape((0, 1000), 8, what="x") == (0, 1000)
    assert check_declared_shape([np.int64(5), 2], 8, what="x") == (5, 2)
    assert check_declared_shape((), 8, what="x") == ()
    # Bytes of a non-empty array are the caller's check (with its own message); dimensions alone are not refused here.
    assert check_declared_shape((10**6, 10**6), 8, what="x") == (10**6, 10**6)
    with pytest.raises(InputError, match=f"at most {MAX_NDIM} dimensions, got {MAX_NDIM + 1}"):
        check_declared_shape((1,) * (MAX_NDIM + 1), 8, what="x")
    # The item size counts even when it is 0 (an 'S0' or 'V0' dtype): at least one byte per element.
    with pytest.raises(InputError, match="every dimension"):
        check_declared_shape((0, HUGE), 0, what="x")


# ------------------------------------------------------------------------------------------------ .npy and .npz


@pytest.mark.parametrize("shape", EMPTY_BUT_HUGE)
def test_npy_and_npz_refuse_empty_shapes_with_huge_dimensions(tmp_path, shape):
    npy = tmp_path / "scores.npy"
    npy.write_bytes(_npy_bytes(shape))
    with pytest.raises(InputError, match=r"every dimension of .*scores\.npy \(float64\) to fit in memory") as info:
        read_npy(npy)
    assert str(tuple(shape)) in str(info.value) and "\n" not in str(info.value)
    npz = _npz(tmp_path / "p.npz", logits=_npy_bytes(shape), labels=_npy_bytes((0,), "<i8"))
    with NpzArchive(npz) as archive:
        assert archive["labels"].shape == (0,)  # the other member is still read
        with pytest.raises(InputError, match=r"every dimension of .*p\.npz:logits \(float64\) to fit in memory"):
            archive["logits"]


@pytest.mark.parametrize("shape", [*NEGATIVE, (True, 3)])
def test_npy_and_npz_refuse_negative_and_boolean_dimensions(tmp_path, shape):
    npy = tmp_path / "scores.npy"
    npy.write_bytes(_npy_bytes(shape, body=b"\0" * 64))
    with pytest.raises(InputError, match=r"scores\.npy \(float64\) to declare a shape of non-negative integers, got "
                                         + re_escape(str(tuple(shape)))):
        read_npy(npy)
    npz = _npz(tmp_path / "p.npz", logits=_npy_bytes(shape, body=b"\0" * 64))
    with NpzArchive(npz) as archive, pytest.raises(InputError, match=r"p\.npz:logits \(float64\) to declare a shape"):
        archive["logits"]


def test_npy_with_a_non_integer_dimension_is_a_damaged_header(tmp_path):
    npy = tmp_path / "scores.npy"
    npy.write_bytes(_npy_bytes((1.5, 2), body=b"\0" * 64))
    with pytest.raises(InputError, match=r"scores\.npy to be a readable \.npy array, but its header is not"):
        read_npy(npy)


def test_empty_arrays_that_fit_are_read_as_the_empty_arrays_they_are(tmp_path):
    np.save(tmp_path / "empty.npy", np.zeros((0, 1000)))
    assert read_npy(tmp_path / "empty.npy").shape == (0, 1000)
    np.savez(tmp_path / "empty.npz", logits=np.zeros((0, 1000), dtype=np.float32), labels=np.zeros(0, np.int64))
    with NpzArchive(tmp_path / "empty.npz") as archive:
        assert archive["logits"].shape == (0, 1000) and archive["logits"].dtype == np.float32
    np.save(tmp_path / "full.npy", np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(read_npy(tmp_path / "full.npy"), np.arange(6.0).reshape(2, 3))


# ------------------------------------------------------------------------------------------------ .safetensors


@pytest.mark.parametrize("shape", [[0, HUGE], [HUGE, 0], [0, 2**64], [0, 2**62, 2**62]])
def test_safetensors_refuses_empty_tensors_no_array_can_have_when_opened(tmp_path, shape):
    path = _safetensors(tmp_path / "p.safetensors", {"logits": {"dtype": "F32", "shape": shape,
                                                                "data_offsets": [0, 0]}})
    with pytest.raises(InputError, match=r"p\.safetensors to be a readable \.safetensors file, but tensor 'logits' "
                                         r"has shape .*whose dimensions no array can have"):
        SafetensorsFile(path)


def test_safetensors_refuses_an_empty_tensor_beyond_memory_when_it_is_read(tmp_path):
    path = _safetensors(tmp_path / "p.safetensors", {
        "logits": {"dtype": "F64", "shape": [0, 3_000_000], "data_offsets": [0, 0]},
        "empty": {"dtype": "F64", "shape": [0, 1000], "data_offsets": [0, 0]},
        "labels": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},
    }, np.array([1, 0], dtype="<i8").tobytes())
    with SafetensorsFile(path) as tensors:  # listing reads nothing
        np.testing.assert_array_equal(tensors["labels"], [1, 0])
        assert tensors["empty"].shape == (0, 1000)
        with pytest.raises(InputError, match=r"every dimension of .*p\.safetensors:logits to fit in memory, but its "
                                             r"shape \(0, 3000000\)"):
            tensors["logits"]


@pytest.mark.parametrize("shape, problem", [
    ([0, -1], "not a list of non-negative integers"),
    ([True, 2], "not a list of non-negative integers"),
    ([1.5, 2], "not a list of non-negative integers"),
    ([1] * (MAX_NDIM + 1), f"more than the {MAX_NDIM} adacal reads"),
])
def test_safetensors_refuses_bad_dimensions(tmp_path, shape, problem):
    path = _safetensors(tmp_path / "p.safetensors", {"x": {"dtype": "F32", "shape": shape, "data_offsets": [0, 4]}},
                        b"\0" * 4)
    with pytest.raises(InputError, match=re_escape(problem)):
        SafetensorsFile(path)


@pytest.mark.parametrize("offsets, problem", [
    ([0, HUGE], "needs 0 bytes but its data_offsets span 1,000,000,000,000,000,000,000,000,000,000"),
    ([HUGE, HUGE], "leave a gap or overlap at byte 0"),
    ([-8, 0], "not [begin, end] with 0 <= begin <= end"),
    ([8, 0], "not [begin, end] with 0 <= begin <= end"),
    ([0, 2**70], "needs 0 bytes"),
])
def test_safetensors_refuses_huge_negative_and_reversed_offsets(tmp_path, offsets, problem):
    path = _safetensors(tmp_path / "p.safetensors", {"x": {"dtype": "F32", "shape": [0], "data_offsets": offsets}})
    with pytest.raises(InputError, match=re_escape(problem)) as info:
        SafetensorsFile(path)
    assert "\n" not in str(info.value)


def test_safetensors_refuses_overlapping_tensors(tmp_path):
    path = _safetensors(tmp_path / "p.safetensors", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
                        b"\0" * 12)
    with pytest.raises(InputError, match="leave a gap or overlap at byte 8"):
        SafetensorsFile(path)


# ------------------------------------------------------------------------------------------------ .mat (scipy)


def _mat_with_dims(path: Path, dims: tuple[int, int]) -> Path:
    """A v5 .mat file whose variable `logits` (written as (0, 3) doubles) declares `dims` (int32 in the format)."""
    from scipy.io import savemat

    savemat(path, {"logits": np.zeros((0, 3)), "labels": np.zeros((1, 3))}, do_compression=False)
    data = bytearray(path.read_bytes())
    tag = data.find(struct.pack("<II", 5, 8), 128)  # the dimensions: miINT32, 8 bytes, of the first variable
    assert struct.unpack("<ii", data[tag + 8:tag + 16]) == (0, 3)
    data[tag + 8:tag + 16] = struct.pack("<ii", *dims)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("dims, message", [
    ((0, 2**31 - 1), r"every dimension of .*m\.mat:logits to fit in memory, but its shape \(0, 2147483647\)"),
    ((2**31 - 1, 0), r"every dimension of .*m\.mat:logits to fit in memory"),
    ((0, -5), r"m\.mat:logits to declare a shape of non-negative integers, got \(0, -5\)"),
    ((-1, -1), r"m\.mat:logits to declare a shape of non-negative integers, got \(-1, -1\)"),
])
def test_mat_refuses_declared_dimensions_before_scipy_reads_them(tmp_path, dims, message):
    with MatFile(_mat_with_dims(tmp_path / "m.mat", dims)) as variables:
        assert variables.files == ["logits", "labels"]
        with pytest.raises(InputError, match=message):
            variables["logits"]


def test_mat_empty_variable_that_fits_is_read(tmp_path):
    with MatFile(_mat_with_dims(tmp_path / "m.mat", (0, 3))) as variables:
        assert variables["logits"].shape == (0, 3)


# ------------------------------------------------------------------------------------------------ .pt


def test_pt_refuses_an_empty_tensor_with_a_huge_dimension(tmp_path):
    path = tmp_path / "p.pt"
    torch.save({"logits": torch.empty(0).as_strided((0, 2**62), (1, 1)), "labels": torch.zeros(0, dtype=torch.long)},
               path)
    with pytest.raises(CheckpointError, match=r"every dimension of 'logits' in .*p\.pt to fit in memory, but its "
                                              r"shape \(0, 4611686018427387904\)"):
        safe_torch_load(path)
    torch.save({"logits": torch.zeros(0, 1000)}, path)
    assert tuple(safe_torch_load(path)["logits"].shape) == (0, 1000)


# ------------------------------------------------------------------------------------------------ through the CLI


def _cli_cases(root: Path) -> dict[str, tuple[Path, str]]:
    cases = {}
    for i, shape in enumerate([(0, HUGE), (0, 2**62), (0, -1)]):
        cases[f"npy {shape}"] = (root / f"s{i}.npy", "every dimension" if shape[1] > 0 else "non-negative integers")
        cases[f"npy {shape}"][0].write_bytes(_npy_bytes(shape))
        np.save(root / f"s{i}_labels.npy", np.zeros(0, dtype=np.int64))
        cases[f"npz {shape}"] = (_npz(root / f"p{i}.npz", logits=_npy_bytes(shape), labels=_npy_bytes((0,), "<i8")),
                                 f"p{i}.npz:logits")
    cases["safetensors (0, 10**30)"] = (
        _safetensors(root / "p.safetensors", {"logits": {"dtype": "F32", "shape": [0, HUGE], "data_offsets": [0, 0]},
                                              "labels": {"dtype": "I64", "shape": [0], "data_offsets": [0, 0]}}),
        "whose dimensions no array can have")
    cases["safetensors offsets"] = (
        _safetensors(root / "o.safetensors", {"logits": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},
                                              "labels": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]}},
                     b"\0" * 16), "gap or overlap")
    cases["mat (0, -5)"] = (_mat_with_dims(root / "m.mat", (0, -5)), "m.mat:logits to declare a shape")
    cases["mat (0, 2**31 - 1)"] = (_mat_with_dims(root / "n.mat", (0, 2**31 - 1)), "every dimension of")
    torch.save({"logits": torch.empty(0).as_strided((0, 2**62), (1, 1)),
                "labels": torch.zeros(0, dtype=torch.long)}, root / "p.pt")
    cases["pt (0, 2**62)"] = (root / "p.pt", "every dimension of 'logits'")
    return cases


def test_evaluate_refuses_every_declared_shape_in_one_line(tmp_path):
    for name, (path, fragment) in _cli_cases(tmp_path).items():
        result = runner.invoke(app, ["evaluate", str(path)])
        line = one_line_error(result, fragment)
        assert str(path.name) in line, (name, line)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
