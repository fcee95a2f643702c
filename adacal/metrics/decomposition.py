"""The CORP score decomposition (Dimitriadis, Gneiting & Jordan, PNAS 2021): did calibration cost discrimination?

For binary forecasts x_i of events y_i ∈ {0, 1} and a proper score s (Brier: (x − y)²; log-loss: −y log x −
(1 − y) log(1 − x)), with mean scores
  S    = mean s(x_i, y_i)       the forecast's score,
  S_rc = mean s(x̂_i, y_i)      x̂ = the PAV (isotonic, pool-adjacent-violators) regression of y on x, tied forecasts
                                 pooled into one value (the CORP reliability curve),
  S_mg = mean s(ȳ, y_i)         the climatology, ȳ the base rate,
the decomposition is MCB = S − S_rc (miscalibration, ≥ 0), DSC = S_mg − S_rc (discrimination, ≥ 0), UNC = S_mg
(uncertainty), and S = MCB − DSC + UNC exactly. An isotonic-calibrated forecast (x̂ = x) has MCB = 0.

In adacal the events are: `brier-top` and `nll-correct` — the top-1 confidence as the forecast that the top answer is
right (y = correct; the metrics of those names are S) — and `brier` — the multi-class Brier Σ_k (p_k − 1[y = k])²,
decomposed one-vs-rest: class k's probability p_k as the forecast of the event y = k, each class's MCB, DSC and UNC
summed over the K classes (so S is adacal's `brier`). Definitions: docs/conventions.md "CORP decomposition".
`corp_curve` gives the PAV curve and its consistency band for `plot reliability --corp`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adacal.errors import InputError
from adacal.metrics.prepared import PROB_FLOOR, PreparedPredictions

DECOMPOSITION_SCORES = ("brier", "log-loss")
# The per-class Brier decomposition reads the (N, K) probabilities column by column: above this many cells it is
# left out of evaluate's report (one sort per class).
MAX_CLASSWISE_CELLS = 1 << 25


class Decomposition(NamedTuple):
    """One CORP decomposition: score = miscalibration − discrimination + uncertainty.

    Args:
        score: S, the mean score of the forecast.
        miscalibration: MCB = S − S_rc.
        discrimination: DSC = S_mg − S_rc.
        uncertainty: UNC = S_mg.
        n: the number of samples.

    Example:
        >>> from adacal.metrics.decomposition import corp_decomposition
        >>> d = corp_decomposition([0.2, 0.8, 0.8, 0.9], [0, 1, 0, 1])
        >>> round(d.score, 4), round(d.miscalibration - d.discrimination + d.uncertainty, 4)
        (0.1825, 0.1825)
    """

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        """{"score", "miscalibration", "discrimination", "uncertainty", "n"} for a JSON report."""
        return self._asdict()


def _check_pairs(forecasts: Any, outcomes: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(forecasts, dtype=np.float64).reshape(-1)
    y = np.asarray(outcomes, dtype=np.float64).reshape(-1)
    if x.size != y.size:
        raise InputError(f"Expected one outcome per forecast ({x.size}), got {y.size}.")
    if x.size == 0:
        raise InputError("Expected at least one (forecast, outcome) pair for a score decomposition, got none.")
    if not np.all(np.isfinite(x)) or x.min() < 0.0 or x.max() > 1.0:
        raise InputError("Expected forecasts to be probabilities in [0, 1], got values outside it.")
    if not np.all((y == 0.0) | (y == 1.0)):
        raise InputError("Expected outcomes to be 0 or 1, got other values.")
    return x, y


def _pav_of_groups(counts: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """The PAV fit at each distinct forecast (ascending), from its sample count and number of events."""
    from sklearn.isotonic import isotonic_regression

    fitted = isotonic_regression(hits / counts, sample_weight=counts.astype(np.float64), increasing=True)
    # Isotonic means of 0/1 outcomes lie in [0, 1]; clip the rounding of the weighted means.
    return np.clip(fitted, 0.0, 1.0)


def _pav_groups(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(order, distinct forecasts, their counts, their events, the PAV fit at each) with ties in x pooled first."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    counts = np.diff(np.concatenate((starts, [xs.size])))
    hits = np.add.reduceat(y[order], starts)
    return order, xs[starts], counts, hits, _pav_of_groups(counts, hits)


def pav_recalibrate(forecasts: Any, outcomes: Any) -> np.ndarray:
    """The CORP recalibrated forecasts: the isotonic (PAV) regression of the outcomes on the forecasts, tied
    forecasts getting one value, returned in the input's order.

    Example:
        >>> from adacal.metrics.decomposition import pav_recalibrate
        >>> pav_recalibrate([0.1, 0.4, 0.4, 0.9], [1, 0, 1, 1]).tolist()   # 1 then ½, ½ violates: pooled to ⅔
        [0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 1.0]
    """
    x, y = _check_pairs(forecasts, outcomes)
    order, _, counts, _, fitted = _pav_groups(x, y)
    out = np.empty_like(x)
    out[order] = np.repeat(fitted, counts)
    return out


def _scores(p: np.ndarray, y: np.ndarray, score: str, *, clip: bool) -> np.ndarray:
    if score == "brier":
        return (p - y) ** 2
    # Log-loss with 0 log 0 = 0; the forecast itself is clipped at PROB_FLOOR as adacal's NLL is (nll-correct).
    q = np.where(y == 1.0, p, 1.0 - p)
    if clip:
        return -np.log(np.maximum(q, PROB_FLOOR))
    with np.errstate(divide="ignore"):
        return -np.log(q)


def _group_score(p: np.ndarray, counts: np.ndarray, hits: np.ndarray, score: str) -> float:
    """Σ over groups of the scores of forecast p[g] for its hits[g] events among counts[g] samples (0 log 0 = 0)."""
    misses = counts - hits
    if score == "brier":
        return float(np.sum(hits * (1.0 - p) ** 2 + misses * p**2))
    from scipy.special import xlogy

    return float(-np.sum(xlogy(hits, p) + xlogy(misses, 1.0 - p)))


def _decompose_groups(s: float, counts: np.ndarray, hits: np.ndarray, score: str) -> Decomposition:
    """The decomposition from S and the distinct forecasts' counts and events (ascending forecasts)."""
    n = int(counts.sum())
    # The PAV fit of a block is its outcomes' mean: it is 0 or 1 only where every outcome agrees (finite log-loss).
    s_rc = _group_score(_pav_of_groups(counts, hits), counts, hits, score) / n
    total = np.array([float(hits.sum())])
    s_mg = _group_score(total / n, np.array([n], dtype=np.float64), total, score) / n
    return Decomposition(s, s - s_rc, s_mg - s_rc, s_mg, n)


