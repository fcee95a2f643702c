"""Synthetic logits with a known calibration map (imported by name: `from calibration_problems import ...`; a
module of its own, since `from conftest import` would find whichever folder's conftest.py was imported first)."""

import numpy as np
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
