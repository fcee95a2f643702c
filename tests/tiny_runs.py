"""A tiny trained CIFAR-shaped run, for the tests that score a real model offline (tests/commands/, tests/cli/).

Test modules import it by name (`from tiny_runs import tiny_cifar_run`): tests/conftest.py puts
tests/ on sys.path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def tiny_cifar_run(data: Path, runs: Path) -> tuple[Path, np.ndarray]:
    """resnet20 trained for one epoch on 120 random CIFAR-shaped images in `data`/cifar10.npz, scored on a 40-image
    test subset of 60, beside Hendrycks-layout CIFAR-10-C files whose 'fog' at severity 5 is the clean test set itself
    (so its logits must equal the clean logits of the same images) and whose other severities are blank.

    Returns:
        (the run folder, the 60 clean test images).
    """
    from adacal.data import write_image_npz
    from adacal.training import TrainConfig, train

    rng = np.random.default_rng(0)
    test_x = rng.integers(0, 256, (60, 32, 32, 3), dtype=np.uint8)
    test_y = np.arange(60) % 10
    write_image_npz(data / "cifar10.npz", train_x=rng.integers(0, 256, (120, 32, 32, 3), dtype=np.uint8),
                    train_y=np.arange(120) % 10, test_x=test_x, test_y=test_y, classes=[f"c{i}" for i in range(10)])
    hendrycks = data / "CIFAR-10-C"
    hendrycks.mkdir()
    fog = np.zeros((300, 32, 32, 3), dtype=np.uint8)
    fog[240:] = test_x
    np.save(hendrycks / "fog.npy", fog)
    np.save(hendrycks / "labels.npy", np.tile(test_y, 5))
    result = train(TrainConfig(dataset="cifar10", data_dir=str(data), model="resnet20", loss="ce", epochs=1,
                               batch_size=32, val_size=40, test_subset=40, out=str(runs), device="cpu"))
    return Path(result.run_dir), test_x
