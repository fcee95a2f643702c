"""The corruption suite: its registry, the severity parameter of a corruption in one of Hendrycks & Dietterich's
tables (`severity_parameter`; the tables are in `tables`), the corruptions it cannot make (and why), and the chunked
uint8 machinery every generator runs through.

Every generator has one signature, `(images, *, severity, seed=0, layout="auto", table="cifar")`: uint8 images
(N, H, W, C) or (N, C, H, W), numpy or torch, in; uint8 of the same layout and type out. `table` picks the
parameters: "cifar" (CIFAR-10-C's, the default) or "tiny-imagenet" (Tiny-ImageNet-C's, whose files were saved as
JPEG at quality 85: that save is the last step of every corruption with this table). `corrupt_images` does the
common part: it checks the images, views them channels last, and hands the generator's `transform(block, rng)` one
chunk of images at a time (memory stays bounded), with one `numpy.random.default_rng(seed)` for the whole call. A
transform returns the chunk's corrupted values on the [0, 1] scale (clipped and rounded to the nearest grey level
here, `to_uint8`), or uint8 values as they are; then the table's final save, if it has one (`jpeg_round_trip`).
A table is not checked against the images' size here: `severity_table_for` chooses a dataset's table and refuses
images of another size.

Determinism: a transform draws from `rng` in image order (all of image i's numbers before any of image i + 1's, as
many for every image), so the result is the same bytes for the same seed and images whatever the chunk size, and the
same for NHWC and NCHW input. It depends on the batch, though: image i's numbers are the i-th of the call's stream,
so a subset corrupted alone gets other noise than the same images inside the whole set (use the whole set, as
`load_shifted_set` does, for a reproducible set).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import io

import numpy as np
import torch
from PIL import Image

from adacal.data.corruptions.tables import CIFAR_SEVERITIES, DEFAULT_TABLE, check_table
from adacal.errors import InputError, unknown_name
from adacal.registry import Registry

CORRUPTIONS: Registry[Any] = Registry("corruption")
# The version of each registered generator, hashed into the cache file names (`adacal.data.corruptions.cache`):
# bump it when a generator's output changes, and no cached set made by the old one is read again.
GENERATOR_VERSIONS: dict[str, str] = {}

# The corruptions of Hendrycks & Dietterich's published CIFAR-10-C / CIFAR-100-C (15 main + 4 extra), as file stems,
# in the order of their make_cifar_c.py.
CIFAR_C_CORRUPTIONS = (
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate", "jpeg_compression",
    "speckle_noise", "gaussian_blur", "spatter", "saturate",
)
CIFAR_C_SEVERITIES = 5

# Hendrycks' CIFAR parameters, the default table (`adacal.data.corruptions.tables` holds both tables).
SEVERITIES: dict[str, tuple[Any, ...]] = CIFAR_SEVERITIES
GAUSSIAN_NOISE_SIGMAS = SEVERITIES["gaussian_noise"]

# Hendrycks' corruptions adacal does not generate, and why (used in error messages and docs/corruptions.md).
UNAVAILABLE: dict[str, str] = {
    "snow": "needs ImageMagick's motion blur of a random snow layer and OpenCV's colour conversion, which adacal "
            "does not reproduce",
    "frost": "needs Hendrycks' frost images, which adacal does not ship",
    "spatter": "needs OpenCV's Canny edges, distance transform and histogram equalisation for its water drops, which "
               "adacal's dependencies do not reproduce faithfully",
}

# Working memory per chunk, in image values (1024 CIFAR images); a generator may ask for fewer images per chunk.
VALUES_PER_CHUNK = 1024 * 32 * 32 * 3


def check_severity(severity: Any) -> int:
    """A severity as an int from 1 to 5; anything else (a bool, a float, a string) is an InputError.

    Args:
        severity: what the user gave.

    Returns:
        The severity as a Python int.

    >>> check_severity(3)
    3
    """
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= severity <= 5:
        raise InputError(f"Expected severity to be an integer from 1 to 5, got {severity!r}.")
    return int(severity)


def severity_parameter(name: str, severity: Any, table: str = DEFAULT_TABLE) -> Any:
    """Hendrycks' parameter of corruption `name` at `severity` (checked) in severity table `table` ("cifar":
    `SEVERITIES`, "tiny-imagenet"; an unknown table is an InputError listing them).

    >>> severity_parameter("jpeg_compression", 5), severity_parameter("jpeg_compression", 5, "tiny-imagenet")
    (40, 25)
    """
    level = check_severity(severity)
    return check_table(table).parameters[name][level - 1]


def resolve_layout(shape: tuple[int, ...], layout: str) -> str:
    """"nhwc" or "nchw" for a batch of images of `shape`; "auto" reads channels last when the last axis is 1 or 3.

    >>> resolve_layout((8, 3, 32, 32), "auto")
    'nchw'
    """
    if layout in ("nhwc", "nchw"):
        return layout
    if layout != "auto":
        raise InputError(f"Expected layout auto, nhwc or nchw, got {layout!r}.")
    if shape[-1] in (1, 3):
        return "nhwc"
    if shape[1] in (1, 3):
        return "nchw"
    raise InputError(f"Expected images (N, H, W, C) or (N, C, H, W) with C = 1 or 3, got shape {shape}.")


def to_uint8(values: np.ndarray) -> np.ndarray:
    """Values on the [0, 1] scale as uint8 grey levels: clipped, times 255, rounded to the nearest (np.rint). Hendrycks'
    script truncates (np.uint8), which darkens by half a grey level on average. `values` may be clipped in place.

    >>> to_uint8(np.array([-0.1, 0.5, 0.999, 1.2], dtype=np.float32))
    array([  0, 128, 255, 255], dtype=uint8)
    """
    if values.dtype == np.uint8:
        return values
    np.clip(values, 0.0, 1.0, out=values)
    return np.rint(values * 255.0).astype(np.uint8)


def jpeg_round_trip(block: np.ndarray, quality: int) -> np.ndarray:
    """Each uint8 image of a chunk (n, H, W, C), C = 1 or 3, saved by PIL as JPEG at `quality` (default 4:2:0 chroma
    subsampling for RGB) and decoded: jpeg_compression's step, and the save that made Tiny-ImageNet-C's files.

    >>> grey = np.full((1, 16, 16, 3), 90, np.uint8)
    >>> int(np.abs(jpeg_round_trip(grey, 85).astype(int) - 90).max()) <= 1
    True
    """
    out = np.empty_like(block)
    for index, image in enumerate(block):
        buffer = io.BytesIO()
        Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(buffer, format="JPEG", quality=quality)
        buffer.seek(0)
        decoded = Image.open(buffer)
        decoded.load()
        out[index] = np.asarray(decoded).reshape(image.shape)
    return out


def corrupt_images(
    images: Any,
    transform: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    *,
    seed: int,
    layout: str,
    name: str,
    weight: float = 1.0,
    rgb_only: bool = False,
    table: str = DEFAULT_TABLE,
) -> Any:
    """Run `transform(block, rng)` over uint8 images chunk by chunk; the generators' common body.

    Args:
        images: uint8 (N, H, W, C) or (N, C, H, W), C = 1 or 3, numpy or torch.
        transform: maps a uint8 (n, H, W, C) chunk and the call's generator to its corrupted values ([0, 1] floats,
            or uint8), drawing from the generator in image order (module docstring).
        seed: seeds the one generator of the call.
        layout: "auto", "nhwc" or "nchw" (`resolve_layout`).
        name: the corruption, for messages.
        weight: how much more working memory the transform needs than most (chunks of 1024 CIFAR images at 1).
        rgb_only: refuse single-channel images (colour corruptions).
        table: the severity table the transform's parameters come from; its final save (Tiny-ImageNet-C's JPEG at
            quality 85) is applied to every corrupted image.

    Returns:
        uint8 images of the input's layout and type (a torch tensor for a tensor).

    >>> flip = lambda block, rng: 1.0 - block / 255.0
    >>> corrupt_images(np.zeros((1, 2, 2, 1), np.uint8), flip, seed=0, layout="auto", name="flip")[0, :, :, 0]
    array([[255, 255],
           [255, 255]], dtype=uint8)
    """
    saved_quality = check_table(table).saved_quality
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"Expected seed to be a non-negative integer, got {seed!r}.")
    is_torch = isinstance(images, torch.Tensor)
    array = images.detach().cpu().numpy() if is_torch else np.asarray(images)
    if array.dtype != np.uint8:
        raise InputError(f"Expected uint8 images, got dtype {array.dtype}.")
    if array.ndim != 4:
        raise InputError("Expected a batch of images with 4 axes (N, H, W, C) or (N, C, H, W), got shape "
                         f"{array.shape}.")
    order = resolve_layout(array.shape, layout)
    hwc = array if order == "nhwc" else array.transpose(0, 2, 3, 1)
    if rgb_only and hwc.shape[-1] != 3:
        raise InputError(f"Expected RGB images (3 channels) for {name}, got {hwc.shape[-1]} channel(s).")
    rng = np.random.default_rng(int(seed))
    out = np.empty(hwc.shape, dtype=np.uint8)
    per_image = max(1, int(np.prod(hwc.shape[1:])))
    step = max(1, int(VALUES_PER_CHUNK / (per_image * weight)))
    for start in range(0, len(hwc), step):
        block = np.ascontiguousarray(hwc[start : start + step])
        corrupted = to_uint8(transform(block, rng))
        out[start : start + step] = corrupted if saved_quality is None else jpeg_round_trip(corrupted, saved_quality)
    if order == "nchw":
        out = np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    return torch.from_numpy(out) if is_torch else out


def register_corruption(name: str, *, version: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a generator in `CORRUPTIONS` under `name`, with the version its cached sets are keyed by.

    >>> "fog" in CORRUPTIONS and GENERATOR_VERSIONS["fog"] != ""
    True
    """
    def decorator(generator: Callable[..., Any]) -> Callable[..., Any]:
        CORRUPTIONS.register(name)(generator)
        GENERATOR_VERSIONS[name] = str(version)
        return generator

    return decorator


