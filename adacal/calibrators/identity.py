"""The identity calibrator, "uncalibrated": the model's own probabilities, with the calibrator interface.

It is the baseline every calibrator must beat: `adacal calibrate --method all` (and `compare_calibrators` whenever it
chooses between several methods) always has it as a candidate, so that the choice can be "change nothing", and a
saved "uncalibrated" calibrator applies nothing (`evaluate --calibrator` then reports the model as it is).

Like every calibrator (`adacal.calibrators.base.Calibrator`), `fit(scores, labels, *, scores_kind="auto")` decides
once whether the scores are logits or probabilities and records it as `fitted_on_`; `transform` reads each row as that
kind alone — softmax of a logit row, a probability row as it is (up to rounding) — so a row's output never depends on
the rows beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import softmax
from adacal.calibrators.base import CALIBRATORS, Calibrator


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

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        """Nothing to learn."""

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        # The base class hands probabilities over as their log: softmax gives them back (up to rounding).
        return softmax(logits)

    def _get_params(self) -> dict[str, Any]:
        return {}

    def _set_params(self, params: dict[str, Any]) -> None:
        if params:
            raise ValueError(f"the uncalibrated (identity) calibrator has no params, got {sorted(params)}")
