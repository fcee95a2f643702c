"""Shared fixtures' makings for the corruption tests: smooth synthetic photographs, PSNR, fake CIFAR folders."""

from __future__ import annotations

import numpy as np

from adacal.data import write_image_npz


def natural_images(n: int = 64, size: int = 32, seed: int = 0) -> np.ndarray:
    """(n, size, size, 3) uint8 smooth random fields with photographs' statistics: a 1/f^2 amplitude spectrum in
    luminance (soft shapes and edges) and smoother, weaker colour; no downloads."""
    rng = np.random.default_rng(seed)
    frequency = np.hypot(*np.meshgrid(np.fft.fftfreq(size), np.fft.fftfreq(size), indexing="ij"))
    frequency[0, 0] = 1.0

    def field(falloff: float) -> np.ndarray:
        spectrum = rng.standard_normal((n, size, size)) + 1j * rng.standard_normal((n, size, size))
        spectrum /= frequency**falloff
        spectrum[:, 0, 0] = 0
        values = np.fft.ifft2(spectrum).real
        return values / values.std(axis=(1, 2), keepdims=True)

    luma = 120 + 45 * field(2.0)[..., None]
    chroma = np.stack([field(2.5), field(2.5)], axis=-1) @ np.array([[1.0, -0.3, -0.7], [0.0, 0.6, -0.6]]) * 25
    return np.clip(np.rint(luma + chroma), 0, 255).astype(np.uint8)


def psnr(clean: np.ndarray, corrupted: np.ndarray) -> float:
    """Mean over images of the peak signal-to-noise ratio (dB) of uint8 images."""
    error = ((clean.astype(np.float64) - corrupted) ** 2).mean(axis=(1, 2, 3))
    return float(np.mean(10 * np.log10(255.0**2 / np.maximum(error, 1e-10))))


def write_cifar(root, *, n_test: int = 30, seed: int = 0) -> np.ndarray:
    """A fake cifar10.npz in `root` (100 training images, n_test smooth test images, labels i % 10); its test_x."""
    test_x = natural_images(n_test, seed=seed)
    rng = np.random.default_rng(seed)
    write_image_npz(
        root / "cifar10.npz",
        train_x=rng.integers(0, 256, (100, 32, 32, 3), dtype=np.uint8), train_y=np.arange(100) % 10,
        test_x=test_x, test_y=np.arange(n_test) % 10, classes=[f"c{i}" for i in range(10)],
    )
    return test_x


def write_hendrycks(folder, names=("fog",), n=20, seed=0, labels=None):
    """Files in Hendrycks' layout for n test images: <name>.npy (5n, 32, 32, 3) uint8 with every pixel of severity s
    holding s * 10 + (image index % 10), and labels.npy (the n labels repeated per severity)."""
    folder.mkdir(parents=True, exist_ok=True)
    index = np.arange(n)
    images = np.zeros((5 * n, 32, 32, 3), dtype=np.uint8)
    for s in range(1, 6):
        images[(s - 1) * n : s * n] = (s * 10 + index % 10)[:, None, None, None]
    if labels is None:
        labels = np.random.default_rng(seed).integers(0, 10, n)
    labels = np.tile(np.asarray(labels), 5)
    for name in names:
        np.save(folder / f"{name}.npy", images)
    np.save(folder / "labels.npy", labels)
    return images, labels