def corruption_names() -> list[str]:
    """The corruptions adacal generates, sorted, as `corrupt` and `adacal ood --corruption` take them.

    >>> "gaussian_noise" in corruption_names()
    True
    """
    return CORRUPTIONS.names()


def shift_corruptions() -> list[str]:
    """The corruptions adacal generates, in Hendrycks' order (`CIFAR_C_CORRUPTIONS` less `UNAVAILABLE`).

    >>> shift_corruptions()[:3]
    ['gaussian_noise', 'shot_noise', 'impulse_noise']
    """
    return [name for name in CIFAR_C_CORRUPTIONS if name in CORRUPTIONS]


def known_corruptions() -> list[str]:
    """Every corruption name --corruption accepts: the generated ones and those of Hendrycks' CIFAR-C files.

    >>> len(known_corruptions())
    19
    """
    return sorted({*CIFAR_C_CORRUPTIONS, *CORRUPTIONS.names()})


def unavailable_reason(name: str) -> str:
    """One line saying why adacal does not generate `name` and what to use instead.

    >>> unavailable_reason("frost")
    "'frost' needs Hendrycks' frost images, which adacal does not ship; use their CIFAR-10-C files with --data-dir"
    """
    why = UNAVAILABLE.get(name, "is not one adacal generates")
    return f"'{name}' {why}; use their CIFAR-10-C files with --data-dir"


