"""Calibration metrics by name: the registry, the spellings of each metric, and `compute_metrics`.

The metrics themselves live in one module per family and are all importable from here and from `adacal.metrics`:
- `adacal.metrics.prepared`: validating scores and labels once (`prepare_predictions`, `PreparedPredictions`) and
  the top-1 helpers (`top_label`, `row_top`);
- `adacal.metrics.ece`: the ECE family (equal-width, equal-mass, debiased, sweep, smooth), MCE, classwise ECE and
  `reliability`; `adacal.metrics.sweep`: how ECE_SWEEP picks its number of bins;
- `adacal.metrics.scoring`: NLL, Brier score and top-1 error;
- `adacal.metrics.binary`: a binary model's positive-class Brier and ECEs (`brier-positive`, `ece-positive-ew`,
  `ece-positive-em`), refused for K != 2 and added to `evaluate`'s default metrics for binary inputs only;
- `adacal.metrics.selective`: selective prediction (AURC, E-AURC, AUGRC, risk@C, coverage@R, AUROC of correctness,
  AUPRC of errors),
  asked for by name: they are not among the metrics computed by default (`METRIC_NAMES`).
Every public metric is a pure function `metric(scores, labels, *, n_bins=DEFAULT_N_BINS) -> float` returning a
fraction (nll in nats, brier in [0, 2]). `compute_metrics` validates the input once and runs each metric's kernel on
the shared `PreparedPredictions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from adacal.conventions import DEFAULT_N_BINS
from adacal.checks import name_items
from adacal.errors import InputError

# Every metric and its helpers stay importable from here (`from adacal.metrics.calibration import ece_em`) as well
# as from `adacal.metrics`: names imported below and not used in this module are re-exports.
from adacal.metrics.binning import sorted_with_cumulative_hits  # noqa: F401
from adacal.metrics.ece import (  # noqa: F401
    DEBIAS_MODES,
    _classwise_ece,
    _ece_debias,
    _ece_em,
    _ece_ew,
    _ece_smooth,
    _ece_sweep_em,
    _ece_sweep_ew,
    _mce,
    classwise_ece,
    classwise_error,
    ece_debias,
    ece_em,
    ece_ew,
    ece_sweep_em,
    ece_sweep_ew,
    mce,
    reliability,
    smooth_ece,
    smooth_reliability,
)
from adacal.metrics.binary import (  # noqa: F401
    BINARY_DISPLAY_NAMES,
    BINARY_KERNELS,
    BINARY_METRIC_NAMES,
    BINARY_PUBLIC,
    brier_positive,
    ece_positive_em,
    ece_positive_ew,
)
from adacal.metrics.binning import check_n_bins
from adacal.metrics.allocation import check_bins_fit
from adacal.metrics.prepared import (  # noqa: F401
    PROB_FLOOR,
    PreparedPredictions,
    TopLabel,
    check_prepared,
    prepare_batch,
    prepare_predictions,
    row_top,
    top_label,
)
from adacal.metrics.scoring import _brier, _error, _nll, brier, error, nll
from adacal.metrics.selective import (  # noqa: F401
    SELECTIVE_DISPLAY_NAMES,
    SELECTIVE_METRIC_NAMES,
    aurc,
    auprc_errors,
    auroc_correct,
    augrc,
    e_aurc,
    risk_coverage_curve,
    selective_display_name,
    selective_kernel,
    selective_key,
    selective_name,
)
from adacal.metrics.sweep import sweep_bins  # noqa: F401
from adacal.registry import Registry


METRICS: Registry[float] = Registry("metric")
_KERNELS: dict[str, Callable[[PreparedPredictions, int], float]] = {}

for _name, _public, _kernel in (
    ("error", error, _error),
    ("nll", nll, _nll),
    ("brier", brier, _brier),
    ("ece-ew", ece_ew, _ece_ew),
    ("ece-em", ece_em, _ece_em),
    ("ece-debias", ece_debias, _ece_debias),
    ("ece-sweep-ew", ece_sweep_ew, _ece_sweep_ew),
    ("ece-sweep-em", ece_sweep_em, _ece_sweep_em),
    ("ece-smooth", smooth_ece, _ece_smooth),
    ("mce", mce, _mce),
    ("classwise-ece", classwise_ece, _classwise_ece),
):
    METRICS.register(_name)(_public)
    _KERNELS[_name] = _kernel

# In report order: the metrics computed when none are named. Registry keys are hyphenated (what users type); report
# keys are snake_case.
METRIC_NAMES: tuple[str, ...] = tuple(_KERNELS)

# A binary model's positive-class metrics: refused for K != 2, so not in METRIC_NAMES; `default_metric_names` adds
# them for K = 2 (`adacal evaluate`'s default report).
for _name in BINARY_METRIC_NAMES:
    METRICS.register(_name)(BINARY_PUBLIC[_name])
    _KERNELS[_name] = BINARY_KERNELS[_name]

# Selective prediction, by name only; "risk@80" and "coverage@5" are parsed (`adacal.metrics.selective`).
for _name, _public in zip(SELECTIVE_METRIC_NAMES, (aurc, e_aurc, augrc, auroc_correct, auprc_errors)):
    METRICS.register(_name)(_public)

# Metrics that are fractions in [0, 1] (tables show them in %); nll is in nats, brier in [0, 2] and brier-positive
# in [0, 1] (shown as a number, as scikit-learn's brier_score_loss). Every selective
# metric, risk@C and coverage@R included, is a fraction too (`is_fraction_metric`).
FRACTION_METRICS = frozenset(
    (*(name for name in METRIC_NAMES if name not in ("nll", "brier")), *SELECTIVE_METRIC_NAMES,
     "ece-positive-ew", "ece-positive-em")
)


def kernel_of(name: str) -> Callable[[PreparedPredictions, int], float]:
    """The kernel of a metric by its registry key (as `resolve_metric_names` returns it): "risk@80" included."""
    kernel = _KERNELS.get(name) or selective_kernel(name)
    if kernel is None:
        METRICS.get(name)  # raises UnknownNameError listing the choices
    return kernel  # type: ignore[return-value]


def is_fraction_metric(name: str) -> bool:
    """Whether a metric (any spelling) is a fraction in [0, 1], shown in % by tables.

    Example:
        >>> from adacal.metrics.calibration import is_fraction_metric
        >>> is_fraction_metric("risk@80"), is_fraction_metric("nll")
        (True, False)
    """
    canonical = _canonical(name)
    return canonical in FRACTION_METRICS or selective_name(canonical) is not None


# How tables and figures spell each metric (one spelling everywhere); JSON keys are `metric_key`, users type any of
# the registry key ("ece-em"), the JSON key ("ece_em") or the display name ("ECE-EM").
DISPLAY_NAMES: dict[str, str] = {
    "error": "Error",
    "nll": "NLL",
    "brier": "Brier",
    "ece-ew": "ECE-EW",
    "ece-em": "ECE-EM",
    "ece-debias": "ECE-DEBIAS",
    "ece-sweep-ew": "ECE-SWEEP-EW",
    "ece-sweep-em": "ECE-SWEEP-EM",
    "ece-smooth": "ECE-SMOOTH",
    "mce": "MCE",
    "classwise-ece": "Classwise-ECE",
    **BINARY_DISPLAY_NAMES,
    **SELECTIVE_DISPLAY_NAMES,
}


def metric_key(name: str) -> str:
    """The report (JSON) key of a metric, from any accepted spelling.

    Args:
        name: a registry key ("ece-em"), report key ("ece_em") or display name ("ECE-EM").

    Returns:
        The snake_case report key.

    Example:
        >>> from adacal.metrics import metric_key
        >>> metric_key("ECE-EM")
        'ece_em'
    """
    canonical = _canonical(name)
    selective = selective_name(canonical) if "@" in canonical or "-at-" in canonical else None
    return selective_key(selective) if selective is not None else canonical.replace("-", "_")


def display_name(name: str) -> str:
    """How tables and figures spell a metric, from any accepted spelling.

    Args:
        name: a registry key ("ece-em"), report key ("ece_em") or display name ("ECE-EM").

    Returns:
        The display name (`DISPLAY_NAMES`; an unknown name upper-cased).

    Example:
        >>> from adacal.metrics import display_name
        >>> display_name("ece_em")
        'ECE-EM'
    """
    canonical = _canonical(name)
    if canonical in DISPLAY_NAMES:
        return DISPLAY_NAMES[canonical]
    selective = selective_name(canonical) if "@" in canonical or "-at-" in canonical else None
    return selective_display_name(selective) if selective is not None else canonical.upper()


def _canonical(name: str) -> str:
    if not isinstance(name, str):
        raise InputError(f"Expected a metric name (a string such as 'ece-em'), got {name!r}.")
    return name.strip().lower().replace("_", "-")


def default_metric_names(num_classes: int | None = None) -> tuple[str, ...]:
    """The metrics a report computes when none are named.

    Args:
        num_classes: the number of classes K of the scores (None: unknown).

    Returns:
        `METRIC_NAMES`, and for K = 2 the positive-class metrics after them (`BINARY_METRIC_NAMES`).

    Example:
        >>> from adacal.metrics.calibration import default_metric_names
        >>> default_metric_names(2)[-3:]
        ('brier-positive', 'ece-positive-ew', 'ece-positive-em')
    """
    return METRIC_NAMES + (BINARY_METRIC_NAMES if num_classes == 2 else ())


def resolve_metric_names(names: str | Iterable[str] | None) -> tuple[str, ...]:
    """Registry keys of the metrics asked for, checked, in the order given and without repeats.

    Args:
        names: comma-separated names ("ece-em,nll"), a sequence of names, or None for every metric of
            `METRIC_NAMES`; any spelling; "risk@80" / "coverage@5" (a percentage) parameterised.

    Returns:
        A tuple of registry keys. An unknown name is an error listing the choices; a bad percentage is refused.

    Example:
        >>> from adacal.metrics import resolve_metric_names
        >>> resolve_metric_names("ece_em,NLL")
        ('ece-em', 'nll')
    """
    if names is None:
        return METRIC_NAMES
    resolved: list[str] = []
    for item in name_items(names, "metric names"):
        name = _canonical(item)
        if not name:
            continue
        selective = selective_name(name)  # risk@C / coverage@R: canonical spelling, a bad percentage refused
        if selective is not None:
            name = selective
        else:
            METRICS.get(name)  # raises UnknownNameError listing the choices and the closest match
        if name not in resolved:
            resolved.append(name)
    if not resolved:
        raise InputError(f"Expected at least one metric name, got {names!r}.")
    return tuple(resolved)


def compute_prepared(pred: PreparedPredictions, names: Iterable[str], n_bins: int) -> dict[str, float]:
    """Metrics of already validated predictions (names already resolved); report keys in snake_case."""
    return {metric_key(name): kernel_of(name)(pred, n_bins) for name in names}


def prepare_metric_inputs(
    scores: Any, labels: Any, names: str | Iterable[str] | None, n_bins: Any, scores_kind: str = "auto", *,
    name: str = "scores",
) -> tuple[PreparedPredictions, tuple[str, ...], int]:
    """The first step of `compute_metrics`, the bootstrap and evaluate: the metric names resolved, `n_bins` checked,
    the predictions validated once (their kind by `prepare_predictions`' rule or `scores_kind`), and the bins
    checked to fit in memory for those metrics (the classwise ECE keeps K × n_bins cells). `name` names the scores in
    a refusal."""
    names = resolve_metric_names(names)
    n_bins = check_n_bins(n_bins)
    pred = prepare_predictions(scores, labels, scores_kind=scores_kind, name=name)
    check_bins_fit(n_bins, num_classes=pred.num_classes, classwise="classwise-ece" in names)
    return pred, names, n_bins


def compute_metrics(
    scores: Any, labels: Any, *, n_bins: int = DEFAULT_N_BINS, names: str | Iterable[str] | None = None,
    scores_kind: str = "auto",
) -> dict[str, float]:
    """Several metrics at once, validating the input once.

    Args:
        scores: probabilities or logits (N, K), numpy or torch.
        labels: class indices (N,).
        n_bins: the number of bins of the binned metrics (default 15).
        names: the metrics, as `resolve_metric_names` takes them (default: all, in report order).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`, docs/inputs.md §2), "logits" or "probs".

    Returns:
        {report key: value}, e.g. {"ece_em": 0.0123, ...}: fractions, nll in nats, brier in [0, 2].

    Example:
        >>> from adacal.metrics import compute_metrics
        >>> probs = [[0.9, 0.1], [0.9, 0.1], [0.2, 0.8], [0.2, 0.8]]
        >>> metrics = compute_metrics(probs, [0, 1, 1, 1], names="error,brier")
        >>> {key: round(value, 4) for key, value in metrics.items()}  # 1 of 4 wrong; (0.02 + 1.62 + 2 * 0.08) / 4
        {'error': 0.25, 'brier': 0.45}
    """
    pred, names, n_bins = prepare_metric_inputs(scores, labels, names, n_bins, scores_kind)
    return compute_prepared(pred, names, n_bins)
