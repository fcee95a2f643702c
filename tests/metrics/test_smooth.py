"""Smooth ECE on (confidence, correct) pairs against relplot's smECE (the reference implementation), a direct-kernel
slow version, and properties. The metric on (scores, labels) against relplot runs in test_metric_references.py."""

import numpy as np
import pytest
import relplot  # the smECE reference (Błasiok & Nakkiran 2023), a test dependency

from adacal.errors import InputError
from adacal.metrics import smooth_ece, smooth_reliability
from adacal.metrics.smooth import smooth_bandwidth, smooth_ece_at, smooth_ece_of
from metric_tester import boosted_logits as multiclass


def top_pairs(n, seed, power=1.5):
    rng = np.random.default_rng(seed)
    conf = 0.1 + 0.9 * rng.beta(5.0, 1.5, size=n)
    correct = (rng.random(n) < conf**power).astype(np.float64)
    return conf, correct


@pytest.mark.parametrize("n,seed,power", [(20, 0, 1.5), (300, 1, 1.0), (2000, 2, 3.0), (20000, 3, 0.5)])
def test_agrees_with_relplot_smece(n, seed, power):
    conf, correct = top_pairs(n, seed, power)
    value, width = relplot.smECE(conf, correct, return_width=True)
    assert smooth_ece_of(conf, correct) == pytest.approx(value, abs=1e-3)
    assert smooth_bandwidth(conf, correct) == pytest.approx(width, abs=1e-3)
    assert smooth_ece_at(conf, correct, 0.05) == pytest.approx(relplot.smECE_sigma(conf, correct, 0.05), abs=1e-3)


def slow_smooth_ece(conf, correct, sigma, points=2001):
    """The definition with the kernel evaluated directly: reflected Gaussian at 0 and 1 (images 2a − f), residuals
    smoothed over t, weighted by the smoothed density; integrals on a fine grid."""
    t = np.linspace(0, 1, points)[:, None]
    f = conf[None, :]
    kernel = sum(np.exp(-((t - g) ** 2) / (2 * sigma**2)) for g in (f, -f, 2 - f))
    density = kernel.sum(axis=1)
    residual = (kernel * (conf - correct)[None, :]).sum(axis=1) / density
    return float(np.sum(np.abs(residual) * density) / np.sum(density))


@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.3])
def test_fixed_bandwidth_matches_the_direct_kernel_definition(sigma):
    conf, correct = top_pairs(400, 9)
    assert smooth_ece_at(conf, correct, sigma) == pytest.approx(slow_smooth_ece(conf, correct, sigma), abs=2e-3)


def test_properties_fixed_point_range_calibrated_data_and_permutation():
    conf, correct = top_pairs(5000, 5, power=2.0)
    sigma = smooth_bandwidth(conf, correct)
    value = smooth_ece_of(conf, correct)
    # bisection brackets the fixed point σ = smECE_σ within 2^-10
    assert abs(value - sigma) < 2 ** -9 + 1e-3
    assert 0 <= value <= 1
    order = np.random.default_rng(0).permutation(conf.size)
    assert smooth_ece_of(conf[order], correct[order]) == pytest.approx(value, abs=1e-12)
    # data built to be calibrated: small; grossly over-confident: large
    rng = np.random.default_rng(1)
    calibrated = rng.random(20000)
    hits = (rng.random(20000) < calibrated).astype(float)
    assert smooth_ece_of(calibrated, hits) < 0.02
    assert smooth_ece_of(np.full(1000, 0.99), np.zeros(1000)) > 0.5


def test_reliability_curve_grid_bandwidth_and_errors():
    logits, labels = multiclass(3000, 4, 6)
    curve = smooth_reliability(logits, labels, points=101)
    assert curve.grid.shape == curve.curve.shape == curve.density.shape == (101,)
    assert curve.grid[0] == 0 and curve.grid[-1] == 1
    assert curve.ece == pytest.approx(smooth_ece(logits, labels), abs=1e-12)
    assert 0 < curve.bandwidth <= 1
    assert np.all((curve.curve >= -1e-9) & (curve.curve <= 1 + 1e-9))
    from relplot.kernels import ReflectedGaussianKernel

    conf, correct = relplot.multiclass_logits_to_confidences(logits, labels)
    mu, _ = ReflectedGaussianKernel(curve.bandwidth).smooth(conf, correct, curve.grid)
    np.testing.assert_allclose(curve.curve, mu, atol=1e-6)
    assert set(curve.to_dict()) == {"grid", "curve", "density", "bandwidth", "ece"}
    with pytest.raises(InputError, match="bandwidth"):
        smooth_ece(logits, labels, bandwidth=0.0)
    with pytest.raises(InputError, match="points"):
        smooth_reliability(logits, labels, points=1)