def check_corruption(name: Any, *, generated: bool = False) -> str:
    """A known corruption name in lower case; an unknown one is an error listing the names and the closest.

    Args:
        name: what the user typed ("Motion_Blur" is accepted as motion_blur).
        generated: the corruption must be one adacal generates (there are no files for it): one of Hendrycks' that
            it cannot make (frost, snow, spatter) is an InputError giving the reason (`unavailable_reason`).

    Returns:
        The name in lower case.

    >>> check_corruption("Motion_Blur")
    'motion_blur'
    """
    key = str(name).strip().lower()
    if key not in known_corruptions():
        raise unknown_name("corruption", str(name), known_corruptions())
    if generated and key not in CORRUPTIONS:
        raise InputError(f"{unavailable_reason(key)}.")
    return key


def corrupt(images: Any, name: str, *, severity: int, seed: int = 0, layout: str = "auto",
            table: str = DEFAULT_TABLE) -> Any:
    """Apply the corruption registered as `name` (`CORRUPTIONS`) at `severity`.

    Args:
        images: uint8 (N, H, W, C) or (N, C, H, W), numpy or torch.
        name: a generated corruption (`corruption_names()`).
        severity: 1 to 5.
        seed: seeds its random numbers (the same seed and images give the same bytes).
        layout: "auto", "nhwc" or "nchw".
        table: the severity table, "cifar" (CIFAR-10-C's parameters) or "tiny-imagenet" (Tiny-ImageNet-C's, then
            their JPEG save at quality 85); `severity_table_for` says which a dataset's images take.

    Returns:
        uint8 images of the input's layout and type.

    >>> corrupt(np.full((1, 4, 4, 3), 100, np.uint8), "brightness", severity=4).max()  # V + 0.2: 100 + 51
    np.uint8(151)
    """
    return CORRUPTIONS.get(check_corruption(name, generated=True))(images, severity=severity, seed=seed,
                                                                    layout=layout, table=table)
