"""Shared fixtures for the training tests: one intra-op thread (tiny models only lose from more on a busy machine)."""

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield
