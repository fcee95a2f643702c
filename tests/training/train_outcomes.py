"""What a faulted training run must end up equal to, for the tests of kills, full disks and interrupts: the small
digits run they all train (OPTIONS, EPOCHS), what its run folder holds once finished, and the check that two such
outcomes are the same to the bit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from adacal.runs import RUN_ID_KEY
from adacal.training import TrainConfig, load_checkpoint, train

EPOCHS = 6
OPTIONS = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, optimizer="sgd", lr=0.05,
               milestones=(4,), seed=3)


def only_run(out: Path) -> Path:
    """The one run folder under `out` (fails when there is not exactly one)."""
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def history(run: Path) -> list[dict]:
    """The records of the run's history.jsonl, without their timings."""
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (run / "history.jsonl").read_text().splitlines()]


def temp_files(run: Path) -> list[Path]:
    """The temp files an interrupted write left anywhere in the run folder."""
    return [p for p in run.rglob("*.tmp")]


def outcome(run: Path) -> dict:
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
        "history": history(run),
        "predictions": predictions,
        "results": json.loads((run / "evaluate.json").read_text())["results"],
    }


def assert_same(a: dict, b: dict) -> None:
    """Two outcomes of runs trained to EPOCHS are equal: weights, γ and the loss's state, LR, history, predictions
    and the evaluation results, exactly."""
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


def resume_run(run: Path) -> None:
    """Resume `run` (in this process) and train it to EPOCHS."""
    result = train(TrainConfig(resume=str(run), epochs=EPOCHS))
    assert result.resumed_from is not None and result.epochs == EPOCHS


def uninterrupted_outcome(out: Path, options: dict) -> dict:
    """The outcome of a run of `options` trained to the end without faults, under `out`."""
    train(TrainConfig(**options, epochs=EPOCHS, out=str(out)))
    return outcome(only_run(out))
