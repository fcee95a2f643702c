"""Training survives faults: SIGKILL at seeded points (mid-epoch, mid-checkpoint-write, between renames, mid-history
line, and at seeded random times), a full disk, an unwritable output folder, and two runs racing for one folder.

After every fault the run folder holds a loadable checkpoints/last.pt (once the run got as far as writing one), and
`--resume` finishes with exactly the weights, γ, history, predictions and report of an uninterrupted run.

The killed runs are processes forked from this one (torch already imported, so each starts in milliseconds) that call
`adacal.training.train`; a kill point is set by patching, in the child only, the call where it should land, and the
child kills itself there with SIGKILL, which no handler can intercept. One further run is the real
`python -m adacal train` command killed from outside.
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
from adacal.runs import RUN_ID_KEY
from adacal.training import TrainConfig, TrainingInterrupted, load_checkpoint, train
from cli_helpers import one_line_error, runner
from disk_faults import DiskFullFile

REPO = Path(adacal.__file__).resolve().parents[1]
EPOCHS = 6
OPTIONS = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, optimizer="sgd", lr=0.05,
               milestones=(4,), seed=3)
CLI_OPTIONS = ["--dataset", "digits", "--device", "cpu", "--train-subset", "64", "--batch-size", "32", "--optimizer",
               "sgd", "--lr", "0.05", "--milestones", "4", "--seed", "3"]
FORK = multiprocessing.get_context("fork")


# ------------------------------------------------------------------------------------------------------- helpers


def _only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def _history(run: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (run / "history.jsonl").read_text().splitlines()]


def _temp_files(run: Path) -> list[Path]:
    return [p for p in run.rglob("*.tmp")]


def _outcome(run: Path) -> dict:
    """What a finished run leaves that must not depend on how often it was interrupted."""
    checkpoint = load_checkpoint(run / "checkpoints" / "last.pt")
    with np.load(run / "predictions.npz") as arrays:
        # Every array but the run's id, which is each run's own (the uninterrupted run compared with is another run).
        predictions = {key: arrays[key] for key in arrays.files if key != RUN_ID_KEY}
    return {
        "epoch": checkpoint["epoch"],
        "model": checkpoint["model_state"],
        "loss": checkpoint["loss_state"],
        "lr": checkpoint["scheduler_state"]["_last_lr"],
        "history": _history(run),
        "predictions": predictions,
        "results": json.loads((run / "evaluate.json").read_text())["results"],
    }


def _assert_same(a: dict, b: dict) -> None:
    assert a["epoch"] == b["epoch"] == EPOCHS
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    assert torch.equal(a["loss"]["gammas"], b["loss"]["gammas"])
    for key, value in a["loss"].items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, b["loss"][key]), key
    assert a["lr"] == b["lr"]
    assert a["history"] == b["history"]
    for key, value in a["predictions"].items():
        np.testing.assert_array_equal(value, b["predictions"][key])
    assert a["results"] == b["results"]


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


def _resume(run: Path) -> None:
    result = train(TrainConfig(resume=str(run), epochs=EPOCHS))
    assert result.resumed_from is not None and result.epochs == EPOCHS


def _uninterrupted_outcome(out: Path, options: dict) -> dict:
    """The outcome of a run of `options` trained to the end without faults, under `out`."""
    train(TrainConfig(**options, epochs=EPOCHS, out=str(out)))
    return _outcome(_only_run(out))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, one_torch_thread):
    """The uninterrupted run every interrupted one must end up equal to."""
    with one_torch_thread():
        return _uninterrupted_outcome(tmp_path_factory.mktemp("reference"), OPTIONS)


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
        run = _only_run(out)
        epoch = _check_after_kill(run)
        if epoch is None:
            assert kind == "time", (kind, point)  # only a kill before the epoch-0 checkpoint leaves none
            continue
        killed_in.add(kind)
        _resume(run)
        _assert_same(_outcome(run), reference)
        assert _temp_files(run) == [], (kind, point)
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
    run = _only_run(tmp_path)
    epoch = _check_after_kill(run)
    assert epoch is not None and epoch >= 2
    result = runner.invoke(app, ["train", "--resume", str(run), "--epochs", str(EPOCHS), "--quiet"])
    assert result.exit_code == 0, result.output
    _assert_same(_outcome(run), reference)


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
    run = _only_run(tmp_path)
    intact = 0 if fault == "best.pt" else 2
    assert line.startswith("Error: Cannot write "
                           f"{run / fault if fault == 'history.jsonl' else run / 'checkpoints' / fault}")
    assert "No space left on device" in line and f"intact at epoch {intact}" in line, line
    assert line.endswith(f"resume with: adacal train --resume {run} --epochs {EPOCHS}"), line
    assert load_checkpoint(run / "checkpoints" / "last.pt")["epoch"] == intact
    if intact:  # best.pt may already hold the failed epoch: it was written in full before last.pt failed
        assert load_checkpoint(run / "checkpoints" / "best.pt")["epoch"] <= intact + 1
    assert _temp_files(run) == []
    assert len(_history(run)) == (intact + 1 if fault != "history.jsonl" else intact)  # never half a line
    assert not (run / "predictions.npz").exists() and not (run / "evaluate.json").exists()

    resumed = runner.invoke(app, result.stderr.split("resume with: adacal ")[1].split() + ["--quiet"])
    assert resumed.exit_code == 0, resumed.output
    _assert_same(_outcome(run), reference)


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
        _assert_same(_outcome(run), reference)


# ------------------------------------------------------------------------------- Ctrl-C / SIGTERM mid-epoch
# In this process: the signal handlers are installed by `train` in the main thread; a patched call sends the signal.

# Dropout (the torch RNG stream must continue exactly) and a γ-update after every batch (records of the epoch so far
# and AdaFocal's C_train accumulators travel in the mid-epoch checkpoint).
MID_EPOCH = {**OPTIONS, "model": "mlp", "model_options": {"dropout": 0.3}, "update_every": "1"}


@pytest.fixture(scope="module")
def mid_epoch_reference(tmp_path_factory, one_torch_thread):
    with one_torch_thread():
        return _uninterrupted_outcome(tmp_path_factory.mktemp("mid-epoch-reference"), MID_EPOCH)


def _signals_in_training_step(monkeypatch, n: int, signums: tuple[int, ...]) -> None:
    """Send `signums` to this process inside the n-th training forward of the loss (before backward and step)."""
    from adacal.losses.adafocal import AdaFocalLoss

    forward, calls = AdaFocalLoss.forward, itertools.count(1)

    def patched(self, logits, labels):
        if self.training and next(calls) == n:
            for signum in signums:
                os.kill(os.getpid(), signum)
        return forward(self, logits, labels)

    monkeypatch.setattr(AdaFocalLoss, "forward", patched)


def _signal_in_gamma_update(monkeypatch, n: int, signum: int) -> None:
    """Send `signum` during the n-th γ-update's validation pass."""
    from adacal.training.loop import Trainer

    update, calls = Trainer._update_loss, itertools.count(1)

    def patched(self, logits, labels):
        if next(calls) == n:
            os.kill(os.getpid(), signum)
        return update(self, logits, labels)

    monkeypatch.setattr(Trainer, "_update_loss", patched)


