"""adacal.plots.bands: consistency and bootstrap bands against a slow loop with the same seed, and their coverage."""

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.metrics.binning import bin_statistics, equal_mass_edges, equal_width_edges
from adacal.plots import bands as B


def _data(n=300, seed=0, power=1.0):
    rng = np.random.default_rng(seed)
    confidences = rng.beta(4, 1.5, n)
    correct = (rng.random(n) < confidences ** power).astype(float)
    return confidences, correct


def _members(confidences, edges, b):
    """Samples of bin b under the (lower, upper] convention, first bin closed below, written out as a loop."""
    last = len(edges) - 2
    out = []
    for k, c in enumerate(confidences):
        above = c > edges[b] or b == 0
        below = c <= edges[b + 1] or b == last
        if above and below:
            out.append(k)
    return out


def _slow_quantiles(per_bin, level):
    lower, upper = [], []
    for values in per_bin:
        if values:
            lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
        else:
            lo = hi = np.nan
        lower.append(lo)
        upper.append(hi)
    return np.array(lower), np.array(upper)


def _slow_consistency(confidences, edges, level, n_samples, seed):
    rng = np.random.default_rng(seed)
    members = [_members(confidences, edges, b) for b in range(len(edges) - 1)]
    per_bin = [[] for _ in members]
    for _ in range(n_samples):
        u = rng.random(len(confidences))
        outcomes = [1.0 if u[k] < confidences[k] else 0.0 for k in range(len(confidences))]
        for b, ks in enumerate(members):
            if ks:
                per_bin[b].append(sum(outcomes[k] for k in ks) / len(ks))
    return _slow_quantiles(per_bin, level)


def _slow_bootstrap(confidences, correct, edges, level, n_samples, seed):
    rng = np.random.default_rng(seed)
    n = len(confidences)
    per_bin = [[] for _ in range(len(edges) - 1)]
    for _ in range(n_samples):
        chosen = rng.integers(0, n, n)
        c, y = confidences[chosen], correct[chosen]
        for b in range(len(edges) - 1):
            ks = _members(c, edges, b)
            if ks:
                per_bin[b].append(sum(y[k] for k in ks) / len(ks))
    return _slow_quantiles(per_bin, level)


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
@pytest.mark.parametrize("level, seed", [(0.9, 0), (0.5, 7)])
def test_consistency_bands_equal_a_slow_loop_with_the_same_seed(binning, level, seed):
    confidences, _ = _data(n=120)
    edges = equal_width_edges(8) if binning == "equal-width" else equal_mass_edges(confidences, 8)
    band = B.consistency_bands(confidences, edges, level=level, n_samples=60, seed=seed)
    lower, upper = _slow_consistency(confidences, edges, level, 60, seed)
    np.testing.assert_allclose(band.lower, lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.upper, upper, rtol=0, atol=1e-12)
    assert band.kind == "consistency" and band.level == level and band.n_samples == 60 and band.seed == seed


@pytest.mark.parametrize("level, seed", [(0.9, 0), (0.8, 3)])
def test_bootstrap_bands_equal_a_slow_loop_with_the_same_seed(level, seed):
    confidences, correct = _data(n=90, seed=1)
    edges = equal_width_edges(6)
    band = B.bootstrap_bands(confidences, correct, edges, level=level, n_samples=40, seed=seed)
    lower, upper = _slow_bootstrap(confidences, correct, edges, level, 40, seed)
    np.testing.assert_allclose(band.lower, lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.upper, upper, rtol=0, atol=1e-12)


def test_empty_bins_have_no_band_and_filled_bins_are_ordered():
    confidences, correct = _data()
    edges = equal_width_edges(20)  # beta(4, 1.5) leaves the lowest bins empty
    counts = bin_statistics(confidences, correct, edges=edges).counts
    assert (counts == 0).any()
    for band in (B.consistency_bands(confidences, edges, n_samples=50),
                 B.bootstrap_bands(confidences, correct, edges, n_samples=50)):
        assert np.all(np.isnan(band.lower[counts == 0])) and np.all(np.isnan(band.upper[counts == 0]))
        filled = counts > 0
        assert np.all(band.lower[filled] <= band.upper[filled])
        assert np.all((band.lower[filled] >= 0) & (band.upper[filled] <= 1))


