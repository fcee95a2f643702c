"""Per-group reports (`--group-by KEY`): the evaluate report's figures on each group's rows alone — a task, a subject,
a column of the input — beside the same figures on every row, as `results.groups`.

Each group's row is `evaluate_predictions` (or `evaluate_confidences`) of its rows, with the options of the overall
report and the kind of scores the overall reading decided (never re-decided on a group's rows): its count, accuracy,
metrics and, where the overall report has them, bootstrap intervals (the same seed per group). Groups are sorted by
name; groups of fewer than SMALL_GROUP samples are flagged (`small`: their figures, ECEs above all, are noisy).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError

# Groups of fewer samples than this are flagged "small" (n < 50): a 15-bin ECE of 40 answers is mostly noise.
SMALL_GROUP = 50
# More groups than this are refused: a table of 10,000 "groups" is a per-sample key (an id), not a grouping.
MAX_GROUPS = 1000

__all__ = ["MAX_GROUPS", "SMALL_GROUP", "group_indices", "grouped_results"]


def group_indices(names: Any, *, key: str = "group") -> list[tuple[str, np.ndarray]]:
    """(group name, row indices) per distinct name, sorted by name; more than MAX_GROUPS groups are refused.

    Example:
        >>> [(name, rows.tolist()) for name, rows in group_indices(["b", "a", "b"])]
        [('a', [1]), ('b', [0, 2])]
    """
    names = np.asarray(names).astype(str)
    distinct, inverse = np.unique(names, return_inverse=True)
    if distinct.size > MAX_GROUPS:
        raise InputError(f"Expected at most {MAX_GROUPS} groups for --group-by {key}, got {distinct.size} distinct "
                         f"values in {names.size} samples: '{key}' looks like a per-sample id; group by another key.")
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=distinct.size))[:-1]
    return [(str(name), rows) for name, rows in zip(distinct, np.split(order, bounds))]


def _row(group: str, results: dict[str, Any], accuracy: float) -> dict[str, Any]:
    row: dict[str, Any] = {"group": group, "n_samples": int(results["n_samples"]), "accuracy": float(accuracy),
                           "small": int(results["n_samples"]) < SMALL_GROUP, "metrics": results["metrics"]}
    if "bootstrap" in results:
        row["bootstrap"] = results["bootstrap"]
    if results.get("notes"):
        row["notes"] = list(results["notes"])
    return row


def _scores_results(scores: np.ndarray, labels: np.ndarray, hits: np.ndarray, kind: str, group: str,
                    options: dict[str, Any]) -> dict[str, Any]:
    """`evaluate_predictions` of one group's scores; the AUROC of correctness and AUPRC of errors, undefined where
    the group's answers are all right (or all wrong), are left out with a note (as top-label reports do)."""
    from adacal.evaluation import evaluate_predictions
    from adacal.metrics.calibration import resolve_metric_names
    from adacal.metrics.selective import RANKING_METRIC_NAMES, SELECTIVE_DISPLAY_NAMES

    names = resolve_metric_names(options["metric_names"])
    undefined = [] if hits.any() and not hits.all() else [name for name in names if name in RANKING_METRIC_NAMES]
    kept = tuple(name for name in names if name not in undefined)
    if not kept:  # only ranking metrics asked, none defined here
        return {"n_samples": int(hits.size), "metrics": {}, "notes": [
            f"{' and '.join(SELECTIVE_DISPLAY_NAMES[n] for n in undefined)} not computed: every answer is right, "
            "or every one wrong"]}
    results = evaluate_predictions(scores, labels, scores_kind=kind, name=f"the scores of group {group!r}",
                                   **{**options, "metric_names": kept})
    if undefined:
        results["notes"] = [f"{' and '.join(SELECTIVE_DISPLAY_NAMES[n] for n in undefined)} not computed: every "
                            "answer is right, or every one wrong"]
    return results


def grouped_results(
    scores: Any,
    labels: Any,
    group_names: Any,
    *,
    key: str,
    overall: dict[str, Any],
    n_bins: int = DEFAULT_N_BINS,
    metric_names: str | Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The `results.groups` block of an evaluate report: the figures of `overall` (an `evaluate_predictions` or
    `evaluate_confidences` results block of the same rows) on each group's rows alone.

    Args:
        scores: the scores (N, K) the overall report measured, or the top-label confidences (N,) when
            `overall["assumed_input"]` is "confidences" (then `labels` is the correctness).
        labels: class indices (N,), or the correctness (N,).
        group_names: one group name per sample (N,).
        key: the grouping key (`--group-by`), recorded.
        overall: the overall results block.
        n_bins, metric_names, bootstrap, seed, confidence: the overall report's options.

    Returns:
        {"key", "small_below": SMALL_GROUP, "rows": [{"group", "n_samples", "accuracy", "small", "metrics",
        "bootstrap" (when asked), "notes" (when any)}, ...] sorted by group name, "overall": the same row of every
        sample}.

    Example:
        >>> from adacal.evaluation import evaluate_confidences
        >>> conf, correct, task = [0.9, 0.8, 0.6, 0.7], [1, 0, 1, 1], ["b", "a", "b", "a"]
        >>> overall = evaluate_confidences(conf, correct, metric_names="error")
        >>> table = grouped_results(conf, correct, task, key="task", overall=overall, metric_names="error")
        >>> [(row["group"], row["n_samples"], row["accuracy"]) for row in table["rows"]], table["overall"]["accuracy"]
        ([('a', 2, 0.5), ('b', 2, 1.0)], 0.75)
    """
    from adacal.evaluation import evaluate_confidences
    from adacal.metrics import prepare_confidences, prepare_predictions

    top_label = overall.get("assumed_input") == "confidences"
    kind = None if top_label else overall["assumed_input"]
    # The hits as the overall report counted them (argmax ties, the kind decided once): accuracy of every row.
    pred = prepare_confidences(scores, labels) if top_label else prepare_predictions(scores, labels, scores_kind=kind)
    hits = pred.hits
    names = np.asarray(group_names)
    if names.shape != (hits.shape[0],):
        raise InputError(f"Expected one group name per sample ({hits.shape[0]}) for --group-by {key}, got shape "
                         f"{names.shape}.")
    options = {"n_bins": n_bins, "metric_names": metric_names, "bootstrap": bootstrap, "seed": seed,
               "confidence": confidence}
    conf = pred.confidences if top_label else None
    values = None if top_label else np.asarray(scores)
    label_array = None if top_label else np.asarray(labels)
    rows = []
    for group, index in group_indices(names, key=key):
        if top_label:
            results = evaluate_confidences(conf[index], hits[index], **options)
        else:
            results = _scores_results(values[index], label_array[index], hits[index], kind, group, options)
        rows.append(_row(group, results, float(hits[index].mean())))
    return {"key": key, "small_below": SMALL_GROUP, "rows": rows,
            "overall": _row("all", overall, float(hits.mean()))}
