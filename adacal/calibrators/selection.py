"""How `calibrate --method all` chooses between cross-validated calibrators: the lowest mean CV figure (NLL by
default), ties to the simpler method, a calibrator worse than none (in CV NLL) never chosen; and how noisy ECE-EM is
on a small validation set (`ece_noise`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adacal.errors import InputError

# The identity calibrator: a candidate whenever several methods are compared, and the reference a selection by another
# metric than NLL may not fall below (in CV NLL).
BASELINE = "uncalibrated"
# Ties in the selection go to the earlier method: fewest fitted parameters first (identity 0, temperature 1, Platt 2
# (binary; 2K one-vs-rest), ETS 3, beta 3 (3K), vector scaling 2K, the spline's knots, scaling-binning's 2 + bins,
# histogram's bins, isotonic's steps (up to N), the class-conditional maps' K times as many, Dirichlet K(K + 1) with
# regularisation, matrix scaling K(K + 1) without).
SIMPLICITY_ORDER = ("uncalibrated", "temperature", "platt", "ets", "beta", "vector-scaling", "spline",
                    "scaling-binning", "histogram", "isotonic", "top-label-histogram", "top-label-isotonic",
                    "dirichlet", "matrix-scaling")
# Two CV figures this close (relative to the larger of 1 and the lowest) are a tie.
TIE_TOLERANCE = 1e-9
# Validation sets smaller than this get the expected ECE-EM of a perfectly calibrated model at their size (`ece_noise`).
SMALL_VALIDATION = 300
NOISE_SIMULATIONS = 200


def finite_or_inf(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else math.inf


def simplicity_rank(name: str) -> int:
    """Where a method stands in SIMPLICITY_ORDER (fewest parameters first); methods not listed come after all."""
    return SIMPLICITY_ORDER.index(name) if name in SIMPLICITY_ORDER else len(SIMPLICITY_ORDER)


def _tied(value: float, best: float) -> bool:
    return value <= best + TIE_TOLERANCE * max(1.0, abs(best))


def choose_calibrator(
    cv_means: dict[str, dict[str, float] | None], *, metric: str, folds: int, baseline: str | None = BASELINE
) -> dict[str, Any]:
    """The choice between cross-validated calibrators, with the reason in words.

    The lowest mean CV `metric` wins; ties (within 1e-9, relative) go to the simpler method (SIMPLICITY_ORDER). With a
    selection metric other than NLL, a calibrator whose CV NLL is worse than the baseline's (the identity,
    "uncalibrated") is skipped, and said so: a proper scoring rule vetoes a calibrator that makes the probabilities
    worse than none, however its ECE looks. Methods with no CV figure (a fold that failed) are never chosen.

    Args:
        cv_means: {method: {report key: mean over the folds} or None when it failed}; "nll" always among the keys.
        metric: the selection metric's report key ("nll", "ece_em", ...).
        folds: the number of folds (for the message).
        baseline: the identity's name, or None when it is not a candidate.

    Returns:
        {"best", "order" (best first, then by CV metric), "skipped" ({method: why}), "reason" (a sentence)}.

    Example:
        >>> from adacal.calibrators.selection import choose_calibrator
        >>> means = {"uncalibrated": {"nll": 0.245, "ece_em": 0.05}, "temperature": {"nll": 0.231, "ece_em": 0.03},
        ...          "isotonic": {"nll": 0.293, "ece_em": 0.01}}
        >>> choose_calibrator(means, metric="nll", folds=5)["reason"]
        'lowest 5-fold CV NLL (0.231 vs uncalibrated 0.245)'
        >>> choice = choose_calibrator(means, metric="ece_em", folds=5)
        >>> choice["best"], choice["skipped"]["isotonic"]
        ('temperature', 'CV NLL 0.293 is worse than uncalibrated 0.245')
    """
    from adacal.metrics import display_name

    scored = {name: means for name, means in cv_means.items() if means is not None and math.isfinite(means[metric])}
    if not scored:
        raise InputError(f"Expected at least one calibrator to fit on every validation fold, but none did: "
                         f"{sorted(cv_means)} all failed.")
    skipped: dict[str, str] = {}
    reference = scored.get(baseline) if baseline is not None else None
    if reference is not None and metric != "nll":
        for name, means in scored.items():
            if name != baseline and not _tied(means["nll"], reference["nll"]):
                skipped[name] = (f"CV NLL {_figure('nll', means['nll'])} is worse than {baseline} "
                                 f"{_figure('nll', reference['nll'])}")
    eligible = {name: means for name, means in scored.items() if name not in skipped}
    lowest = min(means[metric] for means in eligible.values())
    best = min((name for name, means in eligible.items() if _tied(means[metric], lowest)),
               key=lambda name: (simplicity_rank(name), name))
    rest = sorted((name for name in cv_means if name != best),
                  key=lambda name: (finite_or_inf((cv_means[name] or {}).get(metric)), simplicity_rank(name), name))
    label = f"{folds}-fold CV {display_name(metric)}"
    value = _figure(metric, eligible[best][metric])
    others = sorted((name for name in eligible if name != best),
                    key=lambda name: (eligible[name][metric], simplicity_rank(name), name))
    if best == baseline:
        runner_up = f"; next: {others[0]} {_figure(metric, eligible[others[0]][metric])}" if others else ""
        tie = any(_tied(eligible[name][metric], lowest) for name in others)
        reason = (f"{'no calibrator has a lower' if not tie else 'tied for the lowest'} {label} "
                  f"({baseline} {value}{runner_up}); the simpler is kept")
    else:
        against = (f" vs {baseline} {_figure(metric, reference[metric])}" if reference is not None
                   else f" vs {others[0]} {_figure(metric, eligible[others[0]][metric])}" if others else "")
        reason = f"lowest {label} ({value}{against})"
        if any(_tied(eligible[name][metric], lowest) for name in others):
            reason += ", tied with a more complex method; the simpler is kept"
    passed_over = [name for name in skipped if scored[name][metric] < eligible[best][metric]]
    if passed_over:
        shown = sorted(passed_over, key=lambda name: scored[name][metric])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        reason += (f"; passed over for a CV NLL worse than {baseline}'s: "
                   + ", ".join(f"{name} ({display_name(metric)} {_figure(metric, scored[name][metric])})"
                               for name in shown[:3]) + more)
    return {"best": best, "order": [best, *rest], "skipped": skipped, "reason": reason}


def _figure(key: str, value: float) -> str:
    """A metric as tables show it: fractions in % with two decimals, NLL and Brier with three."""
    from adacal.metrics.calibration import FRACTION_METRICS

    if key.replace("_", "-") in FRACTION_METRICS:
        return f"{100.0 * value:.2f}%"
    return f"{value:.3f}"


def ece_noise(
    probs: np.ndarray, *, n_bins: int, fold_size: int | None = None, simulations: int = NOISE_SIMULATIONS,
    seed: int = 0,
) -> dict[str, Any]:
    """How large ECE-EM is by chance alone at this sample size: the mean ECE-EM of a perfectly calibrated model with
    these top-1 confidences, each sample's correctness drawn as Bernoulli(its confidence), over `simulations` seeded
    draws — on all the samples and, with `fold_size`, on that many of them drawn without replacement (one held-out
    fold of the cross-validation).

    Args:
        probs: probabilities (N, K), e.g. the uncalibrated validation predictions.
        n_bins: equal-mass bins of the ECE.
        fold_size: the held-out fold's size, or None.
        simulations: draws (default 200).
        seed: seed of the draws.

    Returns:
        {"n", "n_bins", "simulations", "seed", "expected_ece_em", "fold_size", "expected_fold_ece_em"} (the fold
        figures None without `fold_size`).

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators.selection import ece_noise
        >>> probs = np.tile([[0.8, 0.2]], (100, 1))
        >>> noise = ece_noise(probs, n_bins=15, simulations=50)
        >>> 0.0 < noise["expected_ece_em"] < 0.2, noise["n"]
        (True, 100)
    """
    from adacal.metrics.binning import top1_ece

    confidences = np.asarray(probs, dtype=np.float64).max(axis=1)
    rng = np.random.default_rng(seed)

    def expected(size: int) -> float:
        values = []
        for _ in range(simulations):
            drawn = confidences if size == confidences.size else rng.choice(confidences, size, replace=False)
            correct = (rng.random(size) < drawn).astype(np.float64)
            values.append(top1_ece(drawn, correct, n_bins=n_bins, binning="equal-mass"))
        return float(np.mean(values))

    return {"n": int(confidences.size), "n_bins": n_bins, "simulations": simulations, "seed": seed,
            "expected_ece_em": expected(confidences.size), "fold_size": fold_size,
            "expected_fold_ece_em": expected(fold_size) if fold_size else None}
