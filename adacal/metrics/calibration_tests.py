"""Calibration tests with p-values on the top-1 confidence: is the model distinguishable from a calibrated one?

Each test takes the top-label confidences c_i and correctness y_i (1 = the top answer was right) — of class scores
through `top_label`, or given as such — and returns a `CalibrationTest` (statistic, p-value, n, resamples). The
null hypothesis is top-label calibration, P(y = 1 | c) = c. Definitions (docs/conventions.md "Calibration tests"):

- `ece-em`, `ece-ew`: the consistency-resampling test (Bröcker & Smith 2007; Vaicenavicius et al. 2019). The
  statistic is the ECE (equal-mass or equal-width bins, adacal's binning of the top-1 confidence); R label sets
  y* ~ Bernoulli(c) are drawn under the null, the ECE* of each is computed with the SAME bins (they depend on the
  confidences only), and p = (1 + #{ECE* ≥ ECE}) / (1 + R) (a valid Monte Carlo p-value). Seeded; R × N draws are
  made in chunks of rows that fit `adacal.memory.available_memory()`, and the result does not depend on the chunks.
- `spiegelhalter`: Z = Σ (y − c)(1 − 2c) / sqrt(Σ (1 − 2c)² c (1 − c)) (Spiegelhalter 1986), two-sided
  p = 2 Φ(−|Z|) (MAPIE's `spiegelhalter_p_value` is the one-sided 1 − Φ(Z)).
- `ks`, `kuiper`: Arrieta-Ibarra et al. 2022 / Gupta et al. 2021, as MAPIE computes them: with the samples sorted
  by confidence, D_j = Σ_{i ≤ j} (y_i − c_i) / N and σ = sqrt(Σ c (1 − c)) / N; KS = max_j |D_j| / σ,
  Kuiper = (max_j D_j − min_j D_j) / σ over j = 0 … N, the walk's start D_0 = 0 included (the range of B
  includes B_0 = 0; MAPIE takes j = 1 … N, the same whenever the walk crosses 0, smaller than KS when it does
  not — e.g. 0 for a single group of tied confidences); p-values from the distributions of the maximum of |B| and
  the range of B, a standard Brownian motion on [0, 1] (Darling & Siegert 1953; Feller 1951). Tied confidences
  are one step of the walk (D read at the end of each group of ties, so the order inside a group cannot matter;
  MAPIE breaks ties by a seeded 1e-8 jitter instead). One sort, shared with the equal-mass ECE.

A statistic whose variance is 0 (every confidence 0, 0.5 or 1 for Spiegelhalter; 0 or 1 for KS and Kuiper) is
undefined: statistic and p-value are None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.binning import check_n_bins
from adacal.metrics.prepared import PreparedPredictions

# In report order; the keys of `results.calibration_tests` are these with "-" as "_".
TEST_NAMES = ("ece-em", "ece-ew", "spiegelhalter", "ks", "kuiper")
TEST_DISPLAY_NAMES = {"ece-em": "ECE-EM resampling", "ece-ew": "ECE-EW resampling", "spiegelhalter": "Spiegelhalter Z",
                      "ks": "Kolmogorov–Smirnov", "kuiper": "Kuiper"}
DEFAULT_RESAMPLES = 1000
_BINNINGS = {"ece-em": "equal-mass", "ece-ew": "equal-width"}
# Bytes per drawn label of one resample: a float64 uniform and its bool comparison.
_BYTES_PER_DRAW = 9
# One chunk of draws stays below this (and below a quarter of the memory available now).
_CHUNK_BYTES = 1 << 27


class CalibrationTest(NamedTuple):
    """One calibration test's outcome.

    Args:
        name: the test ("ece-em", "ece-ew", "spiegelhalter", "ks", "kuiper").
        statistic: its statistic (an ECE fraction for the resampling tests; None when undefined).
        p_value: the p-value under the null of top-label calibration (None when undefined).
        n: the number of samples.
        resamples: the label sets drawn under the null (0 for the tests with a known null distribution).

    Example:
        >>> from adacal.metrics.calibration_tests import spiegelhalter_test
        >>> test = spiegelhalter_test([0.9, 0.9, 0.9, 0.9], [0, 0, 0, 1])
        >>> test.name, round(test.statistic, 4), round(test.p_value, 6), test.resamples
        ('spiegelhalter', 4.3333, 1.5e-05, 0)
    """

    name: str
    statistic: float | None
    p_value: float | None
    n: int
    resamples: int

    def to_dict(self) -> dict[str, Any]:
        """{"statistic", "p_value", "n", "resamples"} for a JSON report."""
        return {"statistic": self.statistic, "p_value": self.p_value, "n": self.n, "resamples": self.resamples}


def check_resamples(n_resamples: Any, *, name: str = "n_resamples") -> int:
    """A positive integer number of label sets to draw under the null."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InputError(f"Expected {name} to be a positive integer (label sets drawn under the null, e.g. 1000), "
                         f"got {n_resamples!r}.")
    return int(n_resamples)


