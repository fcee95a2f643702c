"""Ensemble temperature scaling: weights on the simplex, the exact squared-error optimum, better than TS alone."""

import itertools

import numpy as np
import pytest
from scipy.special import softmax

from adacal.calibrators import EnsembleTemperatureScaling, TemperatureScaling


def _brier(probs, labels):
    onehot = np.eye(probs.shape[1])[labels]
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


def _exact_simplex_weights(components, labels):
    """Minimise the Brier score of Σ w_i p_i over the simplex by solving every face's KKT system (3 weights)."""
    onehot = np.eye(components[0].shape[1])[labels]
    gram = np.array([[np.mean(np.sum(a * b, axis=1)) for b in components] for a in components])
    linear = np.array([np.mean(np.sum(a * onehot, axis=1)) for a in components])
    best, best_value = None, np.inf
    for size in (1, 2, 3):
        for face in itertools.combinations(range(3), size):
            idx = list(face)
            # [2G 1; 1ᵀ 0] [w; μ] = [2b; 1]
            kkt = np.zeros((size + 1, size + 1))
            kkt[:size, :size] = 2 * gram[np.ix_(idx, idx)]
            kkt[:size, size] = kkt[size, :size] = 1.0
            solution = np.linalg.lstsq(kkt, np.r_[2 * linear[idx], 1.0], rcond=None)[0]
            if (solution[:size] < -1e-12).any():
                continue
            w = np.zeros(3)
            w[idx] = solution[:size]
            value = w @ gram @ w - 2 * linear @ w
            if value < best_value:
                best, best_value = w, value
    return best


@pytest.fixture(scope="module")
def label_noise():
    """A sharp model whose labels are replaced by a uniformly random class 30% of the time (K = 10)."""
    rng = np.random.default_rng(11)
    n, k = 4000, 10
    logits = rng.normal(0.0, 3.0, size=(n, k))
    labels = logits.argmax(axis=1)
    noisy = rng.random(n) < 0.3
    labels[noisy] = rng.integers(0, k, size=noisy.sum())
    return logits, labels


def test_weights_are_on_the_simplex_and_temperature_is_the_nll_one(label_noise):
    logits, labels = label_noise
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    assert ets.weights_.shape == (3,)
    assert (ets.weights_ >= 0).all()
    assert ets.weights_.sum() == pytest.approx(1.0, abs=1e-12)
    assert ets.temperature_ == pytest.approx(TemperatureScaling(objective="nll").fit(logits, labels).temperature_)


def test_weights_reach_the_exact_optimum(label_noise):
    logits, labels = label_noise
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    components = [softmax(logits / ets.temperature_, axis=1), softmax(logits, axis=1), np.full(logits.shape, 0.1)]
    exact = _exact_simplex_weights(components, labels)
    mixture = lambda w: sum(wi * p for wi, p in zip(w, components))  # noqa: E731
    assert _brier(mixture(ets.weights_), labels) == pytest.approx(_brier(mixture(exact), labels), abs=1e-9)
    np.testing.assert_allclose(ets.weights_, exact, atol=1e-4)
    np.testing.assert_allclose(ets.transform(logits), mixture(ets.weights_), rtol=1e-12)


def test_reduces_validation_squared_error_against_temperature_scaling(label_noise):
    logits, labels = label_noise
    ts = _brier(TemperatureScaling(objective="nll").fit_transform(logits, labels), labels)
    ets_calibrator = EnsembleTemperatureScaling().fit(logits, labels)
    ets = _brier(ets_calibrator.transform(logits), labels)
    assert ets < ts - 1e-3
    assert ets_calibrator.weights_[2] > 0.01  # it uses the uniform component to model the label noise


def test_keeps_the_argmax_and_sums_to_one(label_noise):
    logits, labels = label_noise
    probs = EnsembleTemperatureScaling().fit(logits, labels).transform(logits)
    np.testing.assert_array_equal(probs.argmax(axis=1), logits.argmax(axis=1))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("case", ["one class", "two samples", "random labels"])
def test_a_degenerate_validation_set_keeps_the_argmax(case):
    """Where the Brier optimum puts all weight on the uniform distribution, the rows would tie up to rounding and
    lose the predicted class; the fit keeps MIN_MODEL_WEIGHT on the model's components instead."""
    from adacal.calibrators.ets import MIN_MODEL_WEIGHT

    rng = np.random.default_rng(1)
    n = 2 if case == "two samples" else 40
    labels = {"one class": np.zeros(n, int), "two samples": np.array([0, 1]),
              "random labels": rng.integers(0, 3, n)}[case]
    ets = EnsembleTemperatureScaling().fit(rng.normal(size=(n, 3)), labels)
    assert ets.weights_[0] + ets.weights_[1] >= MIN_MODEL_WEIGHT * (1 - 1e-12)
    assert ets.weights_.sum() == pytest.approx(1.0, abs=1e-15)
    new = rng.normal(size=(200, 3))
    np.testing.assert_array_equal(ets.transform(new).argmax(axis=1), new.argmax(axis=1))