def _decompose(x: np.ndarray, y: np.ndarray, score: str) -> Decomposition:
    _, _, counts, hits, _ = _pav_groups(x, y)
    return _decompose_groups(float(np.mean(_scores(x, y, score, clip=True))), counts, hits, score)


def check_score_name(score: Any) -> str:
    if score not in DECOMPOSITION_SCORES:
        raise InputError(f"Expected score to be one of {', '.join(DECOMPOSITION_SCORES)}, got {score!r}.")
    return score


def corp_decomposition(forecasts: Any, outcomes: Any, *, score: str = "brier") -> Decomposition:
    """CORP decomposition of the mean Brier score or log-loss of binary forecasts.

    Args:
        forecasts: probabilities of the event (N,), in [0, 1].
        outcomes: whether it happened (N,), 0/1.
        score: "brier" ((x − y)²) or "log-loss" (natural log; the forecast's own score clipped at 1e-12).

    Returns:
        A `Decomposition`: S, MCB = S − S_rc, DSC = S_mg − S_rc, UNC = S_mg.

    Example:
        >>> from adacal.metrics.decomposition import corp_decomposition
        >>> d = corp_decomposition([0.2, 0.8, 0.8, 0.9], [0, 1, 0, 1])
        >>> [round(v, 4) for v in (d.miscalibration, d.discrimination, d.uncertainty)]
        [0.0575, 0.125, 0.25]
    """
    x, y = _check_pairs(forecasts, outcomes)
    return _decompose(x, y, check_score_name(score))


def top_label_decomposition(pred: PreparedPredictions, score: str = "brier") -> Decomposition:
    """CORP decomposition of the top-1 confidence as the forecast that the top answer is right (`brier-top` for
    "brier", `nll-correct` for "log-loss") of prepared predictions.

    Example:
        >>> from adacal.metrics import prepare_predictions
        >>> from adacal.metrics.decomposition import top_label_decomposition
        >>> pred = prepare_predictions([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 0, 0])
        >>> round(top_label_decomposition(pred).score, 4)   # ((0.8 − 1)² + (0.7 − 0)² + (0.6 − 1)²) / 3
        0.23
    """
    score = check_score_name(score)
    # The sort the equal-mass ECE shares: the cumulative hits are exact at the end of every group of ties.
    sorted_conf, cum = pred.sorted_confidences, pred.cumulative_hits
    ends = np.flatnonzero(np.concatenate((sorted_conf[1:] != sorted_conf[:-1], [True]))) + 1
    starts = np.concatenate(([0], ends[:-1]))
    counts = (ends - starts).astype(np.float64)
    hits = cum[ends] - cum[starts]
    s = float(np.mean(_scores(pred.confidences, pred.correct, score, clip=True)))
    return _decompose_groups(s, counts, hits, score)


