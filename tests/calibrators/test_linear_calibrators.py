"""Vector scaling, matrix scaling and Dirichlet calibration (ODIR): against a slow written-out fit, and invariants."""

import json

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, softmax

from adacal.calibrators import (
    Calibrator,
    DirichletCalibration,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    build_calibrator,
)
from adacal.calibrators.linear import linear_objective
from adacal.errors import InputError

from calibration_problems import sample_labels

LINEAR = ["vector-scaling", "matrix-scaling", "dirichlet"]


def _nll(probs, labels):
    return -np.mean(np.log(probs[np.arange(labels.size), labels]))


def _slow_objective(params, logits, labels, *, kind, reg_lambda, reg_mu):
    """The objective written out sample by sample: mean NLL + λ·mean(off-diagonal W²) + μ·mean(b²)."""
    n, k = logits.shape
    if kind == "vector-scaling":
        weights, bias = np.diag(params[:k]), params[k:]
    else:
        weights, bias = params[: k * k].reshape(k, k), params[k * k :]
    total = 0.0
    for row, label in zip(logits, labels):
        x = row - np.log(np.sum(np.exp(row))) if kind == "dirichlet" else row  # |logits| < 10: no overflow
        mapped = weights @ x + bias
        total += np.log(np.sum(np.exp(mapped))) - mapped[label]
    off = [weights[i, j] ** 2 for i in range(k) for j in range(k) if i != j]
    penalty = reg_lambda * sum(off) / (k * (k - 1)) + reg_mu * np.sum(bias**2) / k  # off = [] for vector scaling
    return total / n + penalty


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(11)
    logits = rng.normal(0.0, 2.0, size=(100, 3))
    true_map = np.array([[0.6, 0.3, 0.0], [0.0, 1.2, -0.2], [0.1, 0.0, 0.8]])
    labels = sample_labels(rng, softmax(logits @ true_map.T + np.array([0.3, -0.2, 0.0]), axis=1))
    return logits, labels


@pytest.mark.parametrize(
    ("kind", "reg_lambda", "reg_mu"),
    [("vector-scaling", 0.0, 0.0), ("vector-scaling", 0.0, 2.0), ("matrix-scaling", 0.0, 0.0),
     ("matrix-scaling", 0.5, 2.0), ("dirichlet", 0.0, 0.0), ("dirichlet", 0.5, 2.0)],  # vector scaling: μ only
)
def test_fit_matches_a_slow_direct_minimisation(small_problem, kind, reg_lambda, reg_mu):
    logits, labels = small_problem
    options = {"reg_mu": reg_mu} if kind == "vector-scaling" else {"reg_lambda": reg_lambda, "reg_mu": reg_mu}
    fitted = build_calibrator(kind, **options).fit(logits, labels)
    k = logits.shape[1]
    start = np.concatenate([np.ones(k) if kind == "vector-scaling" else np.eye(k).ravel(), np.zeros(k)])
    slow = minimize(  # numeric gradients: nothing shared with the fitted implementation
        lambda p: _slow_objective(p, logits, labels, kind=kind, reg_lambda=reg_lambda, reg_mu=reg_mu),
        start, method="BFGS", options={"gtol": 1e-7},
    )
    ours = np.concatenate([fitted.weights_.ravel(), fitted.bias_])
    ours_value = _slow_objective(ours, logits, labels, kind=kind, reg_lambda=reg_lambda, reg_mu=reg_mu)
    assert ours_value <= slow.fun + 1e-9
    assert ours_value == pytest.approx(slow.fun, abs=1e-7)
    probs = fitted.transform(logits)
    slow_fit = _with_params(type(fitted), slow.x[:-k].reshape(k, -1).squeeze() if kind == "vector-scaling"
                            else slow.x[:-k].reshape(k, k), slow.x[-k:])
    np.testing.assert_allclose(probs, slow_fit.transform(logits), atol=1e-4)
    # Without a penalty W + 1cᵀ and b + c0 give the same probabilities, so only those are compared.
    if reg_lambda > 0 or (kind == "vector-scaling" and reg_mu > 0):
        np.testing.assert_allclose(ours, slow.x, atol=2e-3)


