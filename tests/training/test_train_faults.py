"""Training survives faults: SIGKILL at seeded points (mid-epoch, mid-checkpoint-write, between renames, mid-history
line, and at seeded random times), a full disk, an unwritable output folder, and two runs racing for one folder.

After every fault the run folder holds a loadable checkpoints/last.pt (once the run got as far as writing one), and
`--resume` finishes with exactly the weights, γ, history, predictions and report of an uninterrupted run.

The killed runs are processes forked from this one (torch already imported, so each starts in milliseconds) that call
`adacal.training.train`; a kill point is set by patching, in the child only, the call where it should land, and the
child kills itself there with SIGKILL, which no handler can intercept. One further run is the real
`python -m adacal train` command killed from outside. Ctrl-C and SIGTERM, which a run catches and saves from, are
tested in test_train_interrupts.py; the uninterrupted run compared with is the `reference` fixture (conftest.py).
"""

from __future__ import annotations

import errno
import io
import itertools
import json
import multiprocessing
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
from adacal.cli import app
from adacal.training import TrainConfig, load_checkpoint, train
from cli_helpers import one_line_error, runner
from disk_faults import DiskFullFile
from train_outcomes import EPOCHS, OPTIONS, assert_same, history, only_run, outcome, resume_run, temp_files

REPO = Path(adacal.__file__).resolve().parents[1]
CLI_OPTIONS = ["--dataset", "digits", "--device", "cpu", "--train-subset", "64", "--batch-size", "32", "--optimizer",
               "sgd", "--lr", "0.05", "--milestones", "4", "--seed", "3"]
FORK = multiprocessing.get_context("fork")


# ------------------------------------------------------------------------------------------------------- helpers


def _check_after_kill(run: Path) -> int | None:
    """The state a kill may leave: every checkpoint loads, history is at most one epoch ahead of last.pt (a half line
    at most at its end), and last.pt exists as soon as any epoch was recorded. Returns last.pt's epoch (None if the
    kill came before the first checkpoint)."""
    text = (run / "history.jsonl").read_text() if (run / "history.jsonl").exists() else ""
    complete = [line for line in text.split("\n")[:-1]]
    last = run / "checkpoints" / "last.pt"
    if not last.exists():
        assert complete == [], "epochs were recorded but there is no checkpoint"
        return None
    epoch = load_checkpoint(last)["epoch"]
    if (run / "checkpoints" / "best.pt").exists():
        assert 1 <= load_checkpoint(run / "checkpoints" / "best.pt")["epoch"] <= epoch + 1
    assert epoch <= len(complete) <= epoch + 1
    for line in complete:
        json.loads(line)
    return epoch


# --------------------------------------------------------------------------------------------- kill points
# Each installs itself in the forked child and SIGKILLs the child at the n-th time the patched call runs.


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _at_batch(n: int) -> None:
    """Inside a training step (after the forward pass, before the loss and the weight update)."""
    from adacal.losses.adafocal import AdaFocalLoss

    forward, calls = AdaFocalLoss.forward, itertools.count(1)

    def patched(self, logits, labels):
        if self.training and next(calls) == n:
            _die()
        return forward(self, logits, labels)

    AdaFocalLoss.forward = patched


def _in_checkpoint_write(n: int, fraction: float) -> None:
    """Half-way through serialising the n-th checkpoint into its temp file (the bytes so far reach the disk)."""
    save, calls = torch.save, itertools.count(1)

    def patched(obj, f, *args, **kwargs):
        if next(calls) == n:
            buffer = io.BytesIO()
            save(obj, buffer, *args, **kwargs)
            data = buffer.getvalue()
            f.write(data[: int(len(data) * fraction)])
            f.flush()
            os.fsync(f.fileno())
            _die()
        return save(obj, f, *args, **kwargs)

    torch.save = patched


def _at_rename(n: int, after: bool) -> None:
    """Just before (or just after) the n-th checkpoint temp file is renamed over best.pt / last.pt."""
    replace, calls = os.replace, itertools.count(1)

    def patched(src, dst, *args, **kwargs):
        if str(dst).endswith(".pt") and next(calls) == n:
            if after:
                replace(src, dst, *args, **kwargs)
            _die()
        return replace(src, dst, *args, **kwargs)

    os.replace = patched


