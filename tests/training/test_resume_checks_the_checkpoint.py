"""`train --resume RUN` continues RUN only from RUN's own checkpoints: a checkpoint trained with other defining options
than RUN/config.json (another loss, subset, seed, ...: copied in from another run) is refused in one line naming the
options, before anything is written; the options a resume may change (--epochs, --device, ...) are not compared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from adacal.cli import app
from adacal.errors import CheckpointError
from adacal.training import TrainConfig, load_checkpoint, train
from adacal.training.checkpoints import save_checkpoint
from cli_helpers import one_line_error, runner, snapshot

TINY = dict(dataset="digits", device="cpu", train_subset=64, batch_size=32, epochs=1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, one_torch_thread):
    """Three finished one-epoch runs: a (adafocal), ce (--loss ce) and small (--train-subset 32)."""
    out = tmp_path_factory.mktemp("runs")
    with one_torch_thread():
        for name, options in (("a", {}), ("ce", {"loss": "ce"}), ("small", {"train_subset": 32})):
            train(TrainConfig(**{**TINY, **options}, out=str(out), name=name))
    return out


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(runs / name, tmp_path / name))


def _resume(run: Path, *args: str):
    return runner.invoke(app, ["train", "--resume", str(run), "--epochs", "3", "--quiet", *args])


@pytest.mark.parametrize(
    "other, fragment",
    [("ce", "--loss ce (config.json: adafocal)"), ("small", "--train-subset 32 (config.json: 64)")],
    ids=["another loss", "another train subset"],
)
def test_a_checkpoint_of_another_run_is_refused_and_nothing_is_written(runs, tmp_path, other, fragment):
    run = _copy(runs, "a", tmp_path)
    shutil.copy(runs / other / "checkpoints" / "last.pt", run / "checkpoints" / "last.pt")
    before = snapshot(run)
    line = one_line_error(_resume(run), fragment, "Expected", f"{run}/checkpoints/last.pt", "nothing was written")
    assert "Traceback" not in line
    assert snapshot(run) == before  # config.json, history.jsonl and every checkpoint as they were
    # --print-config (a dry run) refuses it too.
    one_line_error(_resume(run, "--print-config"), fragment)


def test_every_differing_option_is_named(runs, tmp_path):
    run = _copy(runs, "a", tmp_path)
    checkpoint = load_checkpoint(run / "checkpoints" / "last.pt")
    checkpoint["config"].update(seed=5, val_size=100)
    checkpoint["config"]["loss_options"]["gamma_max"] = 10.0
    save_checkpoint(checkpoint, run / "checkpoints" / "last.pt")
    with pytest.raises(CheckpointError) as raised:
        train(TrainConfig(resume=str(run), epochs=3))
    message = str(raised.value)
    for fragment in ("--seed 5 (config.json: 0)", "--val-size 100 (config.json: none)",
                     "--gamma-max 10.0 (config.json: 20.0)"):
        assert fragment in message, message
    assert "--epochs" not in message and "--device" not in message


def test_a_mid_epoch_checkpoint_of_another_run_is_refused(runs, tmp_path):
    """interrupted.pt is what a resume of RUN would continue from: it is compared with config.json as well."""
    run = _copy(runs, "a", tmp_path)
    foreign = load_checkpoint(runs / "ce" / "checkpoints" / "last.pt")
    foreign["partial_epoch"] = {"epoch": 2, "batch": 1, "seen": 32, "correct": 0, "loss_sum": 1.0, "updates": []}
    save_checkpoint(foreign, run / "checkpoints" / "interrupted.pt")
    before = snapshot(run)
    one_line_error(_resume(run), f"{run}/checkpoints/interrupted.pt", "--loss ce (config.json: adafocal)")
    assert snapshot(run) == before


def test_options_a_resume_may_change_and_older_config_files_are_accepted(runs, tmp_path):
    """A checkpoint written before a resume that raised --epochs (and changed --device and --workers) still belongs
    to the run; so does one whose config.json lists fewer options (another adacal version) or only the loss options
    that were typed."""
    run = _copy(runs, "a", tmp_path)
    first = (run / "checkpoints" / "last.pt").read_bytes()  # epochs=1 recorded in it
    train(TrainConfig(resume=str(run), epochs=2, workers=0, device="cpu"))
    (run / "checkpoints" / "last.pt").write_bytes(first)
    report = json.loads((run / "config.json").read_text())
    assert report["config"]["epochs"] == 2
    del report["config"]["loss_reduction"]
    report["config"]["loss_options"] = {}
    (run / "config.json").write_text(json.dumps(report))
    result = train(TrainConfig(resume=str(run), epochs=3))
    assert result.resumed_from == 1 and result.epochs == 3
