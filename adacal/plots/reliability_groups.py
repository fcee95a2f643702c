"""`adacal plot reliability INPUT --group-by KEY`: one reliability diagram per group of one input's samples (a task, a
subject, a column), in a grid, each from the group's rows alone as `adacal evaluate --group-by` measures them.

The top-1 confidence and correctness are computed once from the whole input (the kind of its scores decided once, as
evaluate decides it; a file of top-label `(confidence, correct)` pairs is read as such), then binned per group. At
most MAX_GROUP_PANELS diagrams are drawn: with more groups, the MAX_GROUP_PANELS largest (by count; ties by name),
with a note naming how many were left out — `adacal evaluate --group-by` tabulates every group.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.plots.reliability_panels import ReliabilityPanel, corp_of

# A grid of 12 diagrams (3 rows of at most 5) stays readable; with more groups the 12 largest are drawn, noted.
MAX_GROUP_PANELS = 12

__all__ = ["MAX_GROUP_PANELS", "group_options", "group_reliability_panels", "panel_from_confidences"]


def panel_from_confidences(
    confidences: Any, correct: Any, *, label: str = "", binning: str = "equal-width", n_bins: int = DEFAULT_N_BINS,
    bands: str = "none", band_samples: int = 1000, band_level: float = 0.9, seed: int = 0, smooth: bool = False,
    color: str | None = None, corp: bool = False,
) -> ReliabilityPanel:
    """One reliability panel from top-1 confidences (N,) and correctness (N,): the bins, the equal-width histogram,
    ECE-EM and ECE-EW as the top-label metrics compute them (the numbers `adacal evaluate` prints for the same rows),
    and the bands, smoothed curve and CORP curve when asked for.

    Example:
        >>> panel = panel_from_confidences([0.9, 0.8, 0.6, 0.7], [1, 0, 1, 1], n_bins=2, label="law")
        >>> panel.label, panel.stats.counts.tolist(), round(panel.ece_ew, 4)  # |0.75 - 0.75|
        ('law', [0, 4], 0.0)
    """
    from adacal.metrics.binning import bin_statistics
    from adacal.metrics.confidences import top_label_metrics
    from adacal.metrics.smooth import smooth_reliability_of
    from adacal.plots.bands import reliability_bands, smooth_coverage

    confidences = np.asarray(confidences, dtype=np.float64)
    correct = np.asarray(correct).astype(np.float64)
    stats = bin_statistics(confidences, correct, n_bins=n_bins, binning=binning)
    histogram = stats if binning == "equal-width" else bin_statistics(confidences, correct, n_bins=n_bins)
    band = reliability_bands(bands, confidences, correct, stats.edges, level=band_level, n_samples=band_samples,
                             seed=seed)
    curve = smooth_reliability_of(confidences, correct) if smooth else None
    coverage = None if curve is None else smooth_coverage(curve.grid, confidences, curve.bandwidth)
    eces = top_label_metrics(confidences, correct, n_bins=n_bins, names="ece-em,ece-ew")
    return ReliabilityPanel(label, stats, histogram=histogram, color=color, bands=band, smooth=curve, binning=binning,
                            ece_em=eces["ece_em"], ece_ew=eces["ece_ew"], coverage=coverage,
                            corp=corp_of(confidences, correct, corp, band_samples, band_level, seed))


def group_options(path: str | Path, key: str, options: Any = None) -> Any:
    """The reading options for `--group-by KEY` (a text table's KEY column set aside), KEY checked first: a text
    table whose header does not name it is refused before it is read, listing its columns."""
    from adacal.interpretation.groups import check_group_key, check_table_group_key
    from adacal.sources import ReadOptions

    key = check_group_key(key)
    options = replace(options or ReadOptions(), group_by=key)
    check_table_group_key(path, key, options=options)
    return options


def group_reliability_panels(path: str | Path, key: str, confidences: Any, correct: Any, predictions: Any, *,
                             binning: str = "equal-width", n_bins: int = DEFAULT_N_BINS, options: Any = None,
                             band_options: dict[str, Any] | None = None, smooth: bool = False,
                             notes_out: list[str] | None = None) -> list[ReliabilityPanel]:
    """One panel per group of KEY (docs/inputs.md "Group keys") of the predictions read from `path` (`predictions`,
    read with `group_options`), from their top-1 `confidences` and `correct`ness computed once; sorted by name and
    labelled "<group> (n=<count>)"; at most MAX_GROUP_PANELS (the largest groups, noted in `notes_out`)."""
    from adacal.grouped import group_indices
    from adacal.interpretation.groups import attach_groups

    confidences, correct = np.asarray(confidences), np.asarray(correct)
    predictions = attach_groups(predictions, path, key, options=options)
    if notes_out is not None:
        notes_out.extend(note for note in predictions.notes if note not in notes_out)
    groups = group_indices(predictions.groups[key], key=key)
    if len(groups) > MAX_GROUP_PANELS:
        largest = sorted(groups, key=lambda item: (-item[1].size, item[0]))[:MAX_GROUP_PANELS]
        if notes_out is not None:
            notes_out.append(f"{len(groups)} groups of {key}: drew the {MAX_GROUP_PANELS} largest, left out "
                             f"{len(groups) - MAX_GROUP_PANELS} (adacal evaluate --group-by {key} tabulates all)")
        groups = sorted(largest, key=lambda item: item[0])
    return [panel_from_confidences(confidences[rows], correct[rows], label=f"{name} (n={rows.size})", binning=binning,
                                   n_bins=n_bins, smooth=smooth, **(band_options or {}))
            for name, rows in groups]
