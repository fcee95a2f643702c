"""adacal.sources.files: only regular files are opened, without blocking, and declared sizes are checked against
memory before anything is allocated (ADACAL_MEMORY_LIMIT lowers the budget, so the tests need no big machine).
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.errors import InputError
from adacal.interpretation import load_predictions
from adacal.sources import NpzArchive, ReadOptions, open_regular, read_history, read_json, read_npy

from reading_fixtures import K, LABELS, LOGITS, N, REPO, same


# ------------------------------------------------------------------------------------------------- only regular files


@pytest.fixture()
def fifo(tmp_path):
    path = tmp_path / "preds.npz"
    os.mkfifo(path)
    return path


def test_fifo_socket_device_and_folder_are_refused_without_blocking(tmp_path, fifo):
    started = time.monotonic()
    with pytest.raises(InputError, match="to be a regular file, but it is a FIFO"):
        open_regular(fifo, "a predictions file")
    with pytest.raises(InputError, match="FIFO"):
        load_predictions(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_json(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_history(fifo)
    assert time.monotonic() - started < 5
    with pytest.raises(InputError, match="character device"):
        read_json("/dev/null")
    with pytest.raises(InputError, match="is a folder"):
        load_predictions(tmp_path)
    sock_path = tmp_path / "s.npz"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        with pytest.raises(InputError, match="a socket"):
            load_predictions(sock_path)
    finally:
        server.close()


def test_fifo_in_a_real_process_returns_at_once(tmp_path, fifo):
    """A command given a FIFO (no writer) must answer in one line, not wait for data forever."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for argv in (["evaluate", str(fifo)], ["ood", "--in-preds", str(fifo), "--out-preds", str(fifo)],
                 ["calibrate", str(fifo)]):
        done = subprocess.run([sys.executable, "-m", "adacal", *argv], capture_output=True, text=True, timeout=60,
                              env=env, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "FIFO" in lines[0], done.stderr


def test_no_warning_prints_ahead_of_the_error_line(tmp_path):
    """torch warns while loading a sparse tensor; in a real process only the one Error: line may reach stderr."""
    torch.save({"logits": torch.eye(K).to_sparse(), "labels": torch.arange(K)}, tmp_path / "s.pt")
    done = subprocess.run([sys.executable, "-m", "adacal", "evaluate", str(tmp_path / "s.pt")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "dense tensor" in done.stderr, done.stderr


# ----------------------------------------------------------------------------------------------------- declared sizes


def _npy_bytes(shape, dtype="<f8", body=b""):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": dtype, "fortran_order": False, "shape": shape})
    return out.getvalue() + body


def test_npy_header_declaring_more_than_the_file_holds(tmp_path):
    (tmp_path / "big.npy").write_bytes(_npy_bytes((10**12, 10), body=b"\0" * 64))
    started = time.monotonic()
    with pytest.raises(InputError, match=r"header declares \(shape \(1000000000000, 10\)\).*truncated"):
        read_npy(tmp_path / "big.npy")
    assert time.monotonic() - started < 2


def test_npz_member_header_declaring_a_huge_shape(tmp_path):
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("logits.npy", _npy_bytes((10**9, 10**6), body=b"\0" * 80))
        archive.writestr("labels.npy", _npy_bytes((3,), "<i8", b"\0" * 24))
    with pytest.raises(InputError, match="its zip entry holds"):
        load_predictions(tmp_path / "big.npz")


def test_memory_budget_is_checked_before_reading(tmp_path, monkeypatch):
    np.savez(tmp_path / "p.npz", logits=LOGITS.astype(np.float64), labels=LABELS)
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", "1000")
    with pytest.raises(InputError, match=r"p.npz:logits to fit in memory, but it would need 1.4 KiB uncompressed and "
                                         r"1000 bytes is available"):
        load_predictions(tmp_path / "p.npz")


def _zip_bomb(path: Path, used: dict, size: int) -> None:
    """An .npz whose member `junk` inflates to `size` bytes of zeros (deflated to a few hundred KiB)."""
    np.savez(path, **used)
    header = _npy_bytes((size,), "|u1")
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\0" * (1 << 20)
    parts = [compressor.compress(header)]
    for _ in range(size // len(chunk)):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    data = b"".join(parts)
    crc = zlib.crc32(chunk * 0)
    crc = zlib.crc32(header)
    for _ in range(size // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    info = zipfile.ZipInfo("junk.npy")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "a") as archive:
        # Raw deflate data written as the member, with its true CRC and sizes.
        info.CRC, info.compress_size, info.file_size = crc, len(data), len(header) + size
        archive.fp.seek(archive.start_dir)
        info.header_offset = archive.fp.tell()
        archive.fp.write(info.FileHeader())
        archive.fp.write(data)
        archive.start_dir = archive.fp.tell()
        archive.filelist.append(info)
        archive.NameToInfo[info.filename] = info
        archive._didModify = True


def test_zip_bomb_under_an_unused_key_costs_nothing(tmp_path, monkeypatch):
    path = tmp_path / "bomb.npz"
    _zip_bomb(path, {"logits": LOGITS, "labels": LABELS}, 64 << 20)
    assert path.stat().st_size < 1 << 20
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(16 << 20))
    started = time.monotonic()
    same(load_predictions(path))  # junk is never decompressed
    assert time.monotonic() - started < 2
    with NpzArchive(path) as archive:
        assert sorted(archive.files) == ["junk", "labels", "logits"]
        with pytest.raises(InputError, match=r"junk to fit in memory, but it would need 64.0 MiB uncompressed"):
            archive["junk"]
    with pytest.raises(InputError, match="would need 64.0 MiB"):
        load_predictions(path, options=ReadOptions(logits_key="junk"))


def test_torch_archive_entries_are_sized_before_loading(tmp_path, monkeypatch):
    torch.save({"logits": torch.zeros(1 << 15, 8), "labels": torch.zeros(1 << 15, dtype=torch.long)}, tmp_path / "b.pt")
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(256 << 10))
    with pytest.raises(InputError, match=r"b.pt to fit in memory, but its entries declare 1.3 MiB and 256.0 KiB"):
        load_predictions(tmp_path / "b.pt")


def test_crafted_zip_entry_declaring_a_huge_size(tmp_path, monkeypatch):
    """A central directory that declares a member of 4 GiB is refused from the declaration, unread."""
    np.savez(tmp_path / "p.npz", logits=LOGITS, labels=LABELS)
    data = bytearray((tmp_path / "p.npz").read_bytes())
    central = data.find(b"PK\x01\x02")  # the first member's central directory record (logits.npy)
    data[central + 24:central + 28] = (0xFFFFFFFE).to_bytes(4, "little")  # its uncompressed size
    (tmp_path / "lying.npz").write_bytes(bytes(data))
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(1 << 30))
    with pytest.raises(InputError, match=r"logits to fit in memory, but it would need 4.0 GiB uncompressed"):
        load_predictions(tmp_path / "lying.npz")


def test_object_arrays_are_never_unpickled(tmp_path):
    np.savez(tmp_path / "o.npz", logits=np.array([{"a": 1}], dtype=object), labels=LABELS[:1])
    with pytest.raises(InputError, match="holds Python objects"):
        load_predictions(tmp_path / "o.npz")


def test_expanded_sparse_and_nested_tensors(tmp_path, monkeypatch):
    torch.save({"logits": torch.zeros(1, 1).expand(10**7, 1000), "labels": torch.zeros(10**7, dtype=torch.long)},
               tmp_path / "x.pt")
    assert (tmp_path / "x.pt").stat().st_size < 100 << 20  # the view's storage is tiny; its shape is not
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(1 << 30))
    with pytest.raises(InputError, match=r"'logits' in .* to fit in memory, but its shape \(10000000, 1000\) would "
                                         r"need 37.3 GiB"):
        load_predictions(tmp_path / "x.pt")
    torch.save({"logits": torch.eye(4).to_sparse(), "labels": torch.arange(4)}, tmp_path / "s.pt")
    with pytest.raises(InputError, match="'logits' in .* to be a dense tensor, got a sparse_coo one"):
        load_predictions(tmp_path / "s.pt")
    small = {"logits": torch.zeros(1, K).expand(N, K), "labels": torch.tensor(LABELS)}
    torch.save(small, tmp_path / "ok.pt")
    assert load_predictions(tmp_path / "ok.pt").logits.shape == (N, K)  # a small view is fine
