"""Fixtures the CLI tests share: a tiny trained run, built by the module that asks for it."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def train_tiny_run(one_torch_thread):
    """`train_tiny_run(root, epochs=1, loss=None)` trains a digits/mlp run on 64 samples (batches of 32, CPU, one
    thread) under root/runs and returns its folder; `loss` None keeps the default loss (adafocal). Each call trains
    afresh: a module may then change its run without touching another's."""

    def train_run(root: Path, *, epochs: int = 1, loss: str | None = None) -> Path:
        from adacal.training import TrainConfig, train

        options = {} if loss is None else {"loss": loss}
        with one_torch_thread():
            result = train(TrainConfig(dataset="digits", device="cpu", epochs=epochs, train_subset=64, batch_size=32,
                                       out=str(root / "runs"), **options))
        return result.run_dir

    return train_run
