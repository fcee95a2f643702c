"""Hendrycks & Dietterich's severity tables: the five parameters of each corruption for CIFAR-10-C / CIFAR-100-C
(`make_cifar_c.py`, 32x32) and for Tiny-ImageNet-C (`make_tinyimagenet_c.py`, 64x64), each with the image size it was
made for and the step that saved its files, and `severity_table_for`, which picks a dataset's table.

Their two scripts run the same functions; only the parameters, the image size written into the code (glass blur's
loop bounds, fog's fractal side, elastic's IMSIZE, the greyscale check after motion blur) and the saving differ:
CIFAR-C was saved as uint8 arrays (.npy), Tiny-ImageNet-C as JPEG files at quality 85. A table is used only at its
native size: the size-specific constants of their code follow the image, and the parameters (pixels, sigmas, noise
levels) were chosen for that resolution, so another size would be a plausible but wrong figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adacal.errors import InputError, unknown_name

# Hendrycks' CIFAR parameters (make_cifar_c.py), severities 1-5; intensities are on the [0, 1] scale.
CIFAR_SEVERITIES: dict[str, tuple[Any, ...]] = {
    "gaussian_noise": (0.04, 0.06, 0.08, 0.09, 0.10),  # noise standard deviation
    "shot_noise": (500, 250, 100, 75, 50),  # Poisson events per unit intensity
    "impulse_noise": (0.01, 0.02, 0.03, 0.05, 0.07),  # fraction of values set to 0 or 1
    "speckle_noise": (0.06, 0.10, 0.12, 0.16, 0.20),  # standard deviation of the multiplicative noise
    "defocus_blur": ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)),  # disk radius, its alias blur
    "gaussian_blur": (0.4, 0.6, 0.7, 0.8, 1.0),  # sigma in pixels
    "glass_blur": ((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)),  # sigma, max delta, iterations
    "motion_blur": ((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)),  # radius, sigma (ImageMagick's -motion-blur)
    "zoom_blur": (1.06, 1.11, 1.16, 1.21, 1.26),  # zoom factors np.arange(1, c, 0.01), averaged with the image
    "fog": ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),  # fog strength, plasma wibble decay
    "brightness": (0.05, 0.1, 0.15, 0.2, 0.3),  # added to V (HSV)
    "contrast": (0.75, 0.5, 0.4, 0.3, 0.15),  # factor on the distance to each channel's mean
    "saturate": ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),  # S (HSV) times a plus b
    "pixelate": (0.95, 0.9, 0.85, 0.75, 0.65),  # box-resize factor down, then back up
    "jpeg_compression": (80, 65, 58, 50, 40),  # JPEG quality
    # alpha (displacement scale), sigma (its smoothness), affine (corner jitter): fractions of the image size (32)
    "elastic_transform": ((0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03)),
}

# Hendrycks' Tiny-ImageNet parameters (make_tinyimagenet_c.py), severities 1-5, the same meanings as above.
TINY_IMAGENET_SEVERITIES: dict[str, tuple[Any, ...]] = {
    "gaussian_noise": (0.04, 0.08, 0.12, 0.15, 0.18),
    "shot_noise": (250, 100, 50, 30, 15),
    "impulse_noise": (0.01, 0.02, 0.05, 0.08, 0.14),
    "speckle_noise": (0.15, 0.2, 0.25, 0.3, 0.35),
    "defocus_blur": ((0.5, 0.6), (1, 0.1), (1.5, 0.1), (2.5, 0.01), (3, 0.1)),
    "gaussian_blur": (0.5, 0.75, 1.0, 1.25, 1.5),
    "glass_blur": ((0.1, 1, 1), (0.5, 1, 1), (0.6, 1, 2), (0.7, 2, 1), (0.9, 2, 2)),  # max delta 2 at 4 and 5
    "motion_blur": ((10, 1), (10, 1.5), (10, 2), (10, 2.5), (12, 3)),
    "zoom_blur": (1.06, 1.11, 1.16, 1.21, 1.26),  # as CIFAR's
    "fog": ((0.4, 3), (0.7, 3), (1, 2.5), (1.5, 2), (2, 1.75)),  # on a 64 x 64 fractal
    "brightness": (0.1, 0.2, 0.3, 0.4, 0.5),
    "contrast": (0.4, 0.3, 0.2, 0.1, 0.05),
    "saturate": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (30, 0.2)),
    "pixelate": (0.9, 0.8, 0.7, 0.6, 0.5),
    "jpeg_compression": (65, 58, 50, 40, 25),
    # fractions of the image size (64)
    "elastic_transform": ((0, 0, 0.08), (0.05, 0.3, 0.06), (0.1, 0.08, 0.06), (0.1, 0.03, 0.03), (0.16, 0.03, 0.02)),
}


@dataclass(frozen=True)
class SeverityTable:
    """One of Hendrycks' severity tables.

    Attributes:
        name: what users type ("cifar", "tiny-imagenet").
        title: the published sets it made, for messages and docs.
        script: Hendrycks' script that holds it.
        image_size: the (height, width) it was made for; it is used at that size only.
        datasets: the registered datasets that use it.
        parameters: per corruption, the parameters of severities 1-5.
        saved_quality: the JPEG quality their files were saved at, applied to every corrupted image as a last step
            (None: the files hold the uint8 images as they are).
    """

    name: str
    title: str
    script: str
    image_size: tuple[int, int]
    datasets: tuple[str, ...]
    parameters: Mapping[str, tuple[Any, ...]]
    saved_quality: int | None = None

    def size_text(self) -> str:
        """The native size as "HxW".

        >>> SEVERITY_TABLES["tiny-imagenet"].size_text()
        '64x64'
        """
        return f"{self.image_size[0]}x{self.image_size[1]}"


DEFAULT_TABLE = "cifar"
SEVERITY_TABLES: dict[str, SeverityTable] = {
    "cifar": SeverityTable("cifar", "CIFAR-10-C / CIFAR-100-C", "make_cifar_c.py", (32, 32),
                           ("cifar10", "cifar100", "svhn"), CIFAR_SEVERITIES),
    "tiny-imagenet": SeverityTable("tiny-imagenet", "Tiny-ImageNet-C", "make_tinyimagenet_c.py", (64, 64),
                                   ("tiny-imagenet",), TINY_IMAGENET_SEVERITIES, saved_quality=85),
}


def check_table(table: Any) -> SeverityTable:
    """The severity table called `table`; an unknown name is an InputError listing the tables and the closest.

    >>> check_table("tiny-imagenet").image_size
    (64, 64)
    """
    if not isinstance(table, str) or table not in SEVERITY_TABLES:
        raise unknown_name("severity table", str(table), SEVERITY_TABLES)
    return SEVERITY_TABLES[table]


def tables_text() -> str:
    """The tables adacal has, with their sizes and datasets, for messages.

    >>> tables_text()
    'cifar (32x32: cifar10, cifar100, svhn) and tiny-imagenet (64x64: tiny-imagenet)'
    """
    return " and ".join(f"{table.name} ({table.size_text()}: {', '.join(table.datasets)})"
                        for table in SEVERITY_TABLES.values())


def table_words(table: str | None) -> str:
    """Which severity table made a generated set, in words (for notes on stderr).

    >>> table_words("tiny-imagenet")
    "Hendrycks' Tiny-ImageNet-C parameters (64x64; each image saved as JPEG quality 85, as his files were)"
    >>> table_words(None)
    'severity parameters not recorded'
    """
    chosen = SEVERITY_TABLES.get(table or "")
    if chosen is None:
        return "severity parameters not recorded"
    saved = (f"; each image saved as JPEG quality {chosen.saved_quality}, as his files were"
             if chosen.saved_quality else "")
    return f"Hendrycks' {chosen.title} parameters ({chosen.size_text()}{saved})"


def _image_size(image_shape: Sequence[int]) -> tuple[int, int]:
    """(H, W) of a per-image shape (C, H, W) or (H, W)."""
    dims = tuple(int(v) for v in image_shape)
    if len(dims) not in (2, 3):
        raise InputError(f"Expected a per-image shape (C, H, W) or (H, W), got {dims}.")
    return dims[-2], dims[-1]


def severity_table_for(dataset: str | None, image_shape: Sequence[int] | None, *, source: str | None = None) -> str:
    """The severity table to corrupt a dataset's images with: cifar10, cifar100, svhn -> "cifar"; tiny-imagenet ->
    "tiny-imagenet". A dataset without a table, or images that are not the table's native size, are refused in one
    line rather than corrupted with parameters made for another resolution.

    Args:
        dataset: a registered dataset's name; None for images of no dataset (a file): then the table whose native
            size the images have.
        image_shape: the per-image shape, (C, H, W) as `Dataset.input_shape` and `OODSet.shape` give it, or (H, W);
            None checks the dataset alone (before its images are loaded).
        source: where images of no dataset come from (a file's path), for messages.

    Returns:
        The table's name (a key of `SEVERITY_TABLES`).

    >>> severity_table_for("svhn", (3, 32, 32)), severity_table_for("tiny-imagenet", (3, 64, 64))
    ('cifar', 'tiny-imagenet')
    >>> severity_table_for("cifar10", (3, 48, 48))
    Traceback (most recent call last):
    ...
    adacal.errors.InputError: Expected 32x32 images for cifar10 (its severity table 'cifar' is made for 32x32),
    got 48x48; ...
    """
    if dataset is None:
        if image_shape is None:
            raise InputError("Expected a dataset or an image shape to choose a severity table by, got neither.")
        height, width = _image_size(image_shape)
        for table in SEVERITY_TABLES.values():
            if table.image_size == (height, width):
                return table.name
        raise InputError(
            f"Expected images of a size adacal has corruption severities for, got {height}x{width} images"
            f"{f' in {source}' if source else ''}; adacal has the tables {tables_text()} and uses each at its own "
            "size only."
        )
    key = str(dataset).strip().lower()
    chosen = next((table for table in SEVERITY_TABLES.values() if key in table.datasets), None)
    if chosen is None:
        raise InputError(
            f"Expected a dataset adacal has corruption severities for, got {key}; adacal has the tables "
            f"{tables_text()}."
        )
    if image_shape is not None:
        height, width = _image_size(image_shape)
        if (height, width) != chosen.image_size:
            raise InputError(
                f"Expected {chosen.size_text()} images for {key} (its severity table '{chosen.name}' is made for "
                f"{chosen.size_text()}), got {height}x{width}; adacal has the tables {tables_text()} and uses each "
                "at its own size only."
            )
    return chosen.name
