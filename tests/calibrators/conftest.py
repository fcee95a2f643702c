"""Synthetic logits with a known calibration map, shared by the calibrator tests."""

import numpy as np
import pytest
from scipy.special import softmax


def sample_labels(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One label per row drawn from Categorical(probs[row])."""
    cumulative = probs.cumsum(axis=1)
    draws = rng.random((probs.shape[0], 1)) * cumulative[:, -1:]
    return np.minimum((cumulative < draws).sum(axis=1), probs.shape[1] - 1)


def make_problem(*, n: int, k: int, sigma: float, true_temperature: float, seed: int):
    """Logits z ~ N(0, sigma²) and labels ~ Categorical(softmax(z / T0)): calibrated after dividing by T0."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, sigma, size=(n, k))
    labels = sample_labels(rng, softmax(logits / true_temperature, axis=1))
    return logits, labels


@pytest.fixture(scope="session")
def overconfident():
    """Validation and test halves of a model whose logits are 2.5x too large (over-confident), K = 10."""
    logits, labels = make_problem(n=8000, k=10, sigma=4.0, true_temperature=2.5, seed=7)
    return (logits[:4000], labels[:4000]), (logits[4000:], labels[4000:])


@pytest.fixture(scope="session")
def problem():
    """The `make_problem` factory, for tests that choose their own sizes and temperature."""
    return make_problem