def _in_history_line(n: int) -> None:
    """Half-way through appending the n-th line of history.jsonl."""
    from adacal.training.run_writer import RunWriter

    append, calls = RunWriter.append_history, itertools.count(1)

    def patched(self, record):
        if next(calls) == n:
            line = json.dumps(adacal.reports.to_jsonable(record))
            with open(self.folder.history, "a") as handle:
                handle.write(line[: len(line) // 2])
            _die()
        return append(self, record)

    RunWriter.append_history = patched


def _in_final_reports() -> None:
    """After predictions.npz is written at the end, before evaluate.json is."""
    from adacal.training import run_writer

    write_json = run_writer.write_json

    def patched(path, obj):
        if Path(path).name == "evaluate.json":
            _die()
        return write_json(path, obj)

    run_writer.write_json = patched


def _trials() -> list[tuple[str, object]]:
    """Seeded kill points: two of each kind, one between the final predictions and report, four at seeded times."""
    rng = np.random.default_rng(2024)
    batches = EPOCHS * 2  # 64 samples in batches of 32
    saves = EPOCHS + 1  # at least: the epoch-0 checkpoint, then last.pt (and best.pt on improvement) per epoch
    trials = []
    for _ in range(2):
        trials.append(("batch", int(rng.integers(1, batches + 1))))
        trials.append(("write", (int(rng.integers(1, saves + 1)), float(rng.uniform(0.05, 0.95)))))
        trials.append(("before-rename", int(rng.integers(1, saves + 1))))
        trials.append(("after-rename", int(rng.integers(2, saves + 1))))
        trials.append(("history", int(rng.integers(1, EPOCHS + 1))))
    trials.append(("final", None))
    trials += [("time", float(t)) for t in rng.uniform(0.0, 0.5, 4)]
    return trials


INSTALL = {
    "batch": lambda n: _at_batch(n),
    "write": lambda p: _in_checkpoint_write(*p),
    "before-rename": lambda n: _at_rename(n, after=False),
    "after-rename": lambda n: _at_rename(n, after=True),
    "history": lambda n: _in_history_line(n),
    "final": lambda _: _in_final_reports(),
    "time": lambda _: None,
}


def _child(out: Path, kind: str, point) -> None:
    torch.set_num_threads(1)
    INSTALL[kind](point)
    train(TrainConfig(**OPTIONS, epochs=EPOCHS, out=str(out)))


@pytest.mark.slow
def test_sigkill_anywhere_leaves_a_resumable_run_that_ends_exactly_as_an_uninterrupted_one(reference, tmp_path):
    killed_in = set()
    for number, (kind, point) in enumerate(_trials()):
        out = tmp_path / f"trial{number}-{kind}"
        process = FORK.Process(target=_child, args=(out, kind, point))
        process.start()
        if kind == "time":
            process.join(timeout=point)
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
        process.join(timeout=60)
        assert process.exitcode is not None, f"trial {number} ({kind} {point}) hung"
        if kind != "time":
            assert process.exitcode == -signal.SIGKILL, (kind, point, process.exitcode)
        if not out.is_dir() or not any(out.iterdir()):
            assert kind == "time", (kind, point)  # killed before the run folder was made
            continue
        run = only_run(out)
        epoch = _check_after_kill(run)
        if epoch is None:
            assert kind == "time", (kind, point)  # only a kill before the epoch-0 checkpoint leaves none
            continue
        killed_in.add(kind)
        resume_run(run)
        assert_same(outcome(run), reference)
        assert temp_files(run) == [], (kind, point)
    assert {"batch", "write", "before-rename", "after-rename", "history", "final"} <= killed_in


@pytest.mark.slow
def test_sigkill_of_the_train_command_then_resume_command(reference, tmp_path):
    """The real `python -m adacal train`, killed from outside once it is writing epochs, then
    `adacal train --resume`."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "adacal", "train", *CLI_OPTIONS, "--epochs", str(EPOCHS), "--out",
               str(tmp_path)]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        for line in process.stdout:
            if line.startswith("epoch 2/"):
                time.sleep(float(np.random.default_rng(7).uniform(0.0, 0.05)))
                process.send_signal(signal.SIGKILL)
                break
        process.wait(timeout=60)
    finally:
        process.kill()
        process.stdout.close()
    run = only_run(tmp_path)
    epoch = _check_after_kill(run)
    assert epoch is not None and epoch >= 2
    result = runner.invoke(app, ["train", "--resume", str(run), "--epochs", str(EPOCHS), "--quiet"])
    assert result.exit_code == 0, result.output
    assert_same(outcome(run), reference)


# ------------------------------------------------------------------------------------------------- disk full


def _fail_writes_of(monkeypatch, name: str, epoch: int) -> None:
    """The checkpoint write of `name` at `epoch` fails half-way with ENOSPC, as on a full disk."""
    from adacal.training import run_writer

    save_checkpoint, torch_save = run_writer.save_checkpoint, torch.save
    current = {}

    def noting(checkpoint, path):
        current.update(name=Path(path).name, epoch=checkpoint["epoch"])
        return save_checkpoint(checkpoint, path)

    def failing(obj, f, *args, **kwargs):
        if current == {"name": name, "epoch": epoch}:
            f.write(b"PK\x03\x04 half a checkpoint")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return torch_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(run_writer, "save_checkpoint", noting)
    monkeypatch.setattr(torch, "save", failing)


def _fail_history_line(monkeypatch, epoch: int) -> None:
    from adacal.training import run_writer

    calls = itertools.count(1)

    def opening(path, mode="r", **kwargs):
        handle = open(path, mode, **kwargs)
        if Path(path).name == "history.jsonl" and mode == "a" and next(calls) == epoch:
            return DiskFullFile(handle)
        return handle

    monkeypatch.setattr(run_writer, "open", opening, raising=False)


@pytest.mark.parametrize("fault", ["last.pt", "best.pt", "history.jsonl"])
def test_disk_full_mid_run_keeps_every_good_file_and_says_how_to_resume(reference, tmp_path, monkeypatch, fault):
    if fault == "history.jsonl":
        _fail_history_line(monkeypatch, epoch=3)
    else:
        _fail_writes_of(monkeypatch, fault, epoch=1 if fault == "best.pt" else 3)
    args = ["train", *CLI_OPTIONS, "--epochs", str(EPOCHS), "--out", str(tmp_path), "--quiet"]
    result = runner.invoke(app, args)
    monkeypatch.undo()

    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    (line,) = result.stderr.strip().splitlines()
    run = only_run(tmp_path)
    intact = 0 if fault == "best.pt" else 2
    assert line.startswith("Error: Cannot write "
                           f"{run / fault if fault == 'history.jsonl' else run / 'checkpoints' / fault}")
    assert "No space left on device" in line and f"intact at epoch {intact}" in line, line
    assert line.endswith(f"resume with: adacal train --resume {run} --epochs {EPOCHS}"), line
    assert load_checkpoint(run / "checkpoints" / "last.pt")["epoch"] == intact
    if intact:  # best.pt may already hold the failed epoch: it was written in full before last.pt failed
        assert load_checkpoint(run / "checkpoints" / "best.pt")["epoch"] <= intact + 1
    assert temp_files(run) == []
    assert len(history(run)) == (intact + 1 if fault != "history.jsonl" else intact)  # never half a line
    assert not (run / "predictions.npz").exists() and not (run / "evaluate.json").exists()

    resumed = runner.invoke(app, result.stderr.split("resume with: adacal ")[1].split() + ["--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert_same(outcome(run), reference)


# --------------------------------------------------------------------------------------- unwritable --out


@pytest.mark.parametrize("where", ["read-only folder", "under a file"])
def test_unwritable_out_fails_before_any_data_is_loaded(tmp_path, monkeypatch, where):
    import adacal.data

    def no_loading(*args, **kwargs):
        raise AssertionError("the dataset was loaded before the output folder was checked")

    monkeypatch.setattr(adacal.data, "load_dataset", no_loading)
    if where == "under a file":
        (tmp_path / "file").write_text("x")
        out, message = tmp_path / "file" / "runs", "is a file"
    else:
        out, message = tmp_path / "readonly", "permission denied"
        out.mkdir()
        out.chmod(0o555)
        if os.geteuid() == 0:  # root writes anywhere: have os.access answer as it would for a user
            access = os.access
            monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
                False if Path(path) == out and mode & os.W_OK else access(path, mode, **kw)))
    before = sorted(tmp_path.rglob("*"))
    try:
        result = runner.invoke(app, ["train", "--out", str(out), "--epochs", "1"])
        after = sorted(tmp_path.rglob("*"))
    finally:
        if out.is_dir():
            out.chmod(0o755)
    one_line_error(result, message)
    assert after == before


# ------------------------------------------------------------------------------------------- racing runs


def test_new_run_dir_gives_every_racer_its_own_folder(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from adacal.reports import new_run_dir

    barrier = Barrier(8)

    def racer(_):
        barrier.wait()
        return new_run_dir(tmp_path / "runs", "20240101-000000-digits-mlp-adafocal")

    with ThreadPoolExecutor(8) as pool:
        folders = list(pool.map(racer, range(8)))
    assert len(set(folders)) == 8 and all(folder.is_dir() for folder in folders)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(folder.name for folder in folders)


def _racer(out: Path, barrier) -> None:
    from adacal.training import entry

    torch.set_num_threads(1)
    entry.run_folder_name = lambda *parts: "20240101-000000-digits-mlp-adafocal"  # the same second
    barrier.wait()
    train(TrainConfig(**OPTIONS, epochs=EPOCHS, out=str(out)))


def test_two_runs_started_in_the_same_second_never_share_a_folder(reference, tmp_path):
    barrier = FORK.Barrier(2)
    processes = [FORK.Process(target=_racer, args=(tmp_path, barrier)) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0, 0]
    runs = sorted(tmp_path.iterdir())
    assert [run.name for run in runs] == ["20240101-000000-digits-mlp-adafocal",
                                          "20240101-000000-digits-mlp-adafocal-2"]
    for run in runs:  # each complete and untouched by the other (same seed: both equal the reference)
        assert_same(outcome(run), reference)
