"""Small files of the user's own data for the `adacal train --dataset <path>` tests: an image folder written by PIL, a
CSV and an .npz (tests/data/test_user_*.py import it by name; tests/conftest.py puts tests/ on sys.path)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

CLASSES = ("cat", "dog", "eel")


def write_image_folder(root: Path, *, per_class: int = 12, classes=CLASSES, size=(8, 8), mode: str = "RGB",
                       seed: int = 0) -> dict[str, list[np.ndarray]]:
    """`root/<class>/<i>.png`: `per_class` random PNGs per class (class k brighter than k - 1); returns the arrays
    written, by class."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    written: dict[str, list[np.ndarray]] = {}
    for k, name in enumerate(classes):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        written[name] = []
        for i in range(per_class):
            shape = (size[1], size[0]) if mode == "L" else (size[1], size[0], 3)
            array = np.clip(rng.normal(60 * k + 50, 25, shape), 0, 255).astype(np.uint8)
            Image.fromarray(array).save(folder / f"{i:03d}.png")
            written[name].append(array)
    return written


def write_csv(path: Path, *, rows: int = 60, label: str = "label", labels=None, seed: int = 0) -> np.ndarray:
    """A CSV with features a, b, c and a label column; returns the features written (rows, 3)."""
    rng = np.random.default_rng(seed)
    labels = [("setosa", "versicolor", "virginica")[i % 3] for i in range(rows)] if labels is None else labels
    features = np.round(rng.normal(size=(rows, 3)) * 3 + 10, 4)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", label, "c"])
        for row, value in zip(features, labels):
            writer.writerow([row[0], row[1], value, row[2]])
    return features
