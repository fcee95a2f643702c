"""Selective-prediction metrics: how well the top-1 confidence ranks right answers above wrong ones, for abstaining.

A selective classifier accepts the samples whose confidence is at least a threshold τ and abstains on the rest. Ties
are accepted or rejected together, so the risk–coverage curve has one point per distinct confidence (τ running down
the distinct values): coverage c = n_τ / N (the share accepted), selective risk r = e_τ / n_τ (the error rate among
the accepted) and generalized risk g = e_τ / N (the share of all samples accepted and wrong; Traub et al. 2024).
Every kernel reads the curve `risk_coverage_of` builds from the prepared predictions' sorted confidences and
cumulative hits (`PreparedPredictions.sorted_confidences`, the one sort the equal-mass ECE shares), so all of them
together cost one sort and O(N) more. Definitions (docs/conventions.md):

- `aurc` (Geifman & El-Yaniv 2017; Geifman et al. 2019): Σ_j (c_j − c_{j−1}) r_j, c_0 = 0 — the mean over the N
  coverages i/N of the selective risk, each coverage inside a group of ties taking the group's risk; without ties it
  is the papers' (1/N) Σ_i r(i/N).
- `e-aurc`: aurc − the aurc of the oracle that ranks every right answer above every wrong one, computed exactly on
  the sample: (1/N) Σ_{i=1}^{N} max(0, i − C) / i with C right answers (the continuous limit is r + (1 − r) ln(1 − r)).
- `augrc` (Traub et al. 2024): the trapezoid area under (0, 0), (c_1, g_1), …, (1, error): Σ_j (c_j − c_{j−1})
  (g_{j−1} + g_j) / 2; its oracle is exactly error² / 2.
- `risk@C` (C a percentage): the selective risk at the smallest coverage ≥ C % the thresholds reach.
- `coverage@R`: the largest coverage whose selective risk is ≤ R %; 0 when no threshold reaches it.
- `auroc-correct`: the AUROC of correctness ranked by confidence (right answers positive, ties counted one half),
  sklearn's `roc_auc_score(correct, confidence)`; undefined (refused) when all answers are right or all wrong.
- `auprc-errors`: the average precision of the errors ranked by LOW confidence (wrong answers positive, score
  −confidence), sklearn's `average_precision_score(wrong, -confidence)`: Σ_j (R_j − R_{j−1}) P_j over the distinct
  confidences from the lowest up, a group of ties entering together (no interpolation); undefined (refused) when all
  answers are right or all wrong, as `auroc-correct` is. Its chance level is the error rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from adacal.errors import InputError
from adacal.metrics.prepared import PreparedPredictions, metric_function, prepare_predictions

# The metrics with no parameter, in report order; `risk@C` and `coverage@R` are parsed by `parse_selective_name`.
SELECTIVE_METRIC_NAMES = ("aurc", "e-aurc", "augrc", "auroc-correct", "auprc-errors")
SELECTIVE_DISPLAY_NAMES = {"aurc": "AURC", "e-aurc": "E-AURC", "augrc": "AUGRC", "auroc-correct": "AUROC-CORRECT",
                           "auprc-errors": "AUPRC-ERRORS"}
# How well confidence tells right from wrong: undefined where every answer is right, or every one wrong (left out of
# reports with a note, their bootstrap intervals over the resamples where they are defined).
RANKING_METRIC_NAMES = ("auroc-correct", "auprc-errors")
_PARAMETERISED = re.compile(r"^(risk|coverage)(?:@|-at-)(.*)$")
_WHAT = {"risk": ("coverage", "risk@80 for the selective risk at 80 % coverage"),
         "coverage": ("risk", "coverage@5 for the largest coverage whose selective risk is at most 5 %")}


class RiskCoverage(NamedTuple):
    """The risk–coverage curve of top-1 confidences, one point per distinct confidence, from the highest down.

    Args:
        thresholds: the distinct confidences, descending (a sample is accepted when its confidence is ≥ one).
        accepted: samples accepted at each threshold (int64).
        errors: wrong answers among them (int64).
        n_samples: N.

    Example:
        >>> from adacal.metrics.selective import risk_coverage_curve
        >>> curve = risk_coverage_curve([[0.9, 0.1], [0.2, 0.8], [0.8, 0.2]], [0, 0, 0])
        >>> curve.coverage.tolist(), curve.risk.tolist()   # 0.8 is tied: both accepted together
        ([0.3333333333333333, 1.0], [0.0, 0.3333333333333333])
    """

    thresholds: np.ndarray
    accepted: np.ndarray
    errors: np.ndarray
    n_samples: int

    @property
    def coverage(self) -> np.ndarray:
        return self.accepted / self.n_samples

    @property
    def risk(self) -> np.ndarray:
        """Selective risk: errors / accepted."""
        return self.errors / self.accepted

    @property
    def generalized_risk(self) -> np.ndarray:
        """Errors among the accepted over all N samples."""
        return self.errors / self.n_samples


def risk_coverage_of(pred: PreparedPredictions) -> RiskCoverage:
    """The risk–coverage curve of validated predictions (cached on them), from their sorted confidences and
    cumulative hits: no sort of its own once the equal-mass ECE (or another metric here) has sorted."""
    if "risk_coverage" not in pred._cache:
        ordered, cum = pred.sorted_confidences, pred.cumulative_hits
        n = ordered.size
        # The first position of each group of tied confidences (ascending), read from the top group down.
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])[::-1]
        accepted = n - starts
        hits = (cum[n] - cum[starts]).astype(np.int64)
        pred._cache["risk_coverage"] = RiskCoverage(ordered[starts], accepted.astype(np.int64), accepted - hits, n)
    return pred._cache["risk_coverage"]


def risk_coverage_curve(scores: Any, labels: Any, *, scores_kind: str = "auto") -> RiskCoverage:
    """The risk–coverage curve of scores (N, K) and labels: one point per distinct top-1 confidence.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them), or a
            `PreparedPredictions` (top-label confidences from `prepare_confidences` too).
        labels: class indices (N,) (ignored for prepared predictions).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".

    Returns:
        A `RiskCoverage` (`coverage`, `risk`, `generalized_risk` per threshold).

    Example:
        >>> from adacal.metrics.selective import risk_coverage_curve
        >>> curve = risk_coverage_curve([[0.9, 0.1], [0.3, 0.7]], [0, 0])
        >>> curve.thresholds.tolist(), curve.errors.tolist(), curve.generalized_risk.tolist()
        ([0.9, 0.7], [0, 1], [0.0, 0.5])
    """
    if isinstance(scores, PreparedPredictions):
        return risk_coverage_of(scores)
    return risk_coverage_of(prepare_predictions(scores, labels, scores_kind=scores_kind))


def _aurc(pred: PreparedPredictions, n_bins: int) -> float:
    curve = risk_coverage_of(pred)
    widths = np.diff(curve.accepted, prepend=0)
    return float(np.dot(widths, curve.errors / curve.accepted) / curve.n_samples)


def oracle_aurc(n_samples: int, n_correct: int) -> float:
    """The AURC of the oracle ranking (every right answer above every wrong one) of N samples with C right:
    (1/N) Σ_{i=C+1}^{N} (i − C) / i, exactly.

    Example:
        >>> from adacal.metrics.selective import oracle_aurc
        >>> oracle_aurc(5, 3)  # (1/4 + 2/5) / 5
        0.13
    """
    i = np.arange(n_correct + 1, n_samples + 1, dtype=np.float64)
    return float(np.sum((i - n_correct) / i) / n_samples)


def _e_aurc(pred: PreparedPredictions, n_bins: int) -> float:
    curve = risk_coverage_of(pred)
    n_correct = int(curve.accepted[-1] - curve.errors[-1])
    return _aurc(pred, n_bins) - oracle_aurc(curve.n_samples, n_correct)


def _augrc(pred: PreparedPredictions, n_bins: int) -> float:
    curve = risk_coverage_of(pred)
    widths = np.diff(curve.accepted, prepend=0)
    heights = curve.errors + np.r_[0, curve.errors[:-1]]
    return float(np.dot(widths, heights) / (2.0 * curve.n_samples**2))


def _auroc_correct(pred: PreparedPredictions, n_bins: int) -> float:
    """Mann–Whitney from the curve: each right answer scores 1 per wrong answer below its confidence, ½ per tied."""
    curve = risk_coverage_of(pred)
    n_wrong = int(curve.errors[-1])
    n_right = curve.n_samples - n_wrong
    if n_wrong == 0 or n_right == 0:
        raise InputError("Expected both correct and wrong answers for the AUROC of correctness, got only "
                         f"{'correct' if n_wrong == 0 else 'wrong'} ones: leave out auroc-correct.")
    group_wrong = np.diff(curve.errors, prepend=0)
    group_right = np.diff(curve.accepted, prepend=0) - group_wrong
    wrong_below = n_wrong - curve.errors  # groups run from the highest confidence down
    return float(np.dot(group_right, wrong_below + 0.5 * group_wrong) / (n_right * n_wrong))


def _auprc_errors(pred: PreparedPredictions, n_bins: int) -> float:
    """Average precision of the errors from the curve, its groups read from the lowest confidence up."""
    curve = risk_coverage_of(pred)
    n_wrong = int(curve.errors[-1])
    if n_wrong == 0 or n_wrong == curve.n_samples:
        raise InputError("Expected both correct and wrong answers for the AUPRC of errors, got only "
                         f"{'correct' if n_wrong == 0 else 'wrong'} ones: leave out auprc-errors.")
    group_wrong = np.diff(curve.errors, prepend=0)[::-1]
    group_size = np.diff(curve.accepted, prepend=0)[::-1]
    precision = np.cumsum(group_wrong) / np.cumsum(group_size)
    return float(np.dot(group_wrong, precision) / n_wrong)


def ranking_defined(pred: PreparedPredictions) -> bool:
    """Whether the metrics of RANKING_METRIC_NAMES are defined: some answers right and some wrong."""
    return bool(pred.hits.any() and not pred.hits.all())


def bootstrap_ranking(pred: PreparedPredictions, name: str, *, n_resamples: int, seed: int, confidence: float
                      ) -> dict[str, float] | None:
    """The bootstrap interval of a metric of RANKING_METRIC_NAMES over the resamples `bootstrap_prepared` draws with
    the same seed (the same rows), leaving out those whose answers are all right or all wrong (the metric is undefined
    there); None when fewer than two resamples are left."""
    kernel = _KERNELS[name]
    n = pred.n_samples
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_resamples):
        index = np.sort(rng.integers(0, n, size=n))
        hits = pred.hits[index]
        if hits.any() and not hits.all():
            values.append(kernel(pred.take(index), 0))
    if len(values) < 2:
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return {"low": float(low), "high": float(high), "std": float(np.std(values, ddof=1))}


def bootstrap_auroc_correct(pred: PreparedPredictions, *, n_resamples: int, seed: int, confidence: float
                            ) -> dict[str, float] | None:
    """`bootstrap_ranking` of the AUROC of correctness."""
    return bootstrap_ranking(pred, "auroc-correct", n_resamples=n_resamples, seed=seed, confidence=confidence)


def _risk_at(percent: float) -> Callable[[PreparedPredictions, int], float]:
    def kernel(pred: PreparedPredictions, n_bins: int) -> float:
        curve = risk_coverage_of(pred)
        # Products of a decimal percentage are rounded (65.4 × 1000 is not exactly 65400): a relative 1e-12 margin.
        j = int(np.argmax(curve.accepted * 100.0 >= percent * curve.n_samples * (1.0 - 1e-12)))  # the last one is
        return float(curve.errors[j] / curve.accepted[j])

    return kernel


def _coverage_at(percent: float) -> Callable[[PreparedPredictions, int], float]:
    def kernel(pred: PreparedPredictions, n_bins: int) -> float:
        curve = risk_coverage_of(pred)
        within = np.flatnonzero(curve.errors * 100.0 <= percent * curve.accepted * (1.0 + 1e-12))
        return float(curve.accepted[within[-1]] / curve.n_samples) if within.size else 0.0

    return kernel


_KERNELS: dict[str, Callable[[PreparedPredictions, int], float]] = {
    "aurc": _aurc, "e-aurc": _e_aurc, "augrc": _augrc, "auroc-correct": _auroc_correct, "auprc-errors": _auprc_errors,
}


def parse_selective_name(name: str) -> tuple[str, float] | None:
    """(family, percentage) of a parameterised name — "risk@80" or "risk-at-80" is ("risk", 80.0), "coverage@5"
    ("coverage", 5.0); a trailing "%" allows a percentage below 1 ("coverage@0.5%") — or None when `name` is not
    one. A bad parameter is refused in one line.

    Example:
        >>> from adacal.metrics.selective import parse_selective_name
        >>> parse_selective_name("risk@80"), parse_selective_name("ece-em")
        (('risk', 80.0), None)
    """
    lowered = name.strip().lower().replace("_", "-")
    if lowered in _WHAT:
        raise InputError(f"Expected a percentage after {lowered}@, got {name.strip()!r}: write {_WHAT[lowered][1]}.")
    match = _PARAMETERISED.match(lowered)
    if match is None:
        return None
    family, text = match.group(1), match.group(2).strip()
    percent_sign = text.endswith(("%", "pct"))
    text = text.removesuffix("%").removesuffix("pct").strip()
    if re.fullmatch(r"\d+-\d+", text):  # a report key's "99_5" (snake_case has no dot)
        text = text.replace("-", ".")
    what, example = _WHAT[family]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    low_ok = value > 0.0 if family == "risk" else value >= 0.0
    if not (math.isfinite(value) and low_ok and value <= 100.0):
        interval = "(0, 100]" if family == "risk" else "[0, 100]"
        raise InputError(f"Expected the {what} in {name.strip()!r} to be a percentage in {interval}, got {text!r}: "
                         f"write {example}.")
    if 0.0 < value < 1.0 and not percent_sign:
        raise InputError(f"Expected the {what} in {name.strip()!r} to be a percentage, got {text}, which reads like "
                         f"a fraction: write {example} (or {family}@{text}% for {text} %).")
    return family, value


def selective_name(name: str) -> str | None:
    """The canonical spelling of a selective metric ("risk@80", "aurc"), or None when `name` is none (a bad
    parameter of risk@ / coverage@ is refused)."""
    canonical = name.strip().lower().replace("_", "-")
    if canonical in _KERNELS:
        return canonical
    parsed = parse_selective_name(canonical)
    if parsed is None:
        return None
    family, value = parsed
    shown = f"{value:.15g}"  # every digit given (80, 99.5, 12.3456789), no trailing zeros
    return f"{family}@{shown}" if value >= 1.0 or value == 0.0 else f"{family}@{shown}%"


def higher_is_better(name: str) -> bool:
    """Whether a larger value of this canonical metric name is better: the AUROC of correctness, the AUPRC of errors
    and coverage@R (every other metric of adacal is lower-better)."""
    return name in RANKING_METRIC_NAMES or name.startswith("coverage@")


def selective_kernel(name: str) -> Callable[[PreparedPredictions, int], float] | None:
    """The kernel of a selective metric by its canonical name, or None when `name` is none."""
    if name in _KERNELS:
        return _KERNELS[name]
    parsed = parse_selective_name(name)
    if parsed is None:
        return None
    family, value = parsed
    return _risk_at(value) if family == "risk" else _coverage_at(value)


def selective_display_name(name: str) -> str | None:
    """How tables spell a selective metric ("AURC", "Risk@80", "Coverage@5"), or None when `name` is none."""
    if name in SELECTIVE_DISPLAY_NAMES:
        return SELECTIVE_DISPLAY_NAMES[name]
    if parse_selective_name(name) is None:
        return None
    return name[0].upper() + name[1:]


def selective_key(name: str) -> str:
    """The report key of a canonical selective name: "risk@80" is "risk_at_80" (snake_case, like "fpr_at_95_tpr")."""
    return name.replace("%", "pct").replace(".", "_").replace("@", "_at_").replace("-", "_")


aurc = metric_function(
    _aurc,
    """Area under the risk–coverage curve of the top-1 confidence (Geifman & El-Yaniv 2017; lower is better).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused (every metric has the same signature).

    Returns:
        Σ_j (c_j − c_{j−1}) r_j over the distinct confidences from the highest down (tied samples accepted
        together), a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import aurc
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]  # confidences 0.9 0.8 0.8 0.6 0.5
        >>> round(aurc(probs, [0, 0, 0, 0, 1]), 6)  # 0.2 * 0 + 0.4 * 1/3 + 0.2 * 1/4 + 0.2 * 2/5
        0.263333
    """,
)

e_aurc = metric_function(
    _e_aurc,
    """Excess AURC: the AURC minus that of the oracle ranking of the same answers (Geifman et al. 2019).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused.

    Returns:
        AURC − `oracle_aurc(N, C)` (the exact finite-sample oracle), ≥ 0 up to ties.

    Example:
        >>> from adacal.metrics import e_aurc
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> round(e_aurc(probs, [0, 0, 0, 0, 1]), 6)  # 0.263333 - (1/4 + 2/5) / 5
        0.133333
    """,
)

augrc = metric_function(
    _augrc,
    """Area under the generalized risk–coverage curve (Traub et al. 2024; lower is better).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused.

    Returns:
        The trapezoid area under (0, 0), (c_j, g_j): g = errors accepted / N; a fraction, at most the AURC.

    Example:
        >>> from adacal.metrics import augrc
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> round(augrc(probs, [0, 0, 0, 0, 1]), 6)  # 0.4 * 0.1 + 0.2 * 0.2 + 0.2 * 0.3
        0.14
    """,
)

auroc_correct = metric_function(
    _auroc_correct,
    """AUROC of correctness ranked by the top-1 confidence (right answers positive; ties count one half).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused.

    Returns:
        sklearn's `roc_auc_score(correct, confidence)`; refused when every answer is right, or every one wrong.

    Example:
        >>> from adacal.metrics import auroc_correct
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> auroc_correct(probs, [0, 0, 0, 0, 1])  # right 0.9 0.8 0.6, wrong 0.8 0.5: (2 + 1.5 + 1) / 6
        0.75
    """,
)


auprc_errors = metric_function(
    _auprc_errors,
    """AUPRC of the errors ranked by LOW top-1 confidence: wrong answers positive, the least confident first.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".
        n_bins: unused.

    Returns:
        sklearn's `average_precision_score(wrong, -confidence)` (tied confidences enter together); its chance level
        is the error rate; refused when every answer is right, or every one wrong.

    Example:
        >>> from adacal.metrics import auprc_errors
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> auprc_errors(probs, [0, 0, 0, 0, 1])  # wrong 0.5 and 0.8 (tied with a right one): 1/2 * 1 + 1/2 * 2/4
        0.75
    """,
)

def risk_at_coverage(scores: Any, labels: Any, *, coverage: float, scores_kind: str = "auto") -> float:
    """Selective risk at a coverage (`risk@C`): the error rate among the accepted at the smallest coverage ≥ the one
    asked that a threshold reaches (tied samples are accepted together).

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        coverage: the coverage, a percentage in (0, 100] (80 for 80 %).
        scores_kind: "auto", "logits" or "probs".

    Returns:
        The selective risk, a fraction.

    Example:
        >>> from adacal.metrics.selective import risk_at_coverage
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> risk_at_coverage(probs, [0, 0, 0, 0, 1], coverage=80)  # the top 4: one wrong
        0.25
    """
    kernel = selective_kernel(_named("risk", coverage))
    return kernel(prepare_predictions(scores, labels, scores_kind=scores_kind), 0)  # type: ignore[misc]


def coverage_at_risk(scores: Any, labels: Any, *, risk: float, scores_kind: str = "auto") -> float:
    """The largest coverage whose selective risk is at most `risk` % (`coverage@R`); 0.0 when no threshold's is.

    Args:
        scores: probabilities or logits (N, K), numpy or torch (read as `prepare_predictions` reads them).
        labels: class indices (N,).
        risk: the risk, a percentage in [0, 100] (5 for 5 %).
        scores_kind: "auto", "logits" or "probs".

    Returns:
        The coverage, a fraction.

    Example:
        >>> from adacal.metrics.selective import coverage_at_risk
        >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]
        >>> coverage_at_risk(probs, [0, 0, 0, 0, 1], risk=30)  # the top 4 have risk 1/4
        0.8
    """
    kernel = selective_kernel(_named("coverage", risk))
    return kernel(prepare_predictions(scores, labels, scores_kind=scores_kind), 0)  # type: ignore[misc]


def _named(family: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"Expected the {_WHAT[family][0]} to be a percentage (a number), got {value!r}.")
    return f"{family}@{float(value)!r}%"
