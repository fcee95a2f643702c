"""The identity calibrator, "uncalibrated": the model's own probabilities, with the calibrator interface.

It is the baseline every calibrator must beat: `adacal calibrate --method all` (and `compare_calibrators` whenever it
chooses between several methods) always has it as a candidate, so that the choice can be "change nothing", and a
saved "uncalibrated" calibrator applies nothing (`evaluate --calibrator` then reports the model as it is).

`fit(scores, labels, *, scores_kind="auto")` decides once, on the fitting scores, whether they are logits or
probabilities (`adacal.scores_kind.decide_scores_kind`) and records it as `fitted_on_`; `transform` applies that kind
to each row alone — softmax of a logit row, a probability row as it is (divided by its sum where it sums to 1 only
within rounding) — so a row's output never depends on the rows beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import check_labels, check_scores, one_score_per_sample, softmax
from adacal.calibrators.base import CALIBRATORS, INPUT_KINDS, Calibrator
from adacal.errors import InputError

# The base class records and checks `fitted_on` in its own words (INPUT_KINDS); these are the same two kinds.
_SAME_KIND = {"probs": "probabilities", "probabilities": "probs", "logits": "logits"}


def _is_probs(kind: str) -> bool:
    return kind in ("probs", "probabilities")


@CALIBRATORS.register("uncalibrated")
class IdentityCalibration(Calibrator):
    """The identity map ("uncalibrated"): probabilities as the model gives them; no parameters.

    Learns `fitted_on_` ("probs" or "logits", decided once in `fit`) and `num_classes_`.

    Example:
        >>> import numpy as np
        >>> from adacal.calibrators import IdentityCalibration
        >>> calibrator = IdentityCalibration().fit(np.array([[2.0, 0.0], [-1.0, 1.0]]), [0, 1])
        >>> calibrator.fitted_on_, calibrator.transform([[0.3, 0.7]]).round(4).tolist()  # a logit row, alone
        ('logits', [[0.4013, 0.5987]])
    """

    name = "uncalibrated"

    def __init__(self) -> None:
        pass

    def fit(self, logits: Any, labels: Any, *, scores_kind: str = "auto") -> IdentityCalibration:
        """Record the kind of the scores and their number of classes (nothing else is learned).

        Args:
            logits: validation scores (N, K), or a binary model's one score per sample.
            labels: validation class indices (N,).
            scores_kind: "auto" (the per-row rule of docs/inputs.md), "logits" or "probs".

        Returns:
            self, fitted.
        """
        from adacal.scores_kind import decide_scores_kind

        self.check_options()
        kind = decide_scores_kind(logits, scores_kind=scores_kind, name="logits")
        scores = _read(logits, kind)
        check_labels(labels, n=scores.shape[0], num_classes=scores.shape[1])
        self.num_classes_ = int(scores.shape[1])
        self.fitted_on_ = kind
        return self

    def transform(self, logits: Any, *, scores_kind: str | None = None) -> np.ndarray:
        """The probabilities of each row, read as the kind fitted on (or as `scores_kind` says).

        Args:
            logits: scores (N, K) with the K of `fit`, of the kind it was fitted on.
            scores_kind: None (the kind fitted on, `fitted_on_`), or "logits" / "probs" for scores of a kind known
                to the caller (a file whose reading decided it): the identity maps either kind.

        Returns:
            float64 probabilities (N, K), rows summing to 1. Using it before `fit` raises NotFittedError.
        """
        self._check_fitted()
        if scores_kind is not None and scores_kind not in ("logits", "probs"):
            raise InputError(f"Expected scores_kind to be None, logits or probs, got {scores_kind!r}.")
        kind = scores_kind or ("probs" if _is_probs(self.fitted_on_) else "logits")
        try:
            scores = _read(logits, kind)
        except InputError as exc:
            if kind == "logits":
                raise
            raise type(exc)(f"This {self.name} calibrator was fitted on probabilities, so it reads every row as one: "
                            f"{exc}") from None
        if scores.shape[1] != self.num_classes_:
            raise InputError(f"Expected logits with {self.num_classes_} classes (as in fit), got shape {scores.shape}.")
        return scores if kind == "probs" else softmax(scores)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if data["fitted_on"] not in INPUT_KINDS:  # saved in the words the loader checks
            data["fitted_on"] = _SAME_KIND[data["fitted_on"]]
        return data

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        """Nothing to learn."""

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        return softmax(logits)

    def _get_params(self) -> dict[str, Any]:
        return {}

    def _set_params(self, params: dict[str, Any]) -> None:
        if params:
            raise ValueError(f"the uncalibrated (identity) calibrator has no params, got {sorted(params)}")


def _read(values: Any, kind: str) -> np.ndarray:
    """float64 (N, K) scores read as `kind` row by row: a binary model's one score per sample as two columns
    ([1 − p, p] or [0, s]); probability rows checked and divided by their sums where needed; logits as they are."""
    from adacal.interpretation.kind import read_binary_kind, read_matrix_kind

    reader = read_binary_kind if one_score_per_sample(values) else read_matrix_kind
    return check_scores(reader(values, name="logits", kind=kind).scores, name="logits")
