"""Shared fixtures for the training tests: one intra-op thread (tiny models only lose from more on a busy machine),
and the uninterrupted run the fault and interrupt tests compare with."""

import pytest

from train_outcomes import OPTIONS, uninterrupted_outcome


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


@pytest.fixture(scope="module")
def reference(tmp_path_factory, one_torch_thread):
    """The uninterrupted run every interrupted one must end up equal to (trained once for each module that asks)."""
    with one_torch_thread():
        return uninterrupted_outcome(tmp_path_factory.mktemp("reference"), OPTIONS)
