"""The severity tables: Tiny-ImageNet-C's parameters as make_tinyimagenet_c.py publishes them, CIFAR's untouched
(values, bytes and cache keys), the tiny table's final JPEG save at quality 85, the table chooser, every generator's
contract under the tiny table, and severities that hurt more as they grow."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect

import numpy as np
import pytest
import torch

import adacal.data.corruptions.suite as suite
import corruption_references as ref
from adacal.data import corrupt
from adacal.data.corruptions import (
    CORRUPTIONS,
    SEVERITIES,
    SEVERITY_TABLES,
    TINY_IMAGENET_SEVERITIES,
    severity_parameter,
    severity_table_for,
    shift_corruptions,
)
from adacal.data.corruptions.blur import zoom_factors
from adacal.data.corruptions.cache import corruption_fingerprint, shifted_cache_file
from adacal.errors import InputError, UnknownNameError

from corruption_helpers import natural_images, psnr

TINY = "tiny-imagenet"
GENERATED = shift_corruptions()
RANDOM = {"gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "glass_blur", "motion_blur", "fog",
          "elastic_transform"}

# Read by hand from make_tinyimagenet_c.py (github.com/hendrycks/robustness, ImageNet-C/create_c/), not from adacal.
PUBLISHED_TINY = [
    ("gaussian_noise", 2, 0.08), ("gaussian_noise", 5, 0.18),
    ("shot_noise", 1, 250), ("shot_noise", 5, 15),
    ("impulse_noise", 3, 0.05), ("impulse_noise", 5, 0.14),
    ("speckle_noise", 1, 0.15), ("speckle_noise", 4, 0.3),
    ("gaussian_blur", 2, 0.75), ("gaussian_blur", 5, 1.5),
    ("glass_blur", 1, (0.1, 1, 1)), ("glass_blur", 3, (0.6, 1, 2)), ("glass_blur", 4, (0.7, 2, 1)),
    ("glass_blur", 5, (0.9, 2, 2)),
    ("defocus_blur", 1, (0.5, 0.6)), ("defocus_blur", 4, (2.5, 0.01)),
    ("motion_blur", 1, (10, 1)), ("motion_blur", 5, (12, 3)),
    ("zoom_blur", 1, 1.06), ("zoom_blur", 5, 1.26),
    ("fog", 1, (0.4, 3)), ("fog", 5, (2, 1.75)),
    ("brightness", 3, 0.3), ("contrast", 1, 0.4), ("contrast", 5, 0.05),
    ("saturate", 3, (2, 0)), ("saturate", 5, (30, 0.2)),
    ("jpeg_compression", 1, 65), ("jpeg_compression", 5, 25),
    ("pixelate", 2, 0.8), ("pixelate", 5, 0.5),
    ("elastic_transform", 2, (0.05, 0.3, 0.06)), ("elastic_transform", 5, (0.16, 0.03, 0.02)),
]
# And from make_cifar_c.py.
PUBLISHED_CIFAR = [
    ("gaussian_noise", 5, 0.10), ("shot_noise", 1, 500), ("glass_blur", 5, (0.4, 1, 2)), ("fog", 5, (1.5, 1.75)),
    ("jpeg_compression", 1, 80), ("saturate", 5, (2.5, 0.2)), ("elastic_transform", 2, (0.05, 0.2, 0.07)),
]


@pytest.fixture
def unsaved(monkeypatch):
    """Switch the tiny-imagenet table's final JPEG save off (call it after computing what needs the save)."""
    def switch_off():
        table = dataclasses.replace(SEVERITY_TABLES[TINY], saved_quality=None)
        monkeypatch.setitem(SEVERITY_TABLES, TINY, table)

    return switch_off


# ------------------------------------------------------------------------------------------------- the tables


@pytest.mark.parametrize("name, severity, published", PUBLISHED_TINY)
def test_the_tiny_table_holds_make_tinyimagenet_c_values(name, severity, published):
    assert severity_parameter(name, severity, TINY) == pytest.approx(published)


