"""Class-conditional top-label calibration (Gupta & Ramdas 2022, "Top-label calibration and multiclass-to-binary
reductions", ICLR): one map of the top-class confidence per predicted class, as MAPIE's `TopLabelCalibrator` fits
it.

For each class c, the map is fitted on the validation rows whose predicted class (argmax) is c, on the pairs
(top-class confidence, [label = c]); a row is mapped by the map of its own predicted class:
- "top-label-histogram": histogram binning of those rows (equal-mass bins, the `histogram` calibrator's map);
- "top-label-isotonic": isotonic regression of those rows (the `isotonic` calibrator's map; MAPIE's "isotonic").
Fallback: a class predicted by fewer than `min_rows` validation rows (default 20; never predicted included) gets the
pooled map, fitted on all validation rows as `histogram` / `isotonic` do. MAPIE fits a map on any number of rows and
leaves a class it never saw unchanged; with min_rows = 1 the maps are MAPIE's wherever it fits one.
As the other top-label calibrators, the new top confidence replaces the old and `complete_top_label` rebuilds the row
(the other classes share the rest in proportion, predicted class kept, rows summing to 1); MAPIE leaves them NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.arrays import softmax
from adacal.calibrators.base import CALIBRATORS, TopLabelCalibrator, check_int, complete_top_label
from adacal.calibrators.histogram import HistogramBinning
from adacal.calibrators.isotonic import IsotonicCalibration
from adacal.conventions import DEFAULT_N_BINS
from adacal.metrics.prepared import row_top

DEFAULT_MIN_ROWS = 20


class _ClassConditional(TopLabelCalibrator):
    """Shared fit / transform: `pooled_` (the map on all rows) and `class_maps_` (one map per class, None where the
    pooled map stands in), each an unfitted inner top-label calibrator whose confidence map is set."""

    def _inner(self) -> TopLabelCalibrator:
        raise NotImplementedError

    def check_options(self) -> None:
        check_int("min_rows", self.min_rows, minimum=1)

    def _fit(self, logits: np.ndarray, labels: np.ndarray) -> None:
        predicted, confidences = row_top(softmax(logits))
        correct = (predicted == labels).astype(np.float64)
        self.pooled_ = self._inner()
        self.pooled_._fit_confidences(confidences, correct)
        self.class_maps_: list[TopLabelCalibrator | None] = []
        self.class_counts_ = np.bincount(predicted, minlength=logits.shape[1])
        for c in range(logits.shape[1]):
            rows = predicted == c
            if self.class_counts_[c] < self.min_rows:
                self.class_maps_.append(None)
                continue
            inner = self._inner()
            inner._fit_confidences(confidences[rows], correct[rows])
            self.class_maps_.append(inner)

    def _map_by_class(self, predicted: np.ndarray, confidences: np.ndarray) -> np.ndarray:
        out = self.pooled_._map_confidences(confidences)
        for c, inner in enumerate(self.class_maps_):
            rows = predicted == c
            if inner is not None and rows.any():
                out[rows] = inner._map_confidences(confidences[rows])
        return out

    def _transform(self, logits: np.ndarray) -> np.ndarray:
        probs = softmax(logits)
        predicted, confidences = row_top(probs)
        return complete_top_label(probs, self._map_by_class(predicted, confidences), top_index=predicted)

    def calibrate_confidences(self, confidences: Any, predicted: Any = None) -> np.ndarray:
        """The learned maps applied to top-class confidences of rows predicting `predicted` (None: the pooled map).

        Args:
            confidences: top-class confidences (N,).
            predicted: each row's predicted class (N,), or None.

        Returns:
            The calibrated confidences (N,), clipped to [0, 1].
        """
        self._check_fitted()
        values = np.asarray(confidences, dtype=np.float64).reshape(-1)
        if predicted is None:
            return np.clip(self.pooled_._map_confidences(values), 0.0, 1.0)
        classes = np.asarray(predicted).reshape(-1).astype(np.int64)
        return np.clip(self._map_by_class(classes, values), 0.0, 1.0)

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        own = sum(inner is not None for inner in self.class_maps_)
        return {"class_maps": int(own), "pooled_classes": int(len(self.class_maps_) - own),
                "min_rows": int(self.min_rows)}

    def _get_params(self) -> dict[str, Any]:
        return {
            "pooled": self.pooled_._get_params(),
            "classes": [None if inner is None else inner._get_params() for inner in self.class_maps_],
            "class_counts": self.class_counts_.astype(int).tolist(),
        }

    def _set_params(self, params: dict[str, Any]) -> None:
        classes, counts = params["classes"], params["class_counts"]
        if not isinstance(classes, list) or len(classes) < 2:
            raise ValueError("'classes' must be a list with one entry (params or null) per class")
        if (not isinstance(counts, list) or len(counts) != len(classes)
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
            raise ValueError("'class_counts' must be a list of non-negative integers, one per class")
        pooled = self._inner()
        pooled._set_params(params["pooled"])
        maps: list[TopLabelCalibrator | None] = []
        for entry in classes:
            if entry is None:
                maps.append(None)
                continue
            if not isinstance(entry, dict):
                raise ValueError("each entry of 'classes' must be an object of params or null")
            inner = self._inner()
            inner._set_params(entry)
            maps.append(inner)
        self.pooled_, self.class_maps_ = pooled, maps
        self.class_counts_ = np.asarray(counts, dtype=np.int64)

    def _params_num_classes(self) -> int:
        return len(self.class_maps_)


@CALIBRATORS.register("top-label-histogram")
class TopLabelHistogramBinning(_ClassConditional):
    """Class-conditional top-label histogram binning (Gupta & Ramdas 2022): per predicted class, a top-class
    confidence becomes the validation accuracy of its equal-mass bin among the rows predicting that class.

    Args:
        n_bins: equal-mass bins per class (default 15).
        min_rows: a class predicted by fewer validation rows uses the map pooled over all rows (default 20).

    Example:
        >>> import numpy as np
        >>> logits = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]])
        >>> from adacal.calibrators import TopLabelHistogramBinning
        >>> calibrator = TopLabelHistogramBinning(n_bins=1, min_rows=2).fit(logits, [0, 1, 1, 1])
        >>> calibrator.calibrate_confidences([0.9, 0.9], predicted=[0, 1]).tolist()  # class 0: 1 of 2 right
        [0.5, 1.0]
    """

    name = "top-label-histogram"

    def __init__(self, *, n_bins: int = DEFAULT_N_BINS, min_rows: int = DEFAULT_MIN_ROWS) -> None:
        self.n_bins = n_bins
        self.min_rows = min_rows

    def check_options(self) -> None:
        check_int("n_bins", self.n_bins, minimum=1)
        super().check_options()

    def _inner(self) -> TopLabelCalibrator:
        return HistogramBinning(n_bins=self.n_bins)


@CALIBRATORS.register("top-label-isotonic")
class TopLabelIsotonicCalibration(_ClassConditional):
    """Class-conditional top-label isotonic regression (Gupta & Ramdas 2022; MAPIE's `TopLabelCalibrator` with
    calibrator="isotonic"): per predicted class, isotonic regression of correctness on the top-class confidence.

    Args:
        min_rows: a class predicted by fewer validation rows uses the map pooled over all rows (default 20).

    Example:
        >>> import numpy as np
        >>> logits = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]])
        >>> from adacal.calibrators import TopLabelIsotonicCalibration
        >>> calibrator = TopLabelIsotonicCalibration(min_rows=2).fit(logits, [0, 1, 1, 1])
        >>> calibrator.calibrate_confidences([0.95, 0.88], predicted=[0, 1]).round(2).tolist()  # class 0: 0.88 wrong
        [0.96, 1.0]
    """

    name = "top-label-isotonic"

    def __init__(self, *, min_rows: int = DEFAULT_MIN_ROWS) -> None:
        self.min_rows = min_rows

    def _inner(self) -> TopLabelCalibrator:
        return IsotonicCalibration()
