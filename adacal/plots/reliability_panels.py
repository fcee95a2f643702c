"""Reliability panels: what one diagram shows, computed from scores (no drawing, no matplotlib).

`ReliabilityPanel` is the record `adacal.plots.reliability_diagrams.reliability_diagram` draws; `panel_from_scores`
builds one from per-sample scores and labels (the top-1 bins, the histogram, the headline ECEs as `adacal evaluate`
computes them, and the bands, smoothed curve and CORP curve when asked for; with `positive`, a binary model's
positive-class panel); `corp_of` and `headline_eces` are its parts that other panel builders share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adacal.conventions import DEFAULT_N_BINS
from adacal.metrics.binning import BinStatistics
from adacal.plots.bands import ReliabilityBands, smooth_coverage

__all__ = ["ReliabilityPanel", "corp_of", "headline_eces", "panel_from_scores", "positive_eces"]


@dataclass(frozen=True)
class ReliabilityPanel:
    """One reliability diagram: bin statistics, an optional ECE of those bins (fraction; computed from them when
    None), an optional confidence histogram (BinStatistics or (edges, counts); the panel's own bin counts when None),
    optional bands around the bin accuracies (`adacal.plots.bands`) and an optional smoothed reliability curve
    (`adacal.metrics.SmoothReliability`, Błasiok & Nakkiran 2023) drawn over the bars.

    The title headlines the metrics `adacal evaluate` prints: `ece_em` (equal-mass bins, AdaECE), then `ece_ew`
    (fractions, computed as evaluate computes them; None: the ECE of the panel's bins of that binning, when it has
    them). `coverage` marks where along `smooth.grid` the curve is drawn (a boolean mask: where samples lie; None:
    over the bins that hold samples)."""

    label: str
    stats: BinStatistics
    ece: float | None = None
    histogram: Any = None
    color: str | None = None
    bands: ReliabilityBands | None = None
    smooth: Any = None
    binning: str | None = None  # "equal-width" or "equal-mass" when known (else read from the edges)
    ece_em: float | None = None
    ece_ew: float | None = None
    coverage: Any = None
    corp: Any = None  # an `adacal.metrics.decomposition.CorpCurve`: the CORP (PAV) curve and its consistency band
    # A binary model's positive-class diagram: P(class 1) binned against the frequency of class 1 (what scikit-learn's
    # CalibrationDisplay draws); the ECEs are then ECE-Positive-EM / -EW.
    positive: bool = False



def panel_from_scores(
    scores: Any, labels: Any, *, label: str = "", binning: str = "equal-width", n_bins: int = DEFAULT_N_BINS,
    bands: str = "none", band_samples: int = 1000, band_level: float = 0.9, seed: int = 0, smooth: bool = False,
    color: str | None = None, scores_kind: str = "auto", corp: bool = False, positive: bool = False,
) -> ReliabilityPanel:
    """One reliability panel from per-sample scores (probabilities or logits, told apart by `scores_kind` as every
    metric does: `adacal.scores_kind`) and labels: the top-1 bin statistics,
    the equal-width confidence histogram beneath, ECE-EM and ECE-EW of `n_bins` bins as `adacal evaluate` computes
    them from the same scores (`headline_eces`), and the bands and smoothed curve (drawn where the confidences lie,
    `smooth_coverage`) when asked for; `corp`: the CORP curve with its consistency band (`band_samples` outcome sets
    at `band_level`, `adacal.metrics.decomposition.corp_curve`). `positive`: a binary model's positive-class panel
    instead, P(class 1) against the frequency of class 1 (scores of other than two classes refused), titled with
    ECE-Positive-EM and -EW (`positive_eces`)."""
    from adacal.metrics import top_label
    from adacal.metrics.binary import positive_class
    from adacal.metrics.binning import bin_statistics
    from adacal.metrics.smooth import smooth_reliability_of
    from adacal.plots.bands import reliability_bands

    if positive:
        confidences, correct, _ = positive_class(scores, labels, scores_kind=scores_kind,
                                                 what="a positive-class reliability diagram",
                                                 instead="draw the top-label diagram (without positive)")
    else:
        top = top_label(scores, labels, scores_kind=scores_kind)
        confidences, correct = top.confidences, top.correct
    stats = bin_statistics(confidences, correct, n_bins=n_bins, binning=binning)
    histogram = stats if binning == "equal-width" else bin_statistics(confidences, correct, n_bins=n_bins)
    band = reliability_bands(bands, confidences, correct, stats.edges, level=band_level, n_samples=band_samples,
                             seed=seed)
    curve = smooth_reliability_of(confidences, correct) if smooth else None
    coverage = None if curve is None else smooth_coverage(curve.grid, confidences, curve.bandwidth)
    eces = positive_eces if positive else headline_eces
    ece_em, ece_ew = eces(scores, labels, n_bins=n_bins, scores_kind=scores_kind)
    return ReliabilityPanel(label, stats, histogram=histogram, color=color, bands=band, smooth=curve, binning=binning,
                            ece_em=ece_em, ece_ew=ece_ew, coverage=coverage,
                            corp=corp_of(confidences, correct, corp, band_samples, band_level, seed),
                            positive=positive)


def corp_of(confidences: Any, correct: Any, corp: bool, band_samples: int, band_level: float, seed: int) -> Any:
    """The CORP curve of a panel (`adacal.metrics.decomposition.corp_curve`) when `corp`, else None."""
    if not corp:
        return None
    from adacal.metrics.decomposition import corp_curve

    return corp_curve(confidences, correct, n_resamples=band_samples, level=band_level, seed=seed)


def headline_eces(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS,
                  scores_kind: str = "auto") -> tuple[float, float]:
    """ECE-EM and ECE-EW (fractions) of top-1 predictions, computed as `adacal evaluate` computes its report from
    the same scores (so a panel's title and evaluate's table agree to the last digit).

        >>> probs, labels = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]], [0, 1, 1, 1]
        >>> [round(ece, 4) for ece in headline_eces(probs, labels, n_bins=2)]
        [0.3, 0.1]
    """
    from adacal.metrics.calibration import compute_prepared, prepare_metric_inputs

    pred, names, n_bins = prepare_metric_inputs(scores, labels, ("ece-em", "ece-ew"), n_bins, scores_kind)
    metrics = compute_prepared(pred, names, n_bins)
    return metrics["ece_em"], metrics["ece_ew"]


def positive_eces(scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS,
                  scores_kind: str = "auto") -> tuple[float, float]:
    """ECE-Positive-EM and ECE-Positive-EW (fractions) of a binary model, as `adacal evaluate` reports them.

        >>> probs, labels = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]], [0, 1, 1, 1]
        >>> [round(ece, 4) for ece in positive_eces(probs, labels, n_bins=2)]
        [0.3, 0.3]
    """
    from adacal.metrics.calibration import compute_prepared, prepare_metric_inputs

    pred, names, n_bins = prepare_metric_inputs(scores, labels, ("ece-positive-em", "ece-positive-ew"), n_bins,
                                                scores_kind)
    metrics = compute_prepared(pred, names, n_bins)
    return metrics["ece_positive_em"], metrics["ece_positive_ew"]