@pytest.mark.parametrize("diagonal", [True, False])
@pytest.mark.parametrize("centred", [False, True])
def test_analytic_gradient_matches_finite_differences(small_problem, diagonal, centred):
    logits, labels = small_problem
    k = logits.shape[1]
    onehot = np.eye(k)[labels]
    rng = np.random.default_rng(0)
    point = rng.normal(0.0, 0.5, size=(2 * k if diagonal else k * k + k))
    centre = logits.mean(axis=0) if centred else None
    inputs = logits - centre if centred else logits

    def value(p):
        return linear_objective(p, inputs, onehot, diagonal=diagonal, reg_lambda=0.7, reg_mu=0.3, centre=centre)[0]

    def gradient(p):
        return linear_objective(p, inputs, onehot, diagonal=diagonal, reg_lambda=0.7, reg_mu=0.3, centre=centre)[1]

    assert check_grad(value, gradient, point) < 1e-5
    if centred:  # the same objective as uncentred with the intercept b = c − W m
        weights = np.diag(point[:k]) if diagonal else point[: k * k].reshape(k, k)
        flat = np.concatenate([point[:-k], point[-k:] - weights @ centre])
        plain = linear_objective(flat, logits, onehot, diagonal=diagonal, reg_lambda=0.7, reg_mu=0.3)[0]
        assert value(point) == pytest.approx(plain, rel=1e-12)


def _with_params(cls, weights, bias):
    data = {"method": cls.name, "format_version": 1, "options": {}, "num_classes": len(bias),
            "params": {"weights": np.asarray(weights).tolist(), "bias": list(bias)}}
    return Calibrator.from_dict(data)