@pytest.mark.parametrize("name, severity, published", PUBLISHED_CIFAR)
def test_the_cifar_table_still_holds_make_cifar_c_values_and_is_the_default(name, severity, published):
    assert severity_parameter(name, severity) == severity_parameter(name, severity, "cifar") == pytest.approx(published)


def test_both_tables_cover_the_generated_corruptions_at_their_native_sizes():
    cifar, tiny = SEVERITY_TABLES["cifar"], SEVERITY_TABLES[TINY]
    assert sorted(SEVERITY_TABLES) == ["cifar", TINY]
    assert cifar.parameters is SEVERITIES and tiny.parameters is TINY_IMAGENET_SEVERITIES
    for table in (cifar, tiny):
        assert set(table.parameters) == set(GENERATED) and all(len(v) == 5 for v in table.parameters.values())
    assert (cifar.image_size, cifar.saved_quality, cifar.datasets) == ((32, 32), None, ("cifar10", "cifar100", "svhn"))
    assert (tiny.image_size, tiny.saved_quality, tiny.datasets) == ((64, 64), 85, (TINY,))
    assert all(np.array_equal(zoom_factors(s), zoom_factors(s, TINY)) for s in range(1, 6))  # the same aranges


def test_every_generator_and_corrupt_default_to_the_cifar_table():
    for function in [CORRUPTIONS.get(name) for name in GENERATED] + [corrupt, suite.corrupt_images]:
        assert inspect.signature(function).parameters["table"].default == "cifar", function.__name__


@pytest.mark.parametrize("name", GENERATED)
def test_naming_the_cifar_table_changes_no_byte_and_the_tiny_table_changes_them(name, photos):
    generator = CORRUPTIONS.get(name)
    default = generator(photos[:4], severity=4, seed=2)
    assert np.array_equal(default, generator(photos[:4], severity=4, seed=2, table="cifar"))
    assert not np.array_equal(default, generator(photos[:4], severity=4, seed=2, table=TINY))


def test_cifar_bytes_and_cache_keys_are_those_made_before_there_were_tables():
    """Pinned with the code before the tables (numpy 2.4, scipy 1.17): glass blur's shuffle was rewritten for max
    delta 2, and CIFAR's sets must stay byte for byte what they were (cached sets stay valid)."""
    images = natural_images(4, seed=3)
    pinned = {
        "gaussian_noise": ["b29c53b0bcf6", "8ffdd29e819f", "863c2df43f5e", "a33d37a439cc", "d416e20f7062"],
        "glass_blur": ["d8868aca0c26", "d8868aca0c26", "4bd38bc31e2d", "ecf717854990", "acc5793a01bd"],
        "fog": ["ae9fa2def5be", "3cdcb1e10993", "b6eee64d860b", "245973f28fbf", "6b4ec179e6b6"],
    }
    for name, digests in pinned.items():
        made = [hashlib.sha256(CORRUPTIONS.get(name)(images, severity=s, seed=7).tobytes()).hexdigest()[:12]
                for s in range(1, 6)]
        assert made == digests, name
    zeros = np.zeros((2, 4, 4, 3), np.uint8)
    assert corruption_fingerprint("fog", zeros) == corruption_fingerprint("fog", zeros, "cifar") == "9372ec1816b9ae21"
    assert corruption_fingerprint("fog", zeros, TINY) != "9372ec1816b9ae21"
    assert shifted_cache_file("cifar10", "fog", 5, 0, zeros, "/c").name == "fog-s5-seed0-9372ec1816b9ae21.npy"
    tiny_name = shifted_cache_file("tiny-imagenet", "fog", 5, 0, zeros, "/c", table=TINY).name
    assert tiny_name.startswith("fog-tiny-imagenet-s5-seed0-") and not tiny_name.endswith("9372ec1816b9ae21.npy")