def _interrupt(monkeypatch, out: Path, install) -> tuple[Path, "TrainingInterrupted"]:
    from adacal.training import TrainingInterrupted

    install()
    with pytest.raises(TrainingInterrupted) as raised:
        train(TrainConfig(**MID_EPOCH, epochs=EPOCHS, out=str(out)))
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    return _only_run(out), raised.value


@pytest.mark.parametrize(
    "where, signum, epoch, batch",
    [("step", signal.SIGINT, 3, 1), ("step", signal.SIGTERM, 3, 2), ("gamma-update", signal.SIGINT, 3, 1)],
    ids=["ctrl-c in a step", "sigterm in an epoch's last step", "ctrl-c in a per-batch gamma-update"],
)
def test_interrupt_mid_epoch_writes_interrupted_pt_and_resume_continues_exactly(
    mid_epoch_reference, tmp_path, monkeypatch, where, signum, epoch, batch
):
    n = (epoch - 1) * 2 + batch  # 2 batches per epoch, one γ-update per batch
    install = (lambda: _signals_in_training_step(monkeypatch, n, (signum,))) if where == "step" else (
        lambda: _signal_in_gamma_update(monkeypatch, n, signum))
    run, interrupted = _interrupt(monkeypatch, tmp_path, install)

    saved = run / "checkpoints" / "interrupted.pt"
    assert interrupted.saved == saved and (interrupted.epoch, interrupted.batch) == (epoch, batch)
    assert interrupted.message == (
        f"Interrupted at epoch {epoch} batch {batch}; saved {saved}; resume with: adacal train --resume {run} "
        f"--epochs {EPOCHS}"
    )
    mid = load_checkpoint(saved)
    assert mid["epoch"] == epoch - 1 == load_checkpoint(run / "checkpoints" / "last.pt")["epoch"]
    partial = mid["partial_epoch"]
    assert (partial["epoch"], partial["batch"], partial["seen"]) == (epoch, batch, 32 * batch)
    assert len(partial["updates"]) == batch  # this epoch's γ-updates so far
    assert len(_history(run)) == epoch - 1 and _temp_files(run) == []

    notes = []
    result = train(TrainConfig(resume=str(run), epochs=EPOCHS),
                   progress=lambda event, info: notes.extend(info["notes"]) if event == "train_start" else None)
    assert result.resumed_from == epoch - 1
    assert notes[0] == (f"resuming after batch {batch} of 2 of epoch {epoch} (checkpoints/interrupted.pt): the "
                        f"epoch's first {batch} batch(es) are not trained again")
    assert not saved.exists()  # superseded by the next end-of-epoch last.pt
    resumes = json.loads((run / "config.json").read_text())["results"]["resumes"]
    assert resumes == [{"from_epoch": epoch - 1, "from_batch": batch, "epochs": EPOCHS,
                        "versions": resumes[0]["versions"]}]
    _assert_same(_outcome(run), mid_epoch_reference)


