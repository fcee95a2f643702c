"""Image corruptions after Hendrycks & Dietterich (2019, CIFAR-10-C), corrupted test sets, and the
out-of-distribution sets `adacal ood` scores against.

    from adacal.data.corruptions import corrupt, load_shifted_set, shift_corruptions
    foggy = corrupt(images_uint8, "fog", severity=3, seed=0)            # any layout, numpy or torch
    tiny = corrupt(images_64, "fog", severity=3, table="tiny-imagenet")  # Tiny-ImageNet-C's parameters
    shifted = load_shifted_set("cifar10", "fog", 3, data_dir="/data")    # Hendrycks' file, else generated + cached

- `tables`: Hendrycks' severity tables, "cifar" (CIFAR-10-C's, `SEVERITIES`, the default) and "tiny-imagenet"
  (Tiny-ImageNet-C's, then their JPEG save at quality 85), each for its native size (`SEVERITY_TABLES`), and
  `severity_table_for`, which picks a dataset's table and refuses images of another size.
- `suite`: the registry (`CORRUPTIONS`), `severity_parameter`, the ones not generated and why (`UNAVAILABLE`),
  `corrupt`, and the chunked uint8 machinery (`corrupt_images`).
- `noise`, `blur`, `weather`, `digital`: the generators, 16 of Hendrycks' 19 corruptions (`shift_corruptions()`).
- `hendrycks`: reading and checking Hendrycks' published CIFAR-10-C / CIFAR-100-C files.
- `ood_sets`: `load_ood_set`, the OOD sets of `adacal ood`.
- `cache`: `load_shifted_set`, whole corrupted test sets, cached on disk.

What each corruption does and where it differs from Hendrycks' script: docs/corruptions.md.
"""

from adacal.data.corruptions import blur, digital, noise, weather  # noqa: F401  (register the generators)
from adacal.data.corruptions.blur import defocus_blur, gaussian_blur, glass_blur, motion_blur, zoom_blur
from adacal.data.corruptions.cache import default_cache_dir, load_shifted_set, shifted_cache_file
from adacal.data.corruptions.digital import (
    brightness,
    contrast,
    elastic_transform,
    hsv_to_rgb,
    jpeg_compression,
    pixelate,
    rgb_to_hsv,
    saturate,
)
from adacal.data.corruptions.hendrycks import (
    check_cifar_c_arrays,
    cifar_c_folder,
    cifar_test_labels,
    hendrycks_file,
    load_cifar_c,
)
from adacal.data.corruptions.noise import gaussian_noise, impulse_noise, shot_noise, speckle_noise
from adacal.data.corruptions.ood_sets import OODSet, load_ood_set, load_ood_split, ood_names, ood_set_input
from adacal.data.corruptions.suite import (
    CIFAR_C_CORRUPTIONS,
    CIFAR_C_SEVERITIES,
    CORRUPTIONS,
    GAUSSIAN_NOISE_SIGMAS,
    GENERATOR_VERSIONS,
    SEVERITIES,
    UNAVAILABLE,
    check_corruption,
    check_severity,
    corrupt,
    corruption_names,
    known_corruptions,
    severity_parameter,
    shift_corruptions,
)
from adacal.data.corruptions.tables import (
    SEVERITY_TABLES,
    TINY_IMAGENET_SEVERITIES,
    SeverityTable,
    severity_table_for,
    table_words,
)
from adacal.data.corruptions.weather import fog
# Re-exported for the loaders `ood_sets.clean_test_split` looks up here (patch them here to stop a set loading).
from adacal.data.base import load_dataset  # noqa: F401
from adacal.data.vision import load_image_arrays  # noqa: F401

__all__ = [
    "CIFAR_C_CORRUPTIONS",
    "CIFAR_C_SEVERITIES",
    "CORRUPTIONS",
    "GAUSSIAN_NOISE_SIGMAS",
    "GENERATOR_VERSIONS",
    "OODSet",
    "SEVERITIES",
    "SEVERITY_TABLES",
    "SeverityTable",
    "TINY_IMAGENET_SEVERITIES",
    "UNAVAILABLE",
    "brightness",
    "check_cifar_c_arrays",
    "check_corruption",
    "check_severity",
    "cifar_c_folder",
    "cifar_test_labels",
    "contrast",
    "corrupt",
    "corruption_names",
    "default_cache_dir",
    "defocus_blur",
    "elastic_transform",
    "fog",
    "gaussian_blur",
    "gaussian_noise",
    "glass_blur",
    "hendrycks_file",
    "hsv_to_rgb",
    "impulse_noise",
    "jpeg_compression",
    "known_corruptions",
    "load_cifar_c",
    "load_ood_set",
    "load_ood_split",
    "load_shifted_set",
    "motion_blur",
    "ood_names",
    "ood_set_input",
    "pixelate",
    "rgb_to_hsv",
    "saturate",
    "severity_parameter",
    "severity_table_for",
    "table_words",
    "shift_corruptions",
    "shifted_cache_file",
    "shot_noise",
    "speckle_noise",
    "zoom_blur",
]