def test_an_unknown_table_is_one_clear_error():
    image = np.zeros((1, 8, 8, 3), np.uint8)
    with pytest.raises(UnknownNameError, match=r"Unknown severity table 'tiny'\. Did you mean 'tiny-imagenet'\? "
                                               r"Choices: cifar, tiny-imagenet\."):
        severity_parameter("fog", 1, "tiny")
    with pytest.raises(UnknownNameError, match="Unknown severity table 'CIFAR'. Did you mean 'cifar'"):
        corrupt(image, "fog", severity=1, table="CIFAR")
    for name in GENERATED:
        with pytest.raises(UnknownNameError, match="Unknown severity table 'None'"):
            CORRUPTIONS.get(name)(image, severity=1, table=None)


# ----------------------------------------------------------------------------------------------- the chooser


@pytest.mark.parametrize("dataset, shape, table", [
    ("cifar10", (3, 32, 32), "cifar"), ("cifar100", (3, 32, 32), "cifar"), ("svhn", (3, 32, 32), "cifar"),
    ("CIFAR10", (32, 32), "cifar"), ("tiny-imagenet", (3, 64, 64), TINY), ("tiny-imagenet", (1, 64, 64), TINY),
    (None, (3, 32, 32), "cifar"), (None, (64, 64), TINY), ("svhn", None, "cifar"),
])
def test_each_dataset_gets_its_table(dataset, shape, table):
    assert severity_table_for(dataset, shape) == table


TABLES = r"adacal has the tables cifar \(32x32: cifar10, cifar100, svhn\) and tiny-imagenet \(64x64: tiny-imagenet\)"


@pytest.mark.parametrize("dataset, shape, message", [
    ("cifar10", (3, 48, 48), r"^Expected 32x32 images for cifar10 \(its severity table 'cifar' is made for 32x32\), "
                             rf"got 48x48; {TABLES} and uses each at its own size only\.$"),
    ("tiny-imagenet", (3, 32, 32), r"^Expected 64x64 images for tiny-imagenet .*, got 32x32; adacal has the tables"),
    ("svhn", (3, 32, 64), r"^Expected 32x32 images for svhn .*, got 32x64;"),
    ("imagenet", (3, 224, 224),
     rf"^Expected a dataset adacal has corruption severities for, got imagenet; {TABLES}\.$"),
    ("imagenet", None, r"got imagenet;"),
    (None, (3, 28, 28), r"^Expected images of a size adacal has corruption severities for, got 28x28 images in "
                        rf"x\.npz; {TABLES} and uses each at its own size only\.$"),
    (None, None, "got neither"),
    ("cifar10", (32,), r"per-image shape \(C, H, W\) or \(H, W\), got \(32,\)"),
])
def test_a_dataset_without_a_table_or_images_of_another_size_are_refused_in_one_line(dataset, shape, message):
    with pytest.raises(InputError, match=message) as caught:
        severity_table_for(dataset, shape, source="x.npz")
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------------------- the JPEG-85 save


@pytest.mark.parametrize("name", GENERATED)
def test_the_tiny_table_ends_with_their_jpeg_save_at_quality_85(name, tiny_photos, unsaved):
    """Every corrupted image is what their `Image.fromarray(np.uint8(img)).save(path, quality=85, optimize=True)`
    gives for adacal's rounded image (optimize changes the Huffman tables only, not a decoded value)."""
    generator = CORRUPTIONS.get(name)
    saved = generator(tiny_photos[:3], severity=3, seed=1, table=TINY)
    unsaved()
    before = generator(tiny_photos[:3], severity=3, seed=1, table=TINY)
    assert np.array_equal(saved, np.stack([ref.jpeg_save(image, 85) for image in before]))
    assert not np.array_equal(saved, before)


