"""Run folders in states nobody planned for: files of another run copied in, a stale interrupted.pt. `evaluate` and
`calibrate` either score what the folder really holds or refuse in one line, leaving the folder as it was."""

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.calibrate import run_calibrate
from adacal.errors import InputError
from adacal.evaluation import run_evaluate
from adacal.metrics import compute_metrics


@pytest.fixture(scope="module")
def runs(tmp_path_factory, one_torch_thread):
    """Two tiny digits runs with other options (the second with --test-subset 30 --val-size 50)."""
    from adacal.training import TrainConfig, train

    root = tmp_path_factory.mktemp("runs")
    made = {}
    with one_torch_thread():
        for name, extra in (("a", {}), ("b", {"test_subset": 30, "val_size": 50})):
            made[name] = train(TrainConfig(dataset="digits", device="cpu", epochs=1, train_subset=64, batch_size=32,
                                           out=str(root), name=name, **extra)).run_dir
    return made


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_predictions_of_another_run_copied_in_are_refused(runs, tmp_path):
    run = _copy(runs["a"], tmp_path)
    shutil.copy(runs["b"] / "predictions.npz", run / "predictions.npz")
    before = _hashes(run)
    with pytest.raises(InputError, match="not this run's predictions"):
        run_evaluate(run)
    with pytest.raises(InputError, match="not this run's predictions"):
        run_calibrate(run)
    assert _hashes(run) == before


def test_a_checkpoint_of_another_run_copied_in_is_refused(runs, tmp_path):
    run = _copy(runs["a"], tmp_path)
    shutil.copy(runs["b"] / "checkpoints" / "last.pt", run / "checkpoints" / "last.pt")
    before = _hashes(run)
    for call in (lambda: run_evaluate(run / "checkpoints" / "last.pt"),  # predictions.npz must not stand for it
                 lambda: run_calibrate(run / "checkpoints" / "last.pt")):
        with pytest.raises(InputError, match="checkpoint of the run"):
            call()
    (run / "predictions.npz").unlink()
    before = _hashes(run)
    for call in (lambda: run_evaluate(run), lambda: run_calibrate(run)):  # the selected checkpoint is run
        with pytest.raises(InputError, match="--test-subset 30"):
            call()
    assert _hashes(run) == before


def test_a_stale_interrupted_checkpoint_is_scored_itself_not_described_by_predictions(runs, tmp_path):
    run = _copy(runs["a"], tmp_path)
    last = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    state = {key: value * 0.5 if value.is_floating_point() else value for key, value in last["model_state"].items()}
    partial = {**last, "model_state": state, "partial_epoch": {"epoch": last["epoch"] + 1, "batch": 1, "seen": 32,
                                                                        "correct": 3, "loss_sum": 70.0, "updates": []}}
    torch.save(partial, run / "checkpoints" / "interrupted.pt")
    before = _hashes(run)
    scored = run_evaluate(run / "checkpoints" / "interrupted.pt")
    assert scored.source.source == "checkpoint"
    saved = np.load(run / "predictions.npz")
    from_predictions = compute_metrics(saved["test_logits"], saved["test_labels"], names=["nll"])["nll"]
    assert scored.report["results"]["metrics"]["nll"] != pytest.approx(from_predictions)
    assert _hashes(run) == before  # the run's own evaluate.json is kept


def test_the_runs_own_files_still_give_the_direct_numbers(runs, tmp_path):
    run = _copy(runs["b"], tmp_path)
    saved = np.load(run / "predictions.npz")
    expected = compute_metrics(saved["test_logits"], saved["test_labels"], names=["ece-em", "nll"])
    got = run_evaluate(str(run) + "/").report["results"]
    assert got["n_samples"] == 30
    assert got["metrics"]["ece_em"] == pytest.approx(expected["ece_em"])
    assert got["metrics"]["nll"] == pytest.approx(expected["nll"])
    assert run_calibrate(run).n_val == 50
