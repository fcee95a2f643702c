"""Top-label inputs: the top answer's confidence and whether it was right, `(confidences, correct)` — the record of an
LLM's or any classifier's top answer, with no other class scores — measured by the same top-label kernels as (N, K)
scores (`adacal.metrics.ece`, `scoring`), on a `PreparedPredictions` that holds those two vectors.

What needs only the top label is reported: ECE-EW/EM, debiased ECE (top-label), ECE-SWEEP, smooth ECE, MCE, error,
the Brier score of the top label (mean (confidence − correct)²), the NLL of correctness (−mean[c log p + (1 − c)
log(1 − p)], p clipped at `PROB_FLOOR` as the NLL of probabilities is), the AUROC of correctness (correct answers
as positives, ranked by confidence) and the AUPRC of errors (wrong answers as positives, ranked by low confidence).
What needs every class's probability (classwise ECE, the NLL and Brier score of all classes, the marginal debiased
ECE) is not computed: `CLASS_SCORE_METRICS` names it.

From confidences derived from (N, K) scores (the largest probability, correct = argmax == label) the binned ECEs,
MCE, ECE-SWEEP, smooth ECE and error are the bits the (N, K) path gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from adacal.checks import name_items
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.metrics.binary import BINARY_METRIC_NAMES
from adacal.metrics.binning import check_n_bins
from adacal.metrics.ece import _ece_debias, _ece_em, _ece_ew, _ece_smooth, _ece_sweep_em, _ece_sweep_ew, _mce
from adacal.metrics.prepared import PROB_FLOOR, PreparedPredictions
from adacal.metrics.scoring import _brier, _error, _nll
# bootstrap_auroc_correct is re-exported: evaluate's top-label path takes it from here.
from adacal.metrics.selective import (  # noqa: F401
    RANKING_METRIC_NAMES,
    _auprc_errors,
    _auroc_correct,
    bootstrap_auroc_correct,
    selective_kernel,
    selective_key,
    selective_name,
)

# Confidences given in percent: every value in [0, 100] and at least this share of them above 1 (a fraction never
# is): divided by 100, with a note. Fewer above 1 is a set of fractions with stray values: refused, naming the rows.
PERCENT_SHARE = 0.5
# Strings read as correctness (any case, white space around them stripped); booleans, 0/1 integers and 0.0/1.0
# floats are read as they are.
TRUE_WORDS = ("true", "1", "1.0", "yes", "t", "y")
FALSE_WORDS = ("false", "0", "0.0", "no", "f", "n")


# Registry key -> kernel, in report order. "nll-correct" and "brier-top" are `scoring`'s NLL and Brier kernels: on
# `ConfidencePredictions` their per-sample terms are those of the top label's correctness.
TOP_LABEL_KERNELS = {
    "error": _error,
    "nll-correct": _nll,
    "brier-top": _brier,
    "ece-ew": _ece_ew,
    "ece-em": _ece_em,
    "ece-debias": _ece_debias,
    "ece-sweep-ew": _ece_sweep_ew,
    "ece-sweep-em": _ece_sweep_em,
    "ece-smooth": _ece_smooth,
    "mce": _mce,
    "auroc-correct": _auroc_correct,
    "auprc-errors": _auprc_errors,
}
# The metrics computed when none are named; the other selective-prediction metrics (aurc, e-aurc, augrc, risk@C,
# coverage@R: `adacal.metrics.selective`, the same kernels as for (N, K) scores) are computed when named.
TOP_LABEL_METRIC_NAMES = tuple(TOP_LABEL_KERNELS)
# Fractions in [0, 1] (tables show %); nll-correct is in nats, brier-top in [0, 1].
TOP_LABEL_FRACTIONS = frozenset(name for name in TOP_LABEL_METRIC_NAMES if name not in ("nll-correct", "brier-top"))
# Metrics of (N, K) scores that need every class's probability: not computed from top-label confidences.
# (A binary model's positive-class metrics need P(class 1) and the label, which top-label pairs do not hold.)
CLASS_SCORE_METRICS = ("nll", "brier", "classwise-ece", *BINARY_METRIC_NAMES)


class ConfidencePredictions(PreparedPredictions):
    """Validated top-label confidences (N,) and correctness (N,) as `PreparedPredictions`, for the top-label kernels:
    `confidences`, `hits`, `correct`; `true_log_probs` = log p where correct, log(1 − p) where wrong (clipped at
    PROB_FLOOR); `brier_terms` = (p − correct)². No class distribution: `probs` and `blocks` refuse.

    Build it with `prepare_confidences`.

    Args:
        confidences: float64 confidences (N,) in [0, 1], already checked (`check_confidences`).
        correct: bool (N,), already checked (`check_correct`).

    Example:
        >>> from adacal.metrics import prepare_confidences
        >>> pred = prepare_confidences([0.9, 0.3], [True, True])
        >>> pred.confidences.tolist(), pred.correct.tolist(), pred.assumed
        ([0.9, 0.3], [1.0, 1.0], 'confidences')
    """

    def __init__(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        hits = correct.astype(bool)
        super().__init__(None, hits.astype(np.int64), "confidences")
        p = np.where(hits, confidences, 1.0 - confidences)
        self._cache.update({
            "confidences": confidences,
            "predicted_labels": np.ones(len(confidences), dtype=np.int64),  # "the top label": labels are hits
            "hits": hits,
            "correct": hits.astype(np.float64),
            "true_log_probs": np.log(np.maximum(p, PROB_FLOOR)),
            "brier_terms": (confidences - hits) ** 2,
        })

    @property
    def num_classes(self) -> int:  # type: ignore[override]
        raise InputError("Expected class scores (N, K), got top-label confidences: the number of classes is unknown.")

    @property
    def probs(self) -> np.ndarray:  # type: ignore[override]
        raise InputError("Expected class scores (N, K), got top-label confidences: no class distribution to read.")

    def blocks(self) -> Any:  # type: ignore[override]
        raise InputError("Expected class scores (N, K), got top-label confidences: no class distribution to read.")


def _vector(values: Any, name: str) -> np.ndarray:
    from adacal.arrays import to_numpy

    array = to_numpy(values)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D (one value per answer), got shape {array.shape}.")
    if array.size == 0:
        raise InputError(f"Expected {name} to hold at least one answer, got none.")
    return array


def _rows(indices: np.ndarray, values: np.ndarray, limit: int = 3) -> str:
    shown = ", ".join(f"row {int(i)}: {str(values[i])[:20]!r}" if values.dtype.kind in "OUS" else
                      f"row {int(i)}: {float(values[i]):.6g}" for i in indices[:limit])
    return shown + (f", and {len(indices) - limit} more" if len(indices) > limit else "")


def check_confidences(confidences: Any, *, name: str = "confidences") -> tuple[np.ndarray, list[str]]:
    """Top-label confidences as float64 in [0, 1], and notes: values in [0, 100] with at least PERCENT_SHARE of them
    above 1 are percentages, divided by 100 (noted); anything else outside [0, 1] is refused, naming the rows.

    Example:
        >>> from adacal.metrics.confidences import check_confidences
        >>> check_confidences([73, 91.5, 100])[0].tolist()
        [0.73, 0.915, 1.0]
    """
    array = _vector(confidences, name)
    if array.dtype.kind not in "iuf":
        raise InputError(f"Expected {name} to be numbers in [0, 1], got dtype {array.dtype}.")
    values = array.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise InputError(f"Expected {name} to be finite, got NaN or Inf in {bad.size} row(s) ({_rows(bad, values)}).")
    outside = (values < 0.0) | (values > 1.0)
    if not outside.any():
        return values, []
    above = values > 1.0
    if values.min() >= 0.0 and values.max() <= 100.0 and above.sum() >= PERCENT_SHARE * values.size:
        return values / 100.0, [f"{name}: values in [0, 100], {int(above.sum())} of {values.size} above 1, read as "
                                "percentages (divided by 100)"]
    where = np.flatnonzero(outside)
    raise InputError(
        f"Expected {name} to be confidences in [0, 1] (or percentages, most of them above 1), but {where.size} of "
        f"{values.size} values are not ({_rows(where, values)}): give the top answer's probability in [0, 1]."
    )


def check_correct(correct: Any, *, n: int | None = None, name: str = "correct") -> np.ndarray:
    """Whether each top answer was right, as bool: booleans, 0/1 integers, 0.0/1.0 floats, or the words of
    TRUE_WORDS / FALSE_WORDS (any case); anything else is refused, naming the rows.

    Example:
        >>> from adacal.metrics.confidences import check_correct
        >>> check_correct([True, 0, "false", "TRUE"]).tolist()
        [True, False, False, True]
    """
    array = _vector(correct, name)
    if n is not None and array.shape[0] != n:
        raise InputError(f"Expected {name} to have one value per confidence ({n}), got {array.shape[0]}.")
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind in "OUS":
        words = np.char.lower(np.char.strip(array.astype(str)))
        truth, falsity = np.isin(words, TRUE_WORDS), np.isin(words, FALSE_WORDS)
        bad = np.flatnonzero(~(truth | falsity))
        if bad.size:
            raise InputError(f"Expected {name} to be true/false or 1/0, but {bad.size} of {array.size} values are not "
                             f"({_rows(bad, array)}).")
        return truth
    if array.dtype.kind not in "iuf":
        raise InputError(f"Expected {name} to be booleans or 0/1, got dtype {array.dtype}.")
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~((array == 0) | (array == 1)))
    if bad.size:
        raise InputError(f"Expected {name} to be booleans or 0/1, but {bad.size} of {array.size} values are not "
                         f"({_rows(bad, array)}): correctness is whether the top answer was right.")
    return array == 1


def prepare_confidences(confidences: Any, correct: Any, *, notes_out: list[str] | None = None
                        ) -> ConfidencePredictions:
    """Validate top-label confidences (N,) and correctness (N,) once, for any number of top-label metrics.

    Args:
        confidences: the top answer's probability per sample, in [0, 1] (or percentages, `check_confidences`).
        correct: whether each top answer was right (`check_correct`).
        notes_out: receives what was assumed (percentages divided by 100), when given.

    Returns:
        A `ConfidencePredictions`.

    Example:
        >>> from adacal.metrics import prepare_confidences
        >>> prepare_confidences([0.8, 0.6], [1, 0]).hits.tolist()
        [True, False]
    """
    values, notes = check_confidences(confidences)
    hits = check_correct(correct, n=values.shape[0])
    if notes_out is not None:
        notes_out.extend(notes)
    return ConfidencePredictions(values, hits)


def resolve_top_label_metrics(names: str | Iterable[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(top-label metrics to compute, metrics asked for that need class scores) from any spelling of the names.

    Args:
        names: comma-separated names or a sequence, as `--metrics` takes them; None: every top-label metric.

    Returns:
        Registry keys of TOP_LABEL_METRIC_NAMES in the order asked, and the names of CLASS_SCORE_METRICS asked for
        (skipped, for a note). An unknown name, or only metrics that need class scores, is refused.

    Example:
        >>> from adacal.metrics.confidences import resolve_top_label_metrics
        >>> resolve_top_label_metrics("ECE-EM,nll,auroc_correct")
        (('ece-em', 'auroc-correct'), ('nll',))
    """
    if names is None:
        return TOP_LABEL_METRIC_NAMES, ()
    from adacal.errors import unknown_name

    chosen: list[str] = []
    skipped: list[str] = []
    for item in name_items(names, "metric names"):
        name = item.strip().lower().replace("_", "-")
        if not name:
            continue
        name = selective_name(name) or name  # risk@C / coverage@R: canonical; a bad percentage refused
        if name in CLASS_SCORE_METRICS:
            if name not in skipped:
                skipped.append(name)
        elif name in TOP_LABEL_KERNELS or selective_kernel(name) is not None:
            if name not in chosen:
                chosen.append(name)
        else:
            raise unknown_name("metric for top-label confidences", name,
                               [*TOP_LABEL_METRIC_NAMES, "aurc", "e-aurc", "augrc", "risk@C", "coverage@R"])
    if not chosen:
        raise InputError(
            f"Expected metrics of top-label confidences ({', '.join(TOP_LABEL_METRIC_NAMES)}), got "
            f"{', '.join(skipped) or repr(names)}, which need every class's probability."
        )
    return tuple(chosen), tuple(skipped)