def test_identity_maps_change_nothing():
    logits = np.random.default_rng(1).normal(0.0, 3.0, size=(50, 4))
    expected = softmax(logits, axis=1)
    np.testing.assert_allclose(_with_params(VectorScaling, np.ones(4), np.zeros(4)).transform(logits), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(_with_params(MatrixScaling, np.eye(4), np.zeros(4)).transform(logits), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(_with_params(DirichletCalibration, np.eye(4), np.zeros(4)).transform(logits),
                               expected, rtol=1e-12)
    # W = I / T, b = 0 is temperature scaling, for logits and (Dirichlet) for log-probabilities alike.
    for cls in (MatrixScaling, DirichletCalibration):
        np.testing.assert_allclose(_with_params(cls, np.eye(4) / 2.5, np.zeros(4)).transform(logits),
                                   softmax(logits / 2.5, axis=1), rtol=1e-12)


@pytest.mark.parametrize("kind", LINEAR)
def test_never_worse_than_temperature_scaling_on_validation(overconfident, kind):
    (val_logits, val_labels), _ = overconfident
    ts = TemperatureScaling(objective="nll").fit(val_logits, val_labels)
    fitted = build_calibrator(kind).fit(val_logits, val_labels)
    probs = fitted.transform(val_logits)
    assert _nll(probs, val_labels) <= _nll(ts.transform(val_logits), val_labels) + 1e-12
    assert probs.shape == val_logits.shape and (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)


def test_recovers_a_known_linear_miscalibration():
    rng = np.random.default_rng(5)
    n, k = 30_000, 3
    logits = rng.normal(0.0, 2.0, size=(n, k))
    scale, shift = np.array([0.5, 1.5, 1.0]), np.array([0.4, -0.3, 0.0])
    labels = sample_labels(rng, softmax(logits * scale + shift, axis=1))
    vector = VectorScaling(reg_mu=0.0).fit(logits, labels)
    # Softmax ignores a common shift of the intercepts: compare them centred.
    np.testing.assert_allclose(vector.weights_, scale, atol=0.08)
    np.testing.assert_allclose(vector.bias_ - vector.bias_.mean(), shift - shift.mean(), atol=0.08)

    true_map = np.array([[0.8, 0.4, 0.0], [-0.3, 1.1, 0.2], [0.0, 0.2, 0.6]])
    labels = sample_labels(rng, softmax(logits @ true_map.T + shift, axis=1))
    matrix = MatrixScaling(reg_lambda=0.0, reg_mu=0.0).fit(logits, labels)
    # Adding the same vector to every row of W (and a constant to b) leaves softmax unchanged: compare centred.
    np.testing.assert_allclose(matrix.weights_ - matrix.weights_.mean(axis=0), true_map - true_map.mean(axis=0),
                               atol=0.08)

    log_probs = log_softmax(logits, axis=1)
    labels = sample_labels(rng, softmax(log_probs @ true_map.T + shift, axis=1))
    dirichlet = DirichletCalibration(reg_lambda=0.0, reg_mu=0.0).fit(logits, labels)
    test = rng.normal(0.0, 2.0, size=(2000, k))
    np.testing.assert_allclose(dirichlet.transform(test),
                               softmax(log_softmax(test, axis=1) @ true_map.T + shift, axis=1), atol=0.03)


def test_odir_shrinks_off_diagonal_weights_and_intercepts(overconfident):
    (val_logits, val_labels), _ = overconfident
    sizes = []
    for strength in (0.0, 1.0, 1e4):
        fitted = MatrixScaling(reg_lambda=strength, reg_mu=strength).fit(val_logits[:1000], val_labels[:1000])
        off = fitted.weights_ - np.diag(np.diag(fitted.weights_))
        sizes.append((np.abs(off).sum(), np.abs(fitted.bias_).sum()))
    assert sizes[0][0] > sizes[1][0] > sizes[2][0] and sizes[2][0] < 0.05
    assert sizes[0][1] > sizes[2][1] and sizes[2][1] < 0.05


def test_class_wise_maps_may_change_the_argmax_and_it_is_declared():
    """Vector scaling need not keep the predicted class (Kull et al. 2019): a class-wise intercept reorders rows."""
    logits = np.array([[1.0, 0.9], [2.0, -1.0]])
    shifted = _with_params(VectorScaling, np.ones(2), np.array([0.0, 0.5]))
    assert shifted.transform(logits).argmax(axis=1).tolist() == [1, 0]  # row 0 changes class, row 1 does not
    assert not any(build_calibrator(name).keeps_argmax for name in LINEAR)
    assert TemperatureScaling().keeps_argmax
    # A common positive scale with equal intercepts keeps it.
    same = _with_params(VectorScaling, np.full(2, 0.3), np.full(2, 0.7))
    assert same.transform(logits).argmax(axis=1).tolist() == logits.argmax(axis=1).tolist()


@pytest.mark.parametrize("kind", LINEAR)
def test_deterministic_and_json_round_trip(small_problem, kind):
    logits, labels = small_problem
    a = build_calibrator(kind).fit(logits, labels)
    b = build_calibrator(kind).fit(logits, labels)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    again = Calibrator.from_dict(json.loads(json.dumps(a.to_dict(), allow_nan=False)))
    np.testing.assert_array_equal(again.transform(logits), a.transform(logits))
    assert again.summary() == a.summary()


def test_options_are_checked():
    with pytest.raises(InputError, match="Expected reg_lambda to be a non-negative number, got -1"):
        build_calibrator("dirichlet", reg_lambda=-1)
    with pytest.raises(InputError, match="Expected reg_mu to be a non-negative number, got nan"):
        MatrixScaling(reg_mu=float("nan")).fit(np.zeros((4, 2)), np.array([0, 1, 0, 1]))
    with pytest.raises(InputError, match="does not take option\\(s\\) reg_lambda"):
        build_calibrator("vector-scaling", reg_lambda=0.1)
    with pytest.raises(InputError, match="Expected valid params for the 'matrix-scaling' calibrator"):
        _with_params(MatrixScaling, np.eye(3), np.zeros(2))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow warnings inside the fit
@pytest.mark.parametrize("method", ["vector-scaling", "matrix-scaling", "dirichlet"])
def test_a_map_that_overflows_on_extreme_logits_is_a_clean_error_not_nan(method):
    """Logits near the float64 limit overflow a linear map: transform says so instead of returning NaN rows."""
    from adacal.calibrators import build_calibrator
    from adacal.errors import AdacalError

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(300, 4)) * 1e307
    labels = np.where(rng.random(300) < 0.8, logits.argmax(axis=1), 0)
    calibrator = build_calibrator(method).fit(logits, labels)
    with pytest.raises(AdacalError, match=rf"{method} gave NaN or Inf probabilities for \d+ of 300 samples .*"
                                          r"largest \|logit\| is 3\.\de\+307"):
        calibrator.transform(logits)