def _prepared(confidences: Any, correct: Any) -> PreparedPredictions:
    from adacal.metrics.confidences import prepare_confidences

    pred = prepare_confidences(confidences, correct)
    if pred.n_samples == 0:
        raise InputError("Expected at least one (confidence, correct) pair for a calibration test, got none.")
    return pred


def _bin_bounds(pred: PreparedPredictions, binning: str, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the non-empty bins in the sorted confidences: the bins `top_label_statistics` makes."""
    sorted_conf = pred.sorted_confidences
    edges = pred.edges(binning, n_bins)
    ends = np.concatenate((np.searchsorted(sorted_conf, edges[1:-1], side="right"), [sorted_conf.size]))
    starts = np.concatenate(([0], ends[:-1]))
    filled = ends > starts
    return starts[filled], ends[filled]


def _chunk_rows(n: int, memory: int | None) -> int:
    if memory is None:
        from adacal.memory import available_memory

        memory = min(available_memory() // 4, _CHUNK_BYTES)
    return max(1, int(memory) // (_BYTES_PER_DRAW * max(n, 1)))


def _consistency(pred: PreparedPredictions, binning: str, n_bins: int, n_resamples: int, seed: int, *,
                 memory: int | None = None) -> tuple[float, float]:
    """(ECE, p-value) of the consistency-resampling test on prepared predictions."""
    sorted_conf = pred.sorted_confidences
    n = sorted_conf.size
    starts, ends = _bin_bounds(pred, binning, n_bins)
    conf_sums = np.add.reduceat(sorted_conf, starts)
    observed_hits = (pred.cumulative_hits[ends] - pred.cumulative_hits[starts])[None, :]
    # The observed ECE and every resample's go through the same arithmetic, so equal hit counts give equal ECEs.
    observed = float(np.abs(observed_hits - conf_sums).sum(axis=1)[0] / n)
    rng = np.random.default_rng(seed)
    step = _chunk_rows(n, memory)
    at_least = 0
    for done in range(0, n_resamples, step):
        rows = min(step, n_resamples - done)
        # random((rows, n)) draws the same stream as `rows` successive random(n): chunks do not change the result.
        draws = rng.random((rows, n)) < sorted_conf
        hits = np.add.reduceat(draws, starts, axis=1, dtype=np.int64)
        ece_star = np.abs(hits - conf_sums).sum(axis=1) / n
        at_least += int(np.count_nonzero(ece_star >= observed))
    return observed, (1 + at_least) / (1 + n_resamples)


def _walk(pred: PreparedPredictions) -> tuple[np.ndarray, float]:
    """The cumulative differences D at the end of each group of tied confidences, and σ (Arrieta-Ibarra et al.)."""
    sorted_conf = pred.sorted_confidences
    n = sorted_conf.size
    ends = np.flatnonzero(np.concatenate((sorted_conf[1:] != sorted_conf[:-1], [True]))) + 1
    cum_conf = np.concatenate(([0.0], np.cumsum(sorted_conf)))
    walk = (pred.cumulative_hits[ends] - cum_conf[ends]) / n
    sigma = math.sqrt(float(np.dot(sorted_conf, 1.0 - sorted_conf))) / n
    return walk, sigma


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def max_brownian_sf(x: float) -> float:
    """P(max_{t ∈ [0, 1]} |B_t| > x) for a standard Brownian motion B: the KS test's p-value of its statistic x.

    Below x = 1 the theta series 1 − (2/π) Σ_k (−1)^k / (k + ½) exp(−(k + ½)² π² / (2x²)) (MAPIE's
    `kolmogorov_smirnov_cdf`), above it the reflection series 4 Σ_{k ≥ 1} (−1)^{k−1} Φ̄((2k − 1) x), which keeps its
    precision in the far tail.

    Example:
        >>> from adacal.metrics.calibration_tests import max_brownian_sf
        >>> round(max_brownian_sf(1.0), 4), max_brownian_sf(0.0)
        (0.6292, 1.0)
    """
    if x <= 0.0:
        return 1.0
    if x < 1.0:
        k = np.arange(40) + 0.5
        cdf = 2.0 / math.pi * float(np.sum((-1.0) ** np.arange(40) / k * np.exp(-(k**2) * math.pi**2 / (2 * x * x))))
        return min(1.0, max(0.0, 1.0 - cdf))
    total = sum((-1.0) ** (k - 1) * _normal_sf((2 * k - 1) * x) for k in range(1, 12))
    return min(1.0, max(0.0, 4.0 * total))


def brownian_range_sf(x: float) -> float:
    """P(max_{t ∈ [0, 1]} B_t − min_{t ∈ [0, 1]} B_t > x) for a standard Brownian motion B: the Kuiper test's
    p-value of its statistic x. The CDF is Feller's series Σ_{k ≥ 0} (8/x² + 2/((k + ½)² π²)) exp(−2 (k + ½)² π² / x²)
    (MAPIE's `kuiper_cdf`), summed until its terms fall below double precision.

    Example:
        >>> from adacal.metrics.calibration_tests import brownian_range_sf
        >>> round(brownian_range_sf(1.0), 4), round(brownian_range_sf(2.0), 4)
        (0.9366, 0.1815)
    """
    if x <= 0.0:
        return 1.0
    if x > 40.0:  # the tail is below 1e-300: the series' terms would take ~10⁴ steps to fall
        return 0.0
    eps = np.finfo(np.float64).eps
    terms = math.ceil(0.5 + x / (math.pi * math.sqrt(2.0))
                      * math.sqrt(math.log(4.0 / (math.sqrt(2.0 * math.pi) * eps) * (1.0 / x + x / math.pi**2))))
    k = np.arange(max(terms, 1)) + 0.5
    cdf = float(np.sum((8.0 / x**2 + 2.0 / (k**2 * math.pi**2)) * np.exp(-2.0 * k**2 * math.pi**2 / x**2)))
    return min(1.0, max(0.0, 1.0 - cdf))


def _spiegelhalter(pred: PreparedPredictions) -> tuple[float | None, float | None]:
    conf, hits = pred.confidences, pred.correct
    weight = 1.0 - 2.0 * conf
    variance = float(np.dot(weight * weight, conf * (1.0 - conf)))
    if variance <= 0.0:
        return None, None
    z = float(np.dot(hits - conf, weight)) / math.sqrt(variance)
    return z, min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


def _cumulative(walked: tuple[np.ndarray, float], name: str) -> tuple[float | None, float | None]:
    walk, sigma = walked
    if sigma <= 0.0:
        return None, None
    if name == "ks":
        statistic = float(np.max(np.abs(walk))) / sigma
        return statistic, max_brownian_sf(statistic)
    statistic = float(max(np.max(walk), 0.0) - min(np.min(walk), 0.0)) / sigma  # from D_0 = 0
    return statistic, brownian_range_sf(statistic)


def check_test_names(names: str | Iterable[str] | None) -> tuple[str, ...]:
    """The tests asked for, in report order (None or "all": every test); an unknown name is refused."""
    if names is None or names == "all":
        return TEST_NAMES
    asked = [names] if isinstance(names, str) else list(names)
    words = [word.strip().lower().replace("_", "-") for item in asked for word in str(item).split(",") if word.strip()]
    unknown = [word for word in words if word not in TEST_NAMES]
    if unknown:
        raise InputError(f"Expected calibration test names among {', '.join(TEST_NAMES)}, got {unknown[0]!r}.")
    return tuple(name for name in TEST_NAMES if name in words)


def run_calibration_tests(pred: PreparedPredictions, names: str | Iterable[str] | None = None, *,
                          n_bins: int = DEFAULT_N_BINS, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                          memory: int | None = None) -> dict[str, CalibrationTest]:
    """The calibration tests `names` (default: all) of prepared predictions (`prepare_predictions` or
    `prepare_confidences`), keyed by test name; the resampling tests use `n_bins` bins, `n_resamples` label sets and
    `seed`. `memory` (bytes) caps one chunk of draws (default: a quarter of the memory available now, at most 128 MiB).

    Example:
        >>> from adacal.metrics import prepare_predictions
        >>> from adacal.metrics.calibration_tests import run_calibration_tests
        >>> pred = prepare_predictions([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]], [0, 1, 1])
        >>> sorted(run_calibration_tests(pred, n_resamples=99))
        ['ece-em', 'ece-ew', 'ks', 'kuiper', 'spiegelhalter']
    """
    names = check_test_names(names)
    n_bins = check_n_bins(n_bins)
    n_resamples = check_resamples(n_resamples)
    n = pred.n_samples
    if n == 0:
        raise InputError("Expected at least one sample for a calibration test, got none.")
    out: dict[str, CalibrationTest] = {}
    walked = _walk(pred) if "ks" in names or "kuiper" in names else None  # one walk for both
    for name in names:
        if name in _BINNINGS:
            statistic, p_value = _consistency(pred, _BINNINGS[name], n_bins, n_resamples, seed, memory=memory)
            out[name] = CalibrationTest(name, statistic, p_value, n, n_resamples)
        elif name == "spiegelhalter":
            out[name] = CalibrationTest(name, *_spiegelhalter(pred), n, 0)
        else:
            out[name] = CalibrationTest(name, *_cumulative(walked, name), n, 0)
    return out


def calibration_tests(confidences: Any, correct: Any, names: str | Iterable[str] | None = None, *,
                      n_bins: int = DEFAULT_N_BINS, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = 0) -> dict[str, CalibrationTest]:
    """The calibration tests `names` (default: all of TEST_NAMES) of top-label confidences and correctness.

    Args:
        confidences: the top answer's probability per sample (N,), in [0, 1].
        correct: whether each top answer was right (N,), booleans or 0/1.
        names: tests among TEST_NAMES (a list or a comma-separated string), None for all.
        n_bins: bins of the resampling tests' ECE.
        n_resamples: label sets drawn under the null by the resampling tests.
        seed: the seed of those draws.

    Returns:
        {name: CalibrationTest}.

    Example:
        >>> from adacal.metrics.calibration_tests import calibration_tests
        >>> tests = calibration_tests([0.95] * 20, [0] * 10 + [1] * 10, n_bins=5, n_resamples=199)
        >>> round(tests["ece-em"].statistic, 2), tests["ece-em"].p_value   # ECE 0.45: no label set drawn reaches it
        (0.45, 0.005)
    """
    return run_calibration_tests(_prepared(confidences, correct), names, n_bins=n_bins, n_resamples=n_resamples,
                                 seed=seed)


def consistency_test(confidences: Any, correct: Any, *, binning: str = "equal-mass", n_bins: int = DEFAULT_N_BINS,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> CalibrationTest:
    """The ECE consistency-resampling test (Bröcker & Smith 2007; Vaicenavicius et al. 2019) of top-label pairs.

    Args:
        confidences: top-label confidences (N,) in [0, 1].
        correct: whether each top answer was right (N,).
        binning: "equal-mass" (test "ece-em") or "equal-width" ("ece-ew").
        n_bins: the ECE's bins.
        n_resamples: R, the label sets y* ~ Bernoulli(confidence) drawn.
        seed: the seed of the draws.

    Returns:
        A `CalibrationTest` with statistic the ECE and p = (1 + #{ECE* ≥ ECE}) / (1 + R).

    Example:
        >>> from adacal.metrics.calibration_tests import consistency_test
        >>> test = consistency_test([0.6] * 10, [1] * 6 + [0] * 4, n_bins=1, n_resamples=999)
        >>> round(test.statistic, 6), test.p_value     # accuracy 0.6 = confidence 0.6: every ECE* is at least 0
        (0.0, 1.0)
    """
    names = {binning_name: name for name, binning_name in _BINNINGS.items()}
    if binning not in names:
        raise InputError(f"Expected binning to be one of {', '.join(names)}, got {binning!r}.")
    return calibration_tests(confidences, correct, names[binning], n_bins=n_bins, n_resamples=n_resamples,
                             seed=seed)[names[binning]]


def spiegelhalter_test(confidences: Any, correct: Any) -> CalibrationTest:
    """Spiegelhalter's Z test of top-label pairs: Z = Σ (y − c)(1 − 2c) / sqrt(Σ (1 − 2c)² c (1 − c)), two-sided
    p = 2 Φ(−|Z|) (None when every confidence is 0, 0.5 or 1).

    Example:
        >>> from adacal.metrics.calibration_tests import spiegelhalter_test
        >>> round(spiegelhalter_test([0.9, 0.9, 0.9, 0.9], [0, 0, 0, 1]).statistic, 4)   # over-confident above ½: Z > 0
        4.3333
    """
    return calibration_tests(confidences, correct, "spiegelhalter")["spiegelhalter"]


def ks_test(confidences: Any, correct: Any) -> CalibrationTest:
    """The Kolmogorov–Smirnov calibration test of top-label pairs (max |cumulative difference| / σ; see the module).

    Example:
        >>> from adacal.metrics.calibration_tests import ks_test
        >>> round(ks_test([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 1]).statistic, 4)
        1.118
    """
    return calibration_tests(confidences, correct, "ks")["ks"]


def kuiper_test(confidences: Any, correct: Any) -> CalibrationTest:
    """The Kuiper calibration test of top-label pairs (range of the cumulative differences / σ; see the module).

    Example:
        >>> from adacal.metrics.calibration_tests import kuiper_test
        >>> round(kuiper_test([0.2, 0.4, 0.6, 0.8], [0, 1, 1, 1]).statistic, 4)
        1.3416
        >>> round(kuiper_test([0.9] * 4, [0, 0, 0, 1]).statistic, 4)   # one tie: the range of 0 and D_4, = KS
        4.3333
    """
    return calibration_tests(confidences, correct, "kuiper")["kuiper"]
