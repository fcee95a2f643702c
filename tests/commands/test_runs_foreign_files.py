"""Run folders in states nobody planned for: files of another run copied in, a stale interrupted.pt. `evaluate` and
`calibrate` either score what the folder really holds or refuse in one line, leaving the folder as it was."""

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from adacal.commands.calibrate import run_calibrate
from adacal.errors import InputError
from adacal.commands.evaluate import run_evaluate
from adacal.metrics import compute_metrics
from adacal.runs import RUN_ID_KEY, RunFolder, predictions_run_id, run_config, run_id_of


@pytest.fixture(scope="module")
def runs(tmp_path_factory, one_torch_thread):
    """Three tiny digits runs: b with other options (--test-subset 30 --val-size 50), c as a with another seed (its
    files have the same sizes as a's)."""
    from adacal.training import TrainConfig, train

    root = tmp_path_factory.mktemp("runs")
    made = {}
    with one_torch_thread():
        for name, extra in (("a", {}), ("b", {"test_subset": 30, "val_size": 50}), ("c", {"seed": 1})):
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


def test_predictions_of_a_run_with_the_same_sizes_are_refused_by_their_run_id(runs, tmp_path):
    """Another seed of the same protocol: every split has the sizes config.json records, so only the run id, stored in
    config.json and in predictions.npz, tells the files apart. evaluate, calibrate and plot refuse in one line."""
    from adacal.cli import app

    from cli_helpers import one_line_error, runner

    run = _copy(runs["a"], tmp_path)
    shutil.copy(runs["c"] / "predictions.npz", run / "predictions.npz")
    own, other = run_id_of(run_config(RunFolder(runs["a"]))), run_id_of(run_config(RunFolder(runs["c"])))
    assert own and other and own != other
    before = _hashes(run)
    for call in (lambda: run_evaluate(run), lambda: run_calibrate(run), lambda: run_calibrate(run / "predictions.npz")):
        with pytest.raises(InputError, match=f"predictions of run {own} .*found run {other}'s: it is not this run's"):
            call()
    for args in (["evaluate", str(run)], ["calibrate", str(run)],
                 ["plot", "reliability", str(run), "--out", str(tmp_path / "r.png")],
                 ["plot", "reliability", str(run / "predictions.npz"), "--out", str(tmp_path / "r.png")]):
        one_line_error(runner.invoke(app, args), "not this run's predictions")
    assert _hashes(run) == before and not (tmp_path / "r.png").exists()
    # The file itself, named as a file, is scored as the numbers it holds (nothing is written into the run).
    assert run_evaluate(run / "predictions.npz").source.source == "file"


def test_each_run_stores_its_own_id_in_its_predictions(runs):
    for run in runs.values():
        recorded = run_id_of(run_config(RunFolder(run)))
        assert recorded is not None and len(recorded) == 32
        assert predictions_run_id(run / "predictions.npz") == recorded
    with np.load(runs["a"] / "predictions.npz") as arrays:
        assert arrays[RUN_ID_KEY].dtype == np.uint8 and arrays[RUN_ID_KEY].shape == (16,)


def test_a_resumed_run_keeps_its_id(tmp_path, one_torch_thread):
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        run = train(TrainConfig(dataset="digits", device="cpu", epochs=1, train_subset=64, batch_size=32,
                                out=str(tmp_path), name="r")).run_dir
        recorded = run_id_of(run_config(RunFolder(run)))
        train(TrainConfig(dataset="digits", device="cpu", epochs=2, train_subset=64, batch_size=32, resume=str(run)))
    assert run_id_of(run_config(RunFolder(run))) == recorded
    assert predictions_run_id(run / "predictions.npz") == recorded
    assert run_evaluate(run).report["results"]["n_samples"] > 0


def test_files_of_an_earlier_adacal_without_a_run_id_are_still_read(runs, tmp_path):
    """A predictions.npz without the key (an earlier adacal), or a config.json without the id: only the sizes are
    checked, as before."""
    run = _copy(runs["a"], tmp_path)
    with np.load(run / "predictions.npz") as arrays:
        kept = {key: arrays[key] for key in arrays.files if key != RUN_ID_KEY}
    np.savez(run / "predictions.npz", **kept)
    assert predictions_run_id(run / "predictions.npz") is None
    expected = compute_metrics(kept["test_logits"], kept["test_labels"], names=["nll"])["nll"]
    assert run_evaluate(run).report["results"]["metrics"]["nll"] == pytest.approx(expected)
    shutil.copy(runs["c"] / "predictions.npz", run / "predictions.npz")
    import json

    config = json.loads((run / "config.json").read_text())
    del config["results"][RUN_ID_KEY]
    (run / "config.json").write_text(json.dumps(config))
    assert run_calibrate(run).n_val > 0


def test_ood_does_not_take_another_runs_predictions_for_the_in_distribution_set(runs, tmp_path, one_torch_thread):
    from adacal.commands.ood import run_ood

    run = _copy(runs["a"], tmp_path)
    shutil.copy(runs["c"] / "predictions.npz", run / "predictions.npz")
    vectors = tmp_path / "vectors.npz"
    np.savez(vectors, x=np.random.default_rng(0).random((20, 64)))
    with one_torch_thread(), pytest.raises(InputError, match="not this run's predictions"):
        run_ood(model=run, out_name=str(vectors), device="cpu", json_path=tmp_path / "ood.json")
    assert not (tmp_path / "ood.json").exists()
