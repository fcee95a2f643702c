"""`adacal train` on CIFAR-10 in the prepared-array layout (cifar10.npz), found broken by probing: resuming with a
--data-dir that holds other data, and on/off flags named as True/False in a resume conflict. The data are tiny fake
cifar10.npz files made here (same keys as the real one), never the shared copy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from adacal.cli import app

from cli_helpers import one_line_error, runner, snapshot

CLASSES = np.array(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"])


def _fake_cifar10(folder: Path, *, n_train: int, n_test: int, seed: int) -> Path:
    """folder/cifar10.npz with random uint8 images (N, 32, 32, 3) and every class in each split."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    np.savez(
        folder / "cifar10.npz",
        train_x=rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8), train_y=np.arange(n_train) % 10,
        test_x=rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8), test_y=np.arange(n_test) % 10,
        classes=CLASSES,
    )
    return folder


def _train(*args: str):
    return runner.invoke(app, ["train", *args])


@pytest.fixture(scope="module")
def cifar_run(tmp_path_factory):
    """A one-epoch resnet20 run on a fake cifar10.npz of 120 training images (--amp: bf16 autocast on CPU)."""
    root = tmp_path_factory.mktemp("cifar")
    data = _fake_cifar10(root / "data", n_train=120, n_test=40, seed=0)
    result = _train("--dataset", "cifar10", "--data-dir", str(data), "--model", "resnet20", "--device", "cpu",
                    "--val-size", "20", "--epochs", "1", "--batch-size", "32", "--amp", "--out", str(root / "runs"),
                    "--name", "r", "-q")
    assert result.exit_code == 0, result.output
    return root, root / "runs" / "r"


def test_resume_refuses_a_data_dir_with_other_data(cifar_run):
    root, run = cifar_run
    other = _fake_cifar10(root / "other", n_train=300, n_test=40, seed=1)  # enough images for the run's sizes
    before = snapshot(run)
    result = _train("--resume", str(run), "--epochs", "2", "--data-dir", str(other))
    one_line_error(result, "--data-dir", "train_pool 100", "train_pool 280")
    assert snapshot(run) == before  # nothing trained, nothing written


def test_resume_accepts_the_same_data_moved(cifar_run, tmp_path):
    root, run = cifar_run
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "cifar10.npz").write_bytes((root / "data" / "cifar10.npz").read_bytes())
    result = _train("--resume", str(run), "--epochs", "2", "--data-dir", str(moved), "-q")
    assert result.exit_code == 0, result.output
    epochs = [json.loads(line)["epoch"] for line in (run / "history.jsonl").read_text().splitlines()]
    assert epochs == [1, 2]


@pytest.mark.parametrize(("flag", "saved"), [("--no-amp", "--amp"), ("--channels-last", "--no-channels-last")])
def test_resume_conflict_names_on_off_flags_as_typed(cifar_run, flag, saved):
    _, run = cifar_run
    line = one_line_error(_train("--resume", str(run), "--epochs", "3", flag), f"{flag} conflicts", f"with {saved};")
    assert "True" not in line and "False" not in line
