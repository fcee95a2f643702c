"""Synthetic logits with a known calibration map, shared by the calibrator tests."""

import pytest

from calibration_problems import make_problem


@pytest.fixture(scope="session")
def overconfident():
    """Validation and test halves of a model whose logits are 2.5x too large (over-confident), K = 10."""
    logits, labels = make_problem(n=8000, k=10, sigma=4.0, true_temperature=2.5, seed=7)
    return (logits[:4000], labels[:4000]), (logits[4000:], labels[4000:])


@pytest.fixture(scope="session")
def problem():
    """The `make_problem` factory, for tests that choose their own sizes and temperature."""
    return make_problem
