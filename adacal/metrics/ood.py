"""Out-of-distribution scores (entropy, max-prob, energy) and detection metrics (AUROC, AUPR, FPR at 95 % TPR).

Conventions, as in the AdaFocal paper's OOD experiment: every score is an *uncertainty* — higher means more likely
out-of-distribution — and OOD samples are the positive class. So AUROC is the probability that a random OOD sample
scores higher than a random in-distribution one (ties count one half), `aupr_out` is the average precision with OOD
as positive, `aupr_in` the average precision with in-distribution as positive (ranked by −score). All values are
fractions in [0, 1]. AUROC and AUPR use `sklearn.metrics` (imported on first use).

The per-sample scores take what the metrics take: probabilities or logits (N, K), numpy or torch of any float dtype,
told apart as `adacal.metrics.prepare_predictions` does (the per-row rule of docs/inputs.md §2, or `scores_kind=`;
the tolerance on the row sums follows the dtype, so float16 and bfloat16 probabilities are probabilities), and a
binary model's one score per sample, (N,) or (N, 1).

FPR at 95 % TPR (`fpr_at_95_tpr`, see `fpr_at_tpr`), exactly: a threshold t flags every sample with score ≥ t, so
tied scores are flagged together; the candidate thresholds are the distinct scores, giving the points
(TPR = fraction of OOD samples flagged, FPR = fraction of in-distribution samples flagged). adacal reports the FPR at
the highest threshold whose TPR is at least 95 % ("at-least": the detector really catches ≥ 95 % of the OOD samples).
Hendrycks et al.'s reference code (`fpr_and_fdr_at_recall` of the outlier-exposure repository, with OOD as positive
as in its `--out_as_pos` mode) instead takes the point whose TPR is *closest* to 95 % (rule "closest"; on a
floating-point tie the higher TPR), which can be a TPR just below 95 %; the two agree whenever a threshold gives
exactly 95 % or the first TPR at or above 95 % is also the closest. `fpr_at_tpr(..., rule="closest")` reproduces the
reference. Its default mode ranks in-distribution samples as positive (FPR = OOD samples accepted while 95 % of the
in-distribution samples are); that is `fpr_at_tpr(-out_scores, -in_scores)` here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from adacal.arrays import (
    as_logits,
    normalise_probs,
    softmax,
    to_numpy,
)
from adacal.checks import is_number
from adacal.scores_kind import score_matrix_and_kind
from adacal.errors import InputError
from adacal.metrics.prepared import row_top
from adacal.registry import Registry


def _probabilities(scores: Any, name: str = "scores", scores_kind: str = "auto") -> np.ndarray:
    """Probabilities from logits (softmax) or from probabilities (rows within rounding of 1 as given, others over
    their sums), as `adacal.metrics.prepare_predictions` computes them."""
    array, probabilities = score_matrix_and_kind(scores, name=name, scores_kind=scores_kind)
    return normalise_probs(array) if probabilities else softmax(array)


def entropy(probs: Any) -> np.ndarray:
    """Shannon entropy of each row of probabilities, in nats; 0 · log 0 counts as 0.

    Args:
        probs: probabilities (N, K), numpy or torch (rows in [0, 1] summing to 1; anything else is refused).

    Returns:
        A float64 array (N,).

    Example:
        >>> from adacal.metrics import entropy
        >>> entropy([[0.5, 0.5], [1.0, 0.0]]).round(4).tolist()  # ln 2, then a certain row
        [0.6931, 0.0]
    """
    probs, probabilities = score_matrix_and_kind(probs, name="probs")
    if not probabilities:
        raise InputError("Expected probs to be probabilities (entries in [0, 1], rows summing to 1), got other values.")
    return _entropy(normalise_probs(probs))


def _entropy(probs: np.ndarray) -> np.ndarray:
    logs = np.log(np.where(probs > 0, probs, 1.0))
    return 0.0 - np.einsum("ij,ij->i", probs, logs)  # 0.0 - x: a certain row gives 0.0, not -0.0


def entropy_score(scores: Any, *, scores_kind: str = "auto") -> np.ndarray:
    """Entropy of the softmax of logits (or of probabilities given directly): the AdaFocal paper's OOD score.

    Args:
        scores: logits or probabilities (N, K), numpy or torch.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".

    Returns:
        A float64 array (N,) of entropies in nats; higher means more likely out-of-distribution.

    Example:
        >>> from adacal.metrics import entropy_score
        >>> entropy_score([[0.0, 0.0], [0.0, 100.0]]).round(4).tolist()  # uniform: ln 2; all but certain: 0
        [0.6931, 0.0]
    """
    return _entropy(_probabilities(scores, scores_kind=scores_kind))


def max_prob_score(scores: Any, *, scores_kind: str = "auto") -> np.ndarray:
    """1 − the top probability (Hendrycks & Gimpel 2017's baseline, turned so that higher = more OOD).

    Args:
        scores: logits or probabilities (N, K), numpy or torch.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".

    Returns:
        A float64 array (N,) in [0, 1 − 1/K].

    Example:
        >>> from adacal.metrics import max_prob_score
        >>> max_prob_score([[0.9, 0.1], [0.5, 0.5]]).round(4).tolist()
        [0.1, 0.5]
    """
    return 1.0 - row_top(_probabilities(scores, scores_kind=scores_kind))[1]


def energy_score(logits: Any, *, scores_kind: str = "auto") -> np.ndarray:
    """Energy −logsumexp(logits) (Liu et al. 2020; higher = more OOD).

    Args:
        logits: logits (N, K), numpy or torch; scores read as probabilities are refused.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`) or "logits" ("probs" is refused).

    Returns:
        A float64 array (N,).

    Example:
        >>> from adacal.metrics import energy_score
        >>> energy_score([[0.0, 0.0], [3.0, 0.0]]).round(4).tolist()  # −ln 2, −ln(e³ + 1)
        [-0.6931, -3.0486]
    """
    logits, probabilities = score_matrix_and_kind(logits, name="logits", scores_kind=scores_kind)
    if probabilities:
        raise InputError(
            "Expected logits for the energy score, but the scores look like probabilities "
            "(rows in [0, 1] summing to 1)."
        )
    top = logits.max(axis=1)
    with np.errstate(over="ignore"):  # logits more than float64's range apart: -inf, whose exp is 0
        shifted = logits - top[:, None]
    return -(top + np.log(np.exp(shifted).sum(axis=1)))


OOD_SCORES: Registry[np.ndarray] = Registry("OOD score")
OOD_SCORES.register("entropy")(entropy_score)
OOD_SCORES.register("max-prob")(max_prob_score)
OOD_SCORES.register("energy")(energy_score)


def ood_scores(scores: Any, method: str = "entropy", *, temperature: float | None = None,
               scores_kind: str = "auto") -> np.ndarray:
    """Per-sample OOD scores by name; higher means more likely out-of-distribution.

    Args:
        scores: logits or probabilities (N, K), numpy or torch.
        method: "entropy" (default), "max-prob" or "energy" (energy needs logits).
        temperature: a T > 0 to score logits / T instead (probabilities are then read as log-probabilities), or None.
        scores_kind: "auto" (the per-row rule of `prepare_predictions`), "logits" or "probs".

    Returns:
        A float64 array (N,).

    Example:
        >>> from adacal.metrics import ood_scores
        >>> ood_scores([[0.0, 0.0], [3.0, 0.0]], "max-prob").round(4).tolist()  # 1 − softmax's top probability
        [0.5, 0.0474]
    """
    # Probabilities with a temperature are read as log-probabilities (softmax(log p / T) = softmax(logits / T), so
    # entropy and max-prob are those of the logits); energy, which the per-row constant changes, then needs logits.
    if not isinstance(method, str):
        raise InputError(f"Expected method to be the name of an OOD score ({', '.join(OOD_SCORES.names())}), "
                         f"got {method!r}.")
    score = OOD_SCORES.get(method)
    if temperature is not None:
        if not is_number(temperature) or not 0 < temperature < np.inf:
            raise InputError(f"Expected temperature to be a positive number, got {temperature!r}.")
        scores, probabilities = score_matrix_and_kind(scores, name="logits", scores_kind=scores_kind)
        if probabilities and method == "energy":
            raise InputError("Expected logits for the energy score with a temperature, but the scores look like "
                             "probabilities (rows in [0, 1] summing to 1): log p differs from the logits by a "
                             "constant per row, which energy does not ignore.")
        scores, scores_kind = as_logits(scores, probabilities) / float(temperature), "logits"
    return np.asarray(score(scores, scores_kind=scores_kind), dtype=np.float64)


def _check_score_vector(values: Any, name: str) -> np.ndarray:
    array = to_numpy(values)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise InputError(f"Expected {name} to be numeric, got dtype {array.dtype}.")
    array = np.asarray(array, dtype=np.float64)
    if array.ndim != 1:
        raise InputError(f"Expected {name} to be 1-D (one score per sample), got shape {array.shape}.")
    if array.size == 0:
        raise InputError(f"Expected {name} to hold at least one score, got none.")
    if not np.isfinite(array).all():
        raise InputError(f"Expected {name} to be finite, found {int((~np.isfinite(array)).sum())} NaN or Inf value(s).")
    return array


def _labelled(in_scores: Any, out_scores: Any) -> tuple[np.ndarray, np.ndarray]:
    inside = _check_score_vector(in_scores, "in-distribution scores")
    outside = _check_score_vector(out_scores, "OOD scores")
    is_ood = np.concatenate((np.zeros(inside.size, dtype=np.int64), np.ones(outside.size, dtype=np.int64)))
    return is_ood, np.concatenate((inside, outside))


FPR_RULES = ("at-least", "closest")


def _fpr_at_tpr(is_ood: np.ndarray, scores: np.ndarray, tpr: float, rule: str) -> float:
    order = np.argsort(-scores, kind="stable")
    ranked, positive = scores[order], is_ood[order]
    # Last sample of each distinct score (compared, not subtracted: scores far apart would overflow a difference).
    ends = np.r_[np.flatnonzero(ranked[1:] != ranked[:-1]), ranked.size - 1]
    true_pos = np.cumsum(positive)[ends]
    false_pos = ends + 1 - true_pos
    n_pos, n_neg = int(is_ood.sum()), int(is_ood.size - is_ood.sum())
    recall = true_pos / n_pos
    if rule == "at-least":
        point = int(np.searchsorted(recall, tpr, side="left"))
    else:
        # Points up to the first reaching full recall; among equally close ones the higher TPR (the later point).
        last = int(np.searchsorted(true_pos, n_pos, side="left"))
        distance = np.abs(recall[: last + 1] - tpr)
        point = last - int(np.argmin(distance[::-1]))
    return float(false_pos[point] / n_neg)


def fpr_at_tpr(in_scores: Any, out_scores: Any, *, tpr: float = 0.95, rule: str = "at-least") -> float:
    """The fraction of in-distribution samples flagged (score ≥ threshold) at the threshold that reaches `tpr`.

    Args:
        in_scores: 1-D uncertainty scores of in-distribution samples (higher = more OOD).
        out_scores: 1-D uncertainty scores of OOD samples (the positives).
        tpr: the OOD recall to reach, in (0, 1] (default 0.95).
        rule: "at-least" (default) takes the highest threshold flagging at least `tpr` of the OOD samples;
            "closest" the one whose OOD recall is closest to `tpr`, as Hendrycks et al.'s code (see the module doc).

    Returns:
        The false-positive rate, a fraction in [0, 1].

    Example:
        >>> from adacal.metrics import fpr_at_tpr
        >>> fpr_at_tpr([0.1, 0.2, 0.3, 0.9], [0.4, 0.8])  # threshold 0.4 flags both OOD samples and 1 of 4 others
        0.25
    """
    if rule not in FPR_RULES:
        raise InputError(f"Expected rule to be one of {', '.join(FPR_RULES)}, got {rule!r}.")
    if not is_number(tpr) or not 0.0 < tpr <= 1.0:
        raise InputError(f"Expected tpr to be a number in (0, 1], got {tpr!r}.")
    if isinstance(tpr, np.floating) and np.finfo(tpr.dtype).bits < 64:
        # The decimal a float32 level stands for (np.float32(0.85) is 0.8500000238...; as such it would skip a point
        # with TPR exactly 0.85): its shortest repr, which reads back as the same float32.
        tpr = float(str(tpr))
    is_ood, scores = _labelled(in_scores, out_scores)
    return _fpr_at_tpr(is_ood, scores, float(tpr), rule)


def ood_metrics(in_scores: Any, out_scores: Any) -> dict[str, float]:
    """AUROC, AUPR and FPR at 95 % TPR of OOD detection by uncertainty scores, OOD samples being the positives.

    Args:
        in_scores: 1-D uncertainty scores of in-distribution samples (higher = more OOD).
        out_scores: 1-D uncertainty scores of OOD samples.

    Returns:
        {"auroc", "aupr_in", "aupr_out", "fpr_at_95_tpr"}, fractions in [0, 1].

    Example:
        >>> from adacal.metrics import ood_metrics
        >>> metrics = ood_metrics([0.1, 0.2, 0.3, 0.9], [0.4, 0.8])
        >>> metrics["auroc"], metrics["fpr_at_95_tpr"]  # each OOD score is above 3 of the 4 others
        (0.75, 0.25)
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    is_ood, scores = _labelled(in_scores, out_scores)
    with np.errstate(over="ignore"):  # sklearn subtracts neighbouring scores: finite ones far apart give ±inf, != 0
        return {
            "auroc": float(roc_auc_score(is_ood, scores)),
            "aupr_in": float(average_precision_score(1 - is_ood, -scores)),
            "aupr_out": float(average_precision_score(is_ood, scores)),
            "fpr_at_95_tpr": _fpr_at_tpr(is_ood, scores, 0.95, "at-least"),
        }


class RocCurve(NamedTuple):
    """ROC points with OOD as positive, as `roc_curve_points` returns them.

    Unpacks as `fpr, tpr, thresholds = curve`; `curve["fpr"]` and `curve.to_dict()` also work.

    Args:
        fpr: false-positive rate (in-distribution samples flagged) at each threshold.
        tpr: true-positive rate (OOD samples flagged) at each threshold.
        thresholds: the decreasing score thresholds.

    Example:
        >>> from adacal.metrics import roc_curve_points
        >>> fpr, tpr, thresholds = roc_curve_points([0.1, 0.2, 0.3, 0.9], [0.4, 0.8])
        >>> tpr.tolist()
        [0.0, 0.0, 1.0, 1.0]
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            return getattr(self, key)
        return tuple.__getitem__(self, key)

    def to_dict(self) -> dict[str, list[float]]:
        """{"fpr": [...], "tpr": [...]} as plain floats (the "roc" entry of ood.json)."""
        return {"fpr": self.fpr.tolist(), "tpr": self.tpr.tolist()}


def roc_curve_points(in_scores: Any, out_scores: Any) -> RocCurve:
    """The ROC curve of OOD detection by uncertainty scores (sklearn.metrics.roc_curve, collinear points dropped).

    Args:
        in_scores: 1-D uncertainty scores of in-distribution samples (higher = more OOD).
        out_scores: 1-D uncertainty scores of OOD samples (the positives).

    Returns:
        A `RocCurve` (fpr, tpr, thresholds).

    Example:
        >>> from adacal.metrics import roc_curve_points
        >>> curve = roc_curve_points([0.1, 0.2, 0.3, 0.9], [0.4, 0.8])
        >>> curve.fpr.tolist(), curve.tpr.tolist()
        ([0.0, 0.25, 0.25, 1.0], [0.0, 0.0, 1.0, 1.0])
    """
    from sklearn.metrics import roc_curve

    is_ood, scores = _labelled(in_scores, out_scores)
    with np.errstate(over="ignore"):  # as in ood_metrics
        fpr, tpr, thresholds = roc_curve(is_ood, scores)
    return RocCurve(np.asarray(fpr, dtype=np.float64), np.asarray(tpr, dtype=np.float64), np.asarray(thresholds))