def test_a_second_signal_stops_at_once_and_resume_repeats_the_epoch(mid_epoch_reference, tmp_path, monkeypatch):
    run, interrupted = _interrupt(
        monkeypatch, tmp_path, lambda: _signals_in_training_step(monkeypatch, 5, (signal.SIGINT, signal.SIGINT)))
    assert interrupted.saved is None and (interrupted.epoch, interrupted.batch) == (3, 1)
    assert "saved" not in interrupted.message and interrupted.message.endswith(f"--epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(run / "checkpoints" / "last.pt")["epoch"] == 2
    _resume(run)
    assert json.loads((run / "config.json").read_text())["results"]["resumes"][0]["from_epoch"] == 2
    _assert_same(_outcome(run), mid_epoch_reference)


def test_a_stale_interrupted_checkpoint_is_ignored(mid_epoch_reference, tmp_path, monkeypatch):
    """interrupted.pt of epoch 3 left beside a last.pt of epoch 4 (a SIGKILL after epoch 4 was saved, before the file
    was deleted): resuming continues from last.pt, not from the old mid-epoch state."""
    run, _ = _interrupt(monkeypatch, tmp_path, lambda: _signals_in_training_step(monkeypatch, 5, (signal.SIGTERM,)))
    saved = run / "checkpoints" / "interrupted.pt"
    stale = saved.read_bytes()
    train(TrainConfig(resume=str(run), epochs=4))
    assert not saved.exists()
    saved.write_bytes(stale)
    _resume(run)
    last_resume = json.loads((run / "config.json").read_text())["results"]["resumes"][-1]
    assert last_resume["from_epoch"] == 4 and "from_batch" not in last_resume
    _assert_same(_outcome(run), mid_epoch_reference)


# ---------------------------------------------------------------------------------------------------------------------
# an interrupt outside an epoch's batches: no interrupted.pt, and the message says what last.pt holds


def _signal_in_validation(monkeypatch, epoch: int, signum: int) -> None:
    """Send `signum` during the end-of-epoch validation pass of `epoch` (OPTIONS: one γ-update per epoch)."""
    from adacal.training.loop import Trainer

    predict_split, calls = Trainer.predict_split, itertools.count(1)

    def patched(self, split):
        if split == "val" and next(calls) == epoch:
            os.kill(os.getpid(), signum)
        return predict_split(self, split)

    monkeypatch.setattr(Trainer, "predict_split", patched)


def _signal_in_last_write(monkeypatch, epoch: int, signum: int) -> None:
    """Send `signum` while checkpoints/last.pt of `epoch` is being written (the write goes on to its end)."""
    from adacal.training import run_writer

    save = run_writer.RunWriter.save_checkpoint

    def patched(self, which, checkpoint):
        if which == "last" and checkpoint["epoch"] == epoch:
            os.kill(os.getpid(), signum)
        return save(self, which, checkpoint)

    monkeypatch.setattr(run_writer.RunWriter, "save_checkpoint", patched)


def _interrupt_options(monkeypatch, out: Path, install, options: dict) -> tuple[Path, "TrainingInterrupted"]:
    from adacal.training import TrainingInterrupted

    install()
    with pytest.raises(TrainingInterrupted) as raised:
        train(TrainConfig(**options, epochs=EPOCHS, out=str(out)))
    monkeypatch.undo()
    return _only_run(out), raised.value


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_between_epochs_says_last_pt_holds_the_epoch_and_resume_is_exact(
    reference, tmp_path, monkeypatch, signum
):
    """A signal while last.pt of epoch 3 is written: the write finishes, epoch 3 is complete, nothing of epoch 4 was
    trained, so there is no interrupted.pt and the line says so instead of naming a batch."""
    run, interrupted = _interrupt_options(
        monkeypatch, tmp_path, lambda: _signal_in_last_write(monkeypatch, 3, signum), OPTIONS)
    last = run / "checkpoints" / "last.pt"
    assert interrupted.saved is None
    assert interrupted.message == (
        f"Interrupted after epoch 3; {last} holds it; resume with: adacal train --resume {run} --epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(last)["epoch"] == 3 and len(_history(run)) == 3
    _resume(run)
    _assert_same(_outcome(run), reference)


def test_an_interrupt_in_the_validation_pass_says_the_epoch_is_trained_again(reference, tmp_path, monkeypatch):
    run, interrupted = _interrupt_options(
        monkeypatch, tmp_path, lambda: _signal_in_validation(monkeypatch, 3, signal.SIGINT), OPTIONS)
    last = run / "checkpoints" / "last.pt"
    assert interrupted.message == (
        f"Interrupted at the end of epoch 3, before its checkpoint was written; {last} holds epoch 2, so epoch 3 is "
        f"trained again; resume with: adacal train --resume {run} --epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(last)["epoch"] == 2 and len(_history(run)) == 2
    _resume(run)
    _assert_same(_outcome(run), reference)


def test_interrupt_messages_say_what_each_checkpoint_holds(tmp_path):
    from adacal.training import TrainingInterrupted

    last = tmp_path / "checkpoints" / "last.pt"
    resume = f"resume with: adacal train --resume {tmp_path} --epochs 30"

    def message(**fields) -> str:
        values = {"run_dir": tmp_path, "epochs": 30, "phase": "training", "saved": None, **fields}
        return TrainingInterrupted(**values).message

    saved = tmp_path / "checkpoints" / "interrupted.pt"
    assert message(epoch=16, batch=4, checkpoint_epoch=15, saved=saved) == (
        f"Interrupted at epoch 16 batch 4; saved {saved}; {resume}")
    assert message(epoch=15, batch=0, checkpoint_epoch=15) == f"Interrupted after epoch 15; {last} holds it; {resume}"
    assert message(epoch=16, batch=0, checkpoint_epoch=15) == f"Interrupted after epoch 15; {last} holds it; {resume}"
    assert message(epoch=0, batch=0, checkpoint_epoch=0) == (
        f"Interrupted before epoch 1; {last} holds the initial weights; {resume}")
    assert message(epoch=16, batch=4, checkpoint_epoch=15) == (  # a second signal, or under torchrun
        f"Interrupted at epoch 16 batch 4; {last} holds epoch 15, so epoch 16 is trained again; {resume}")
    assert message(epoch=30, batch=0, checkpoint_epoch=30, phase="evaluation") == (
        f"Interrupted during the final evaluation after epoch 30; {resume}")
