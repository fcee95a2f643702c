"""Fixtures of the corruption tests: smooth synthetic photographs (no downloads), built once per session."""

import pytest

from corruption_helpers import natural_images


@pytest.fixture(scope="session")
def photos():
    """64 smooth synthetic 32 x 32 RGB images with photographs' spectrum (see corruption_helpers.natural_images)."""
    return natural_images(64)