def test_the_save_is_per_image_keeps_smooth_images_close_and_smooths_noise(tiny_photos, unsaved):
    constant = np.full((2, 64, 64, 3), 87, np.uint8)
    assert np.abs(corrupt(constant, "zoom_blur", severity=5, table=TINY).astype(int) - 87).max() <= 1
    whole = corrupt(tiny_photos[:4], "contrast", severity=2, table=TINY)
    assert np.array_equal(whole[2:], corrupt(tiny_photos[2:4], "contrast", severity=2, table=TINY))
    noisy = corrupt(tiny_photos, "gaussian_noise", severity=3, table=TINY)
    unsaved()
    # Quality 85 keeps a smooth image within about a grey level; it removes much of the noise (4:2:0 chroma
    # subsampling averages the colour noise away): Tiny-ImageNet-C's noise is milder than its sigma says.
    assert np.abs(whole.astype(np.float64) - corrupt(tiny_photos[:4], "contrast", severity=2, table=TINY)).mean() < 1.5
    raw = corrupt(tiny_photos, "gaussian_noise", severity=3, table=TINY)
    assert psnr(tiny_photos, noisy) > psnr(tiny_photos, raw) + 1.0


# ------------------------------------------------------------------------------- the contract, tiny table


@pytest.mark.parametrize("name", GENERATED)
def test_the_contract_holds_with_the_tiny_table(name, tiny_photos, monkeypatch):
    images = tiny_photos[:5]
    generator = CORRUPTIONS.get(name)
    out = generator(images, severity=5, seed=3, table=TINY)
    assert out.dtype == np.uint8 and out.shape == images.shape
    assert np.array_equal(out, corrupt(images, name, severity=5, seed=3, table=TINY))
    nchw = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    assert np.array_equal(generator(nchw, severity=5, seed=3, table=TINY).numpy().transpose(0, 2, 3, 1), out)
    other_seed = generator(images, severity=5, seed=4, table=TINY)
    assert (not np.array_equal(out, other_seed)) if name in RANDOM else np.array_equal(out, other_seed)
    monkeypatch.setattr(suite, "VALUES_PER_CHUNK", 2 * 64 * 64 * 3)  # chunks of 2, 1 or fewer images
    assert np.array_equal(generator(images, severity=5, seed=3, table=TINY), out)


# ------------------------------------------------------------------------------------------ severity ordering

# Hendrycks' Tiny-ImageNet parameters do not all grow with the severity either: saturate washes colours out at 1-2
# and strengthens them at 3-5; glass blur's severity 2 blurs its shuffle more than 1 (sigma 0.5 against 0.1) and its
# severity 4 shuffles once (max delta 2) where 3 shuffles twice (max delta 1), so PSNR rises at 2 and at 4; the
# elastic transform's affine jitter shrinks (0.08 to 0.02 of the size) while its displacement grows, so its PSNR
# rises. Motion blur, unlike CIFAR's, grows its sigma at every step.
TINY_STEP_EXCEPTIONS = {"saturate", "glass_blur", "elastic_transform"}


@pytest.fixture(scope="module")
def tiny_psnr(tiny_photos):
    return {name: [psnr(tiny_photos, CORRUPTIONS.get(name)(tiny_photos, severity=s, seed=0, table=TINY))
                   for s in range(1, 6)] for name in GENERATED}


@pytest.mark.parametrize("name", GENERATED)
def test_psnr_falls_from_severity_1_to_5_with_the_tiny_table(name, tiny_psnr):
    values = tiny_psnr[name]
    if name == "elastic_transform":
        assert values[4] > values[0] + 1.0, values  # documented above
        return
    assert values[4] < values[0] - 1.0, values
    if name not in TINY_STEP_EXCEPTIONS:
        assert all(later < earlier for earlier, later in zip(values, values[1:])), values
    if name == "glass_blur":
        assert max(values[2:]) < min(values[:2]) and values[4] < min(values[:4]), values
    if name == "saturate":
        assert values[4] < values[3] < min(values[:3]) and values[1] < values[0], values
