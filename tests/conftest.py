"""Fixtures every test folder may use."""

import contextlib

import pytest
import torch


@contextlib.contextmanager
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def one_torch_thread():
    """A context manager for tiny models: on a busy 2-core machine they train faster on one intra-op thread."""
    return _one_torch_thread