def compute_confidence_metrics(pred: PreparedPredictions, names: Iterable[str], n_bins: int) -> dict[str, float]:
    """Top-label metrics of validated confidences (names resolved); report keys in snake_case. The AUROC of
    correctness and the AUPRC of errors are left out when every answer is right, or every one wrong (they are
    undefined then)."""
    out = {}
    for name in names:
        if name in RANKING_METRIC_NAMES and (pred.hits.all() or not pred.hits.any()):
            continue
        kernel = TOP_LABEL_KERNELS.get(name) or selective_kernel(name)
        out[selective_key(name)] = kernel(pred, n_bins)  # type: ignore[misc]
    return out


def top_label_metrics(confidences: Any, correct: Any, *, n_bins: int = DEFAULT_N_BINS,
                      names: str | Iterable[str] | None = None) -> dict[str, float]:
    """Top-label metrics of `(confidence, correct)` pairs: the top answer's confidence and whether it was right.

    Args:
        confidences: the top answer's probability per sample (N,), in [0, 1] (or percentages).
        correct: whether each top answer was right (N,): booleans, 0/1, or "true"/"false".
        n_bins: the number of bins of the binned metrics (default 15).
        names: metrics of TOP_LABEL_METRIC_NAMES, any spelling (default: all); nll, brier and classwise-ece need
            every class's probability and are refused alone, skipped beside others.

    Returns:
        {report key: value}: fractions, nll_correct in nats, brier_top in [0, 1]; auroc_correct and auprc_errors
        only when some answers are right and some wrong.

    Example:
        >>> from adacal.metrics import top_label_metrics
        >>> metrics = top_label_metrics([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10, names="ece-ew,error")
        >>> {key: round(value, 4) for key, value in metrics.items()}  # |0.9 − 0.5| / 2 + |0.6 − 1| / 2; 1 of 4 wrong
        {'ece_ew': 0.4, 'error': 0.25}
    """
    n_bins = check_n_bins(n_bins)
    chosen, _ = resolve_top_label_metrics(names)
    return compute_confidence_metrics(prepare_confidences(confidences, correct), chosen, n_bins)


__all__ = ["CLASS_SCORE_METRICS", "ConfidencePredictions", "TOP_LABEL_FRACTIONS", "TOP_LABEL_METRIC_NAMES",
           "bootstrap_auroc_correct",
           "check_confidences", "check_correct", "compute_confidence_metrics", "prepare_confidences",
           "resolve_top_label_metrics", "top_label_metrics"]
