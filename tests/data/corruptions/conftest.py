"""Fixtures of the corruption tests: smooth synthetic photographs (no downloads), built once per session."""

import pytest

from corruption_helpers import natural_images


@pytest.fixture(scope="session")
def photos():
    """64 smooth synthetic 32 x 32 RGB images with photographs' spectrum (see corruption_helpers.natural_images)."""
    return natural_images(64)


@pytest.fixture(scope="session")
def tiny_photos():
    """16 smooth synthetic 64 x 64 RGB images (Tiny-ImageNet's size), for the tiny-imagenet severity table."""
    return natural_images(16, size=64, seed=1)


@pytest.fixture
def calls(monkeypatch):
    """(corruption, severity table) per call of the whole-set generator behind `load_shifted_set` (cache hits make
    none)."""
    from adacal.data.corruptions import cache

    made = []
    generate = cache._generate

    def counting(images, corruption, severity, seed, table="cifar"):
        made.append((corruption, table))
        return generate(images, corruption, severity, seed, table)

    monkeypatch.setattr(cache, "_generate", counting)
    return made