def test_same_seed_same_band_other_seed_other_band():
    confidences, correct = _data()
    edges = equal_width_edges(10)
    a = B.bootstrap_bands(confidences, correct, edges, n_samples=50, seed=1)
    b = B.bootstrap_bands(confidences, correct, edges, n_samples=50, seed=1)
    c = B.bootstrap_bands(confidences, correct, edges, n_samples=50, seed=2)
    np.testing.assert_array_equal(a.lower, b.lower)
    assert not np.array_equal(np.nan_to_num(a.lower), np.nan_to_num(c.lower))


def test_calibrated_accuracies_fall_inside_consistency_bands_at_the_level():
    """Labels drawn from a calibrated model: each bin's accuracy lands in the 90 % band about 90 % of the time;
    from an over-confident model (true accuracy confidence²) far less often."""
    rng = np.random.default_rng(5)
    confidences = rng.beta(4, 1.5, 2000)
    edges = equal_width_edges(10)
    band = B.consistency_bands(confidences, edges, level=0.9, n_samples=2000, seed=0)
    counts = bin_statistics(confidences, np.zeros_like(confidences), edges=edges).counts
    checked = counts >= 30
    inside = {"calibrated": [], "over-confident": []}
    for _ in range(150):
        u = rng.random(confidences.size)
        for name, truth in (("calibrated", confidences), ("over-confident", confidences ** 2)):
            accuracy = bin_statistics(confidences, (u < truth).astype(float), edges=edges).accuracy
            inside[name].extend(((accuracy >= band.lower) & (accuracy <= band.upper))[checked])
    assert 0.86 <= np.mean(inside["calibrated"]) <= 0.97
    assert np.mean(inside["over-confident"]) < 0.5


def test_bootstrap_interval_shrinks_with_more_samples_and_holds_the_accuracy():
    small_c, small_y = _data(n=200, seed=2)
    large_c, large_y = _data(n=5000, seed=2)
    edges = equal_width_edges(5)
    small = B.bootstrap_bands(small_c, small_y, edges, n_samples=200)
    large = B.bootstrap_bands(large_c, large_y, edges, n_samples=200)
    stats = bin_statistics(large_c, large_y, edges=edges)
    filled = stats.counts >= 50
    assert np.all(((large.upper - large.lower) < (small.upper - small.lower))[filled])
    assert np.all(((stats.accuracy >= large.lower) & (stats.accuracy <= large.upper))[filled])


@pytest.mark.parametrize("kind, samples, level, match", [
    ("bayes", 100, 0.9, "--bands"),
    ("consistency", 5, 0.9, "--band-samples"),
    ("consistency", 10**6, 0.9, "--band-samples"),
    ("consistency", True, 0.9, "--band-samples"),
    ("bootstrap", 100, 1.0, "--band-level"),
    ("bootstrap", 100, 0.0, "--band-level"),
    ("bootstrap", 100, float("nan"), "--band-level"),
])
def test_bad_band_options_are_one_sentence(kind, samples, level, match):
    confidences, correct = _data(n=50)
    with pytest.raises(InputError, match=match):
        B.reliability_bands(kind, confidences, correct, equal_width_edges(5), n_samples=samples, level=level)


def test_too_much_work_is_refused_before_drawing(monkeypatch):
    monkeypatch.setattr(B, "MAX_BAND_DRAWS", 1000)
    confidences, correct = _data(n=200)
    with pytest.raises(InputError, match=r"200 = 20,000.*lower --band-samples"):
        B.consistency_bands(confidences, equal_width_edges(5), n_samples=100)


def test_none_gives_no_band_and_descriptions_read_well():
    confidences, correct = _data(n=50)
    assert B.reliability_bands("none", confidences, correct, equal_width_edges(5)) is None
    band = B.reliability_bands("consistency", confidences, correct, equal_width_edges(5), n_samples=10, level=0.95)
    assert band.description == "95 % consistency band (calibrated model)"
