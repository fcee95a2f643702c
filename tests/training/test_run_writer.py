"""The run-folder writer, driven directly (no training): checkpoints, history, config, reports, temp-file clean-up, and
the lock that makes one process the only writer of a run folder (released by the OS when that process dies)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import adacal
from adacal.errors import InputError
from adacal.predictions import Predictions
from adacal.sources.files import safe_torch_load
from adacal.runs import RunFolder
from adacal.training.run_writer import LOCK_FILE, RunLockedError, RunWriter
from disk_faults import DiskFullFile

REPO = Path(adacal.__file__).resolve().parents[1]


def _checkpoint(epoch: int, **extra) -> dict:
    from adacal.training.checkpoints import make_checkpoint

    return make_checkpoint(model_name="mlp", model_options={}, dataset="digits", num_classes=2, input_shape=(4,),
                           config={}, epoch=epoch, model_state={"w": torch.full((2,), float(epoch))}, **extra)


def _writer(tmp_path: Path, **kwargs) -> RunWriter:
    root = tmp_path / "run"
    root.mkdir()
    return RunWriter(RunFolder(root), **kwargs)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_checkpoints_history_config_and_reports(tmp_path):
    writer = _writer(tmp_path)
    writer.save_checkpoint("last", _checkpoint(1))
    writer.save_checkpoint("best", _checkpoint(1))
    writer.save_checkpoint("last", _checkpoint(2))
    for epoch in (1, 2):
        writer.append_history({"epoch": epoch, "val": {"ece_em": np.float32(0.25)}, "bad": float("nan")})
    writer.write_config({"kind": "train-config", "config": {"seed": 0}})
    writer.write_predictions(val=Predictions(logits=np.zeros((3, 2), np.float32), labels=np.array([0, 1, 0])),
                             test=Predictions(logits=np.ones((2, 2), np.float32), labels=np.array([1, 0])))
    writer.write_report("evaluate.json", {"kind": "evaluate"})
    folder = writer.folder
    assert safe_torch_load(folder.checkpoint("last"))["epoch"] == 2
    assert safe_torch_load(folder.checkpoint("best"))["epoch"] == 1
    lines = folder.history.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"epoch": 1, "val": {"ece_em": 0.25}, "bad": None}, {"epoch": 2, "val": {"ece_em": 0.25}, "bad": None}
    ]
    assert json.loads(folder.config.read_text())["config"] == {"seed": 0}
    with np.load(folder.predictions) as arrays:
        assert sorted(arrays.files) == ["test_labels", "test_logits", "val_labels", "val_logits"]
    assert json.loads(folder.report("evaluate.json").read_text()) == {"kind": "evaluate"}
    assert _listing(folder.root) == ["checkpoints", "checkpoints/best.pt", "checkpoints/last.pt", "config.json",
                                     "evaluate.json", "history.jsonl", "predictions.npz"]


def test_disabled_writer_writes_nothing(tmp_path):
    writer = _writer(tmp_path, enabled=False)
    writer.lock()
    writer.save_checkpoint("last", _checkpoint(1))
    writer.append_history({"epoch": 1})
    writer.write_config({})
    writer.write_report("evaluate.json", {})
    assert _listing(writer.folder.root) == []


def test_interrupted_checkpoint_is_discarded(tmp_path):
    writer = _writer(tmp_path)
    writer.save_checkpoint("interrupted", _checkpoint(0, partial_epoch={"batch": 3}))
    assert writer.folder.checkpoint("interrupted").is_file()
    writer.discard_interrupted()
    writer.discard_interrupted()  # nothing to discard: no error
    assert not writer.folder.checkpoint("interrupted").exists()


def test_failed_history_append_is_cut_back(tmp_path, monkeypatch):
    from adacal.training import run_writer

    writer = _writer(tmp_path)
    writer.append_history({"epoch": 1})
    good = writer.folder.history.read_bytes()

    full = lambda path, mode, **kw: DiskFullFile(open(path, mode, **kw))  # noqa: E731
    monkeypatch.setattr(run_writer, "open", full, raising=False)
    with pytest.raises(InputError, match="No space left"):
        writer.append_history({"epoch": 2})
    assert writer.folder.history.read_bytes() == good


def test_failed_checkpoint_write_keeps_the_old_one(tmp_path, monkeypatch):
    writer = _writer(tmp_path)
    writer.save_checkpoint("last", _checkpoint(1))
    save = torch.save

    def failing(obj, f, *args, **kwargs):
        f.write(b"PK half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", failing)
    with pytest.raises(InputError, match="No space left"):
        writer.save_checkpoint("last", _checkpoint(2))
    monkeypatch.setattr(torch, "save", save)
    assert safe_torch_load(writer.folder.checkpoint("last"))["epoch"] == 1
    assert _listing(writer.folder.checkpoints) == ["last.pt"]


def test_stale_temp_files_of_train_are_removed_and_nothing_else(tmp_path):
    writer = _writer(tmp_path)
    writer.folder.checkpoints.mkdir()
    stale = [writer.folder.root / ".history.jsonl.123.abc.tmp", writer.folder.checkpoints / ".last.pt.x1.tmp",
             writer.folder.root / ".config.json.zz.tmp"]
    kept = [writer.folder.root / ".notes.txt.1.tmp", writer.folder.root / "notes.txt"]
    for path in stale + kept:
        path.write_text("x")
    writer.remove_stale_temp_files()
    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in kept)


def test_lock_is_exclusive_and_released(tmp_path):
    first = _writer(tmp_path)
    second = RunWriter(first.folder)
    with first.locked():
        assert (first.folder.root / LOCK_FILE).read_text() == ""
        with pytest.raises(RunLockedError) as info:
            second.lock()
        assert "Expected no other 'adacal train' to be writing the run folder" in str(info.value)
    with second.locked():  # free again once released
        assert second.locked_by_us
    assert not second.locked_by_us


def test_lock_of_a_killed_process_is_released_by_the_os(tmp_path):
    writer = _writer(tmp_path)
    code = (
        "import sys, time\n"
        "from adacal.runs import RunFolder\n"
        "from adacal.training.run_writer import RunWriter\n"
        "RunWriter(RunFolder(sys.argv[1])).lock()\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", code, str(writer.folder.root)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match="but one is"):
            writer.lock()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        deadline = time.monotonic() + 10
        while True:  # the OS drops the lock with the process
            try:
                writer.lock()
                break
            except RunLockedError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert writer.locked_by_us
    finally:
        writer.unlock()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