def classwise_brier_decomposition(pred: PreparedPredictions) -> Decomposition:
    """CORP decomposition of the multi-class Brier score Σ_k (p_k − 1[y = k])², one-vs-rest: class k's probability
    as the forecast of y = k, the K decompositions summed (one sort per class).

    Example:
        >>> from adacal.metrics import brier, prepare_predictions
        >>> from adacal.metrics.decomposition import classwise_brier_decomposition
        >>> probs, labels = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], [0, 0, 0]
        >>> d = classwise_brier_decomposition(prepare_predictions(probs, labels))
        >>> round(d.score, 4), round(brier(probs, labels), 4)
        (0.46, 0.46)
    """
    probs = pred.probs
    labels = pred.labels
    parts = [_decompose(np.ascontiguousarray(probs[:, k]), (labels == k).astype(np.float64), "brier")
             for k in range(probs.shape[1])]
    return Decomposition(*(float(sum(part[i] for part in parts)) for i in range(4)), int(labels.size))


def decompositions_of(pred: PreparedPredictions, *, classwise: bool = True) -> tuple[dict[str, Any], list[str]]:
    """`results.decomposition` of an evaluate report — {"brier_top", "nll_correct", and for class scores "brier"}:
    each a `Decomposition.to_dict()` — and the notes on what was left out."""
    out: dict[str, Any] = {"brier_top": top_label_decomposition(pred, "brier").to_dict(),
                           "nll_correct": top_label_decomposition(pred, "log-loss").to_dict()}
    notes: list[str] = []
    if classwise:
        cells = pred.n_samples * pred.num_classes
        if cells <= MAX_CLASSWISE_CELLS:
            out["brier"] = classwise_brier_decomposition(pred).to_dict()
        else:
            notes.append(f"the per-class Brier decomposition is left out above {MAX_CLASSWISE_CELLS:,} scores "
                         f"(N × K = {cells:,}); the top-label ones are computed")
    return out, notes


class CorpCurve(NamedTuple):
    """The CORP reliability curve of binary forecasts: at each distinct forecast x, its PAV recalibrated value and a
    consistency band — the pointwise quantiles of the PAV fits of outcomes drawn y* ~ Bernoulli(x) (what a calibrated
    forecast's curve would look like).

    Args:
        forecasts: the distinct forecasts, ascending.
        recalibrated: the PAV fit at each.
        counts: samples per distinct forecast.
        band_low, band_high: the band (None without resamples).
        level: the band's coverage (e.g. 0.9).
        resamples: outcome sets drawn for the band.
    """

    forecasts: np.ndarray
    recalibrated: np.ndarray
    counts: np.ndarray
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    level: float
    resamples: int


def corp_curve(forecasts: Any, outcomes: Any, *, n_resamples: int = 200, level: float = 0.9,
               seed: int = 0) -> CorpCurve:
    """The CORP reliability curve (PAV) with its consistency band (Dimitriadis et al. 2021: resampled outcomes
    y* ~ Bernoulli(x), the PAV fit of each, pointwise quantiles (1 ± level) / 2 at each distinct forecast).

    Args:
        forecasts: probabilities of the event (N,); the top-1 confidences for a top-label diagram.
        outcomes: 0/1 (N,); the correctness for a top-label diagram.
        n_resamples: outcome sets drawn for the band (0: no band).
        level: the band's coverage in (0, 1).
        seed: the seed of the draws.

    Example:
        >>> from adacal.metrics.decomposition import corp_curve
        >>> curve = corp_curve([0.1, 0.4, 0.4, 0.9], [1, 0, 1, 1], n_resamples=50)
        >>> curve.forecasts.tolist(), curve.recalibrated.round(4).tolist()
        ([0.1, 0.4, 0.9], [0.6667, 0.6667, 1.0])
    """
    from sklearn.isotonic import isotonic_regression

    x, y = _check_pairs(forecasts, outcomes)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise InputError(f"Expected n_resamples to be a non-negative integer, got {n_resamples!r}.")
    if not 0.0 < float(level) < 1.0:
        raise InputError(f"Expected level to be in (0, 1), got {level!r}.")
    order, distinct, counts, _, fitted = _pav_groups(x, y)
    if not n_resamples:
        return CorpCurve(distinct, fitted, counts, None, None, float(level), 0)
    xs = x[order]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rng = np.random.default_rng(seed)
    weights = counts.astype(np.float64)
    fits = np.empty((n_resamples, distinct.size))
    for r in range(n_resamples):
        means = np.add.reduceat((rng.random(xs.size) < xs).astype(np.float64), starts) / counts
        fits[r] = isotonic_regression(means, sample_weight=weights, increasing=True)
    tail = (1.0 - float(level)) / 2.0
    low, high = np.quantile(fits, [tail, 1.0 - tail], axis=0)
    return CorpCurve(distinct, fitted, counts, low, high, float(level), int(n_resamples))
