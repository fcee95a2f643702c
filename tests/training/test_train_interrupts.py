"""Training stops cleanly on Ctrl-C and SIGTERM: a signal mid-epoch (in a training step, in an epoch's last step, in a
per-batch γ-update) saves checkpoints/interrupted.pt and `--resume` continues at the next batch; a second signal stops
at once and the epoch is repeated from last.pt; a stale interrupted.pt is ignored; a signal outside an epoch's batches
(while last.pt is written, in the validation pass) writes no interrupted.pt and the message says what last.pt holds.

Every interrupted run, resumed, finishes with exactly the weights, γ, history, predictions and report of an
uninterrupted one. The runs train in this process: `train` installs its signal handlers in the main thread, and the
signal is sent by patching the call where it should land. The kills a run cannot catch (SIGKILL), full disks and racing
runs are tested in test_train_faults.py.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
from pathlib import Path

import pytest

from adacal.training import TrainConfig, TrainingInterrupted, load_checkpoint, train
from train_outcomes import (
    EPOCHS,
    OPTIONS,
    assert_same,
    history,
    only_run,
    outcome,
    resume_run,
    temp_files,
    uninterrupted_outcome,
)


# ------------------------------------------------------------------------------- Ctrl-C / SIGTERM mid-epoch
# In this process: the signal handlers are installed by `train` in the main thread; a patched call sends the signal.

# Dropout (the torch RNG stream must continue exactly) and a γ-update after every batch (records of the epoch so far
# and AdaFocal's C_train accumulators travel in the mid-epoch checkpoint).
MID_EPOCH = {**OPTIONS, "model": "mlp", "model_options": {"dropout": 0.3}, "update_every": "1"}


@pytest.fixture(scope="module")
def mid_epoch_reference(tmp_path_factory, one_torch_thread):
    with one_torch_thread():
        return uninterrupted_outcome(tmp_path_factory.mktemp("mid-epoch-reference"), MID_EPOCH)


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


def _interrupt(monkeypatch, out: Path, install, options: dict = MID_EPOCH) -> tuple[Path, TrainingInterrupted]:
    """Train a run of `options` under `out` with the signal `install` sets up; it must stop with TrainingInterrupted
    and leave the process's signal handlers as they were."""
    install()
    with pytest.raises(TrainingInterrupted) as raised:
        train(TrainConfig(**options, epochs=EPOCHS, out=str(out)))
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    return only_run(out), raised.value


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
    assert len(history(run)) == epoch - 1 and temp_files(run) == []

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
    assert_same(outcome(run), mid_epoch_reference)


def test_a_second_signal_stops_at_once_and_resume_repeats_the_epoch(mid_epoch_reference, tmp_path, monkeypatch):
    run, interrupted = _interrupt(
        monkeypatch, tmp_path, lambda: _signals_in_training_step(monkeypatch, 5, (signal.SIGINT, signal.SIGINT)))
    assert interrupted.saved is None and (interrupted.epoch, interrupted.batch) == (3, 1)
    assert "saved" not in interrupted.message and interrupted.message.endswith(f"--epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(run / "checkpoints" / "last.pt")["epoch"] == 2
    resume_run(run)
    assert json.loads((run / "config.json").read_text())["results"]["resumes"][0]["from_epoch"] == 2
    assert_same(outcome(run), mid_epoch_reference)


def test_a_stale_interrupted_checkpoint_is_ignored(mid_epoch_reference, tmp_path, monkeypatch):
    """interrupted.pt of epoch 3 left beside a last.pt of epoch 4 (a SIGKILL after epoch 4 was saved, before the file
    was deleted): resuming continues from last.pt, not from the old mid-epoch state."""
    run, _ = _interrupt(monkeypatch, tmp_path, lambda: _signals_in_training_step(monkeypatch, 5, (signal.SIGTERM,)))
    saved = run / "checkpoints" / "interrupted.pt"
    stale = saved.read_bytes()
    train(TrainConfig(resume=str(run), epochs=4))
    assert not saved.exists()
    saved.write_bytes(stale)
    resume_run(run)
    last_resume = json.loads((run / "config.json").read_text())["results"]["resumes"][-1]
    assert last_resume["from_epoch"] == 4 and "from_batch" not in last_resume
    assert_same(outcome(run), mid_epoch_reference)


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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_between_epochs_says_last_pt_holds_the_epoch_and_resume_is_exact(
    reference, tmp_path, monkeypatch, signum
):
    """A signal while last.pt of epoch 3 is written: the write finishes, epoch 3 is complete, nothing of epoch 4 was
    trained, so there is no interrupted.pt and the line says so instead of naming a batch."""
    run, interrupted = _interrupt(
        monkeypatch, tmp_path, lambda: _signal_in_last_write(monkeypatch, 3, signum), OPTIONS)
    last = run / "checkpoints" / "last.pt"
    assert interrupted.saved is None
    assert interrupted.message == (
        f"Interrupted after epoch 3; {last} holds it; resume with: adacal train --resume {run} --epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(last)["epoch"] == 3 and len(history(run)) == 3
    resume_run(run)
    assert_same(outcome(run), reference)


def test_an_interrupt_in_the_validation_pass_says_the_epoch_is_trained_again(reference, tmp_path, monkeypatch):
    run, interrupted = _interrupt(
        monkeypatch, tmp_path, lambda: _signal_in_validation(monkeypatch, 3, signal.SIGINT), OPTIONS)
    last = run / "checkpoints" / "last.pt"
    assert interrupted.message == (
        f"Interrupted at the end of epoch 3, before its checkpoint was written; {last} holds epoch 2, so epoch 3 is "
        f"trained again; resume with: adacal train --resume {run} --epochs {EPOCHS}")
    assert not (run / "checkpoints" / "interrupted.pt").exists()
    assert load_checkpoint(last)["epoch"] == 2 and len(history(run)) == 2
    resume_run(run)
    assert_same(outcome(run), reference)


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
