"""Calibration under dataset shift (Ovadia et al. 2019): the metrics of one shifted set, before and after a
temperature, and their summary per severity over the corruptions.

Pure functions of logits and labels; `adacal.commands.shift.run_shift` feeds them a model's outputs on a corruption
suite (`adacal.data.corruptions`).

    >>> import numpy as np
    >>> logits, labels = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), np.array([0, 1, 1])
    >>> entry = set_metrics(logits, labels, temperature=2.0, n_bins=2)
    >>> round(entry["pre"]["error"], 4), round(entry["post"]["error"], 4)  # T never changes the argmax
    (0.3333, 0.3333)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from adacal.reports import make_report

# What every shifted set reports, as report keys (fractions; NLL in nats). Error is the same before and after T.
SHIFT_METRICS = ("error", "nll", "ece_em", "ece_ew", "ece_debias")
SHIFT_FILE = "shift.json"
SEVERITIES = (1, 2, 3, 4, 5)


def set_metrics(logits: Any, labels: Any, *, temperature: float | None, n_bins: int = 15) -> dict[str, Any]:
    """{"pre": metrics of the logits as given, "post": metrics of logits / T, or None without a temperature}."""
    from adacal.metrics import compute_metrics

    logits = np.asarray(logits, dtype=np.float64)
    pre = compute_metrics(logits, labels, n_bins=n_bins, names=SHIFT_METRICS)
    post = None
    if temperature is not None:
        post = compute_metrics(logits / float(temperature), labels, n_bins=n_bins, names=SHIFT_METRICS)
    return {"pre": _plain(pre), "post": None if post is None else _plain(post)}


def _plain(metrics: dict[str, Any]) -> dict[str, float | None]:
    return {key: (None if metrics.get(key) is None else float(metrics[key])) for key in SHIFT_METRICS}


def spread(values: Iterable[float | None]) -> dict[str, Any]:
    """Mean, sample std (ddof 1; None for one value), median, quartiles, min and max of the values that exist.

    >>> s = spread([0.1, 0.2, 0.3, None])
    >>> s["n"], round(s["mean"], 3), round(s["std"], 3), s["median"]
    (3, 0.2, 0.1, 0.2)
    """
    kept = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if kept.size == 0:
        return {"n": 0, "mean": None, "std": None, "median": None, "q1": None, "q3": None, "min": None, "max": None}
    q1, median, q3 = (float(v) for v in np.percentile(kept, [25, 50, 75]))
    return {"n": int(kept.size), "mean": float(kept.mean()), "std": float(kept.std(ddof=1)) if kept.size > 1 else None,
            "median": median, "q1": q1, "q3": q3, "min": float(kept.min()), "max": float(kept.max())}


def by_severity(sets: Sequence[dict[str, Any]], severities: Iterable[int]) -> dict[str, Any]:
    """Per severity ("1" ... "5"): the spread of each metric over the corruptions' sets, before and after T."""
    summary: dict[str, Any] = {}
    for severity in severities:
        entries = [entry for entry in sets if entry["severity"] == severity]
        block: dict[str, Any] = {"sets": len(entries)}
        for stage in ("pre", "post"):
            if any(entry[stage] is None for entry in entries) or not entries:
                block[stage] = None
                continue
            block[stage] = {key: spread(entry[stage][key] for entry in entries) for key in SHIFT_METRICS}
        summary[str(severity)] = block
    return summary


def shift_report(results: dict[str, Any], *, config: dict[str, Any]) -> dict[str, Any]:
    """The full shift.json report (the common envelope)."""
    return make_report("shift", config=config, results=results)


def shift_report_name(corruptions: Sequence[str], severities: Sequence[int], *, suite: Sequence[str],
                      limit: int | None) -> str:
    """shift.json for the whole suite at every severity on every image; else a name that says what it holds
    (shift-fog+contrast-s5.json, shift-all-s1+3-n500.json), so a quick check never replaces the full report."""
    whole = list(corruptions) == list(suite) and tuple(severities) == SEVERITIES
    if whole and limit is None:
        return SHIFT_FILE
    which = "all" if list(corruptions) == list(suite) else "+".join(corruptions)
    if len(which) > 80:  # a long hand-picked list: its count and first name, not a name past file-system limits
        which = f"{len(corruptions)}corruptions-{corruptions[0]}"
    levels = "+".join(str(s) for s in severities) if tuple(severities) != SEVERITIES else "1-5"
    return f"shift-{which}-s{levels}" + (f"-n{limit}" if limit is not None else "") + ".json"
