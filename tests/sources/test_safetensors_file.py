"""Reading .safetensors files (adacal.sources.safetensors_file) against bytes written here by hand from the format's
specification: an 8-byte little-endian header length, a JSON header, one little-endian C-ordered byte buffer."""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
import torch

from adacal.arrays import softmax
from adacal.errors import InputError
from adacal.evaluation import evaluate_predictions
from adacal.interpretation import load_predictions, load_split_predictions
from adacal.sources import ReadOptions
from adacal.sources.safetensors_file import SafetensorsFile


def _file(path, entries, *, metadata=None, pad=True, tail=b""):
    """entries: name -> (dtype name, shape, raw bytes), laid out in the order given."""
    header, offset, blobs = {}, 0, []
    for name, (dtype, shape, raw) in entries.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:  # the reference writer pads the header with spaces to a multiple of 8 bytes
        text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs) + tail)
    return path


def test_hand_written_bytes_of_every_dtype_read_back_exactly(tmp_path):
    entries = {
        "f64": ("F64", (2,), struct.pack("<2d", 0.1, -2.5)),
        "f32": ("F32", (2, 2), struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)),
        "f16": ("F16", (1,), bytes.fromhex("003c")),  # 0x3C00 = 1.0 in half precision
        "bf16": ("BF16", (3,), bytes.fromhex("803f0040" "80bf")),  # 0x3F80 = 1.0, 0x4000 = 2.0, 0xBF80 = -1.0
        "i64": ("I64", (3,), struct.pack("<3q", 0, 7, -3)),
        "i32": ("I32", (1,), struct.pack("<i", 123456)),
        "u8": ("U8", (4,), bytes([0, 1, 2, 255])),
        "bool": ("BOOL", (2,), bytes([1, 0])),
        "empty": ("F32", (0, 3), b""),
    }
    path = _file(tmp_path / "all.safetensors", entries, metadata={"format": "pt"})
    with SafetensorsFile(path) as tensors:
        assert tensors.files == list(entries) and tensors.metadata == {"format": "pt"}
        np.testing.assert_array_equal(tensors["f64"], [0.1, -2.5])
        assert tensors["f32"].dtype == np.float32 and tensors["f32"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert tensors["f16"].dtype == np.float16 and tensors["f16"].tolist() == [1.0]
        assert tensors["bf16"].dtype == torch.bfloat16 and tensors["bf16"].tolist() == [1.0, 2.0, -1.0]
        assert tensors["i64"].tolist() == [0, 7, -3] and tensors["i32"].tolist() == [123456]
        assert tensors["u8"].tolist() == [0, 1, 2, 255] and tensors["bool"].tolist() == [True, False]
        assert tensors["empty"].shape == (0, 3)
        tensors["f32"][0, 0] = 9.0  # a writable copy, not a view of the file's bytes


def test_tensors_laid_out_in_another_order_than_the_header_lists_them(tmp_path):
    """Offsets, not header order, place the data (the reference writer sorts by alignment, then name)."""
    labels, logits = struct.pack("<2q", 1, 0), struct.pack("<4f", 0.5, 1.5, 2.0, -1.0)
    header = {"logits": {"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 32]},
              "labels": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}}
    text = json.dumps(header).encode()
    (tmp_path / "o.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + labels + logits)
    pred = load_predictions(tmp_path / "o.safetensors")
    np.testing.assert_array_equal(pred.logits, [[0.5, 1.5], [2.0, -1.0]])
    np.testing.assert_array_equal(pred.labels, [1, 0])


def test_predictions_read_like_the_same_arrays_in_an_npz(tmp_path):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 60)
    path = _file(tmp_path / "p.safetensors", {"val_logits": ("F32", logits[:20].shape, logits[:20].tobytes()),
                                                "val_labels": ("I64", (20,), labels[:20].astype("<i8").tobytes()),
                                                "test_logits": ("F32", logits[20:].shape, logits[20:].tobytes()),
                                                "test_labels": ("I64", (40,), labels[20:].astype("<i8").tobytes())})
    np.savez(tmp_path / "p.npz", val_logits=logits[:20], val_labels=labels[:20], test_logits=logits[20:],
             test_labels=labels[20:])
    ours, reference = load_split_predictions(path), load_split_predictions(tmp_path / "p.npz")
    for split in ("val", "test"):
        np.testing.assert_array_equal(ours[split].logits, reference[split].logits)
        np.testing.assert_array_equal(ours[split].labels, reference[split].labels)


def test_bfloat16_probabilities_are_taken_as_probabilities(tmp_path):
    """bfloat16 rows sum to 1 only within ~1e-2: read as torch bfloat16, they get that tolerance, as a .pt would."""
    rng = np.random.default_rng(1)
    probs = torch.from_numpy(softmax(rng.normal(size=(200, 10)) * 2)).bfloat16()
    labels = rng.integers(0, 10, 200)
    path = _file(tmp_path / "bf.safetensors", {"probs": ("BF16", (200, 10), probs.view(torch.int16).numpy().tobytes()),
                                               "labels": ("I64", (200,), labels.astype("<i8").tobytes())})
    torch.save({"probs": probs, "labels": torch.from_numpy(labels)}, tmp_path / "bf.pt")
    ours, reference = load_predictions(path), load_predictions(tmp_path / "bf.pt")
    np.testing.assert_array_equal(ours.logits, reference.logits)
    assert evaluate_predictions(ours.logits, ours.labels)["assumed_input"] == "probs"


GOOD = {"logits": ("F32", (2, 2), struct.pack("<4f", 1, 2, 3, 4)), "labels": ("I64", (2,), struct.pack("<2q", 0, 1))}


def _damaged():
    def header_only(text: bytes, body: bytes = b""):
        return struct.pack("<Q", len(text)) + text + body

    return {
        "short": (b"\x01\x02", "fewer than the 8 of its header length"),
        "length past the file": (struct.pack("<Q", 10**6) + b"{}", "runs past the file"),
        "not json": (header_only(b"{not json"), "the header of .* to be JSON, but it could not be parsed"),
        "deep": (header_only(b"[" * 10000 + b"]" * 10000), "the header of .* to nest at most"),
        "not an object": (header_only(b"[1, 2]"), "not a JSON object"),
        "unknown dtype": (header_only(json.dumps({"x": {"dtype": "F8_E4M3", "shape": [1],
                                                        "data_offsets": [0, 1]}}).encode(), b"\0"),
                          "dtype 'F8_E4M3', which adacal does not read"),
        "negative shape": (header_only(json.dumps({"x": {"dtype": "F32", "shape": [-1],
                                                         "data_offsets": [0, 4]}}).encode(), b"\0" * 4),
                           "not a list of non-negative integers"),
        "wrong byte count": (header_only(json.dumps({"x": {"dtype": "F32", "shape": [2],
                                                           "data_offsets": [0, 4]}}).encode(), b"\0" * 4),
                             "needs 8 bytes but its data_offsets span 4"),
        "gap": (header_only(json.dumps({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}).encode(),
                            b"\0" * 8), "leave a gap or overlap at byte 0"),
        "overlap": (header_only(json.dumps({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                            "y": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode(),
                                b"\0" * 4), "leave a gap or overlap at byte 4"),
        "metadata": (header_only(json.dumps({"__metadata__": {"a": 1}}).encode()), "not a map of strings"),
        "truncated": ("truncate", "(truncated, or trailing data)"),
        "trailing": ("trail", "(truncated, or trailing data)"),
    }


@pytest.mark.parametrize("case", list(_damaged()))
def test_damaged_files_are_one_line_errors_naming_the_file(tmp_path, case):
    content, message = _damaged()[case]
    path = tmp_path / "bad.safetensors"
    if content in ("truncate", "trail"):
        _file(path, GOOD)
        data = path.read_bytes()
        path.write_bytes(data[:-3] if content == "truncate" else data + b"\0")
    else:
        path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_predictions(path)
    assert re.search(message, str(info.value)) and "\n" not in str(info.value), str(info.value)
    assert str(path) in str(info.value)


def test_tensors_beyond_the_memory_budget_are_refused_before_reading(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(1000, 10))
    path = _file(tmp_path / "big.safetensors", {"logits": ("F64", logits.shape, logits.tobytes())})
    monkeypatch.setattr("adacal.sources.files.memory_budget", lambda: 50_000)
    with pytest.raises(InputError, match=r"big\.safetensors:logits to fit in memory, but it would need 78\.1 KiB"):
        load_predictions(path, options=ReadOptions(labels_file=None))
