"""Histogram binning of the top-class confidence (Zadrozny & Elkan 2001), with equal-mass bins.

The validation top-class confidences are split into `n_bins` equal-mass bins (adacal.metrics.binning, the shared
edge convention); a new confidence is replaced by the validation accuracy of its bin. A bin left empty by tied
confidences (zero width) maps to its midpoint. The full row is rebuilt by `complete_top_label` (predicted class
kept, rows sum to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adacal.calibrators.base import CALIBRATORS, TopLabelCalibrator, check_int, float_array
from adacal.conventions import DEFAULT_N_BINS
from adacal.metrics.binning import assign_bins, bin_statistics, equal_mass_edges


@CALIBRATORS.register("histogram")
class HistogramBinning(TopLabelCalibrator):
    """Histogram binning (Zadrozny & Elkan 2001): a top-class confidence becomes the validation accuracy of its
    equal-mass bin. Learns `edges_`, `bin_values_` and `bin_counts_`.

    Args:
        n_bins: the number of equal-mass bins (default 15).

    Example:
        >>> import numpy as np
        >>> logits, labels = np.array([[3.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 3.0]]), np.array([0, 1, 1, 1])
        >>> from adacal.calibrators import HistogramBinning
        >>> HistogramBinning(n_bins=2).fit(logits, labels).bin_values_.tolist()  # 0.88: 1 of 2 right, 0.95: 2 of 2
        [0.5, 1.0]
    """

    name = "histogram"

    def __init__(self, *, n_bins: int = DEFAULT_N_BINS) -> None:
        self.n_bins = n_bins

    def check_options(self) -> None:
        check_int("n_bins", self.n_bins, minimum=1)

    def _fit_confidences(self, confidences: np.ndarray, correct: np.ndarray) -> None:
        edges = equal_mass_edges(confidences, int(self.n_bins))
        stats = bin_statistics(confidences, correct, edges=edges)
        midpoints = (edges[:-1] + edges[1:]) / 2.0
        self.edges_ = edges
        self.bin_values_ = np.where(stats.counts > 0, stats.accuracy, midpoints)
        self.bin_counts_ = stats.counts

    def _map_confidences(self, confidences: np.ndarray) -> np.ndarray:
        return self.bin_values_[assign_bins(confidences, self.edges_)]

    def summary(self) -> dict[str, Any]:
        self._check_fitted()
        return {"n_bins": int(self.n_bins)}

    def _get_params(self) -> dict[str, Any]:
        return {
            "edges": self.edges_.tolist(),
            "bin_values": self.bin_values_.tolist(),
            "bin_counts": self.bin_counts_.astype(int).tolist(),
        }

    def _set_params(self, params: dict[str, Any]) -> None:
        edges, values = float_array(params, "edges"), float_array(params, "bin_values")
        counts = params.get("bin_counts", [0] * values.size)
        if not isinstance(counts, list) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                                   for c in counts):
            raise ValueError("'bin_counts' must be a list of non-negative integers")
        counts = np.asarray(counts, dtype=np.int64)
        if edges.size != self.n_bins + 1 or values.size != self.n_bins or counts.size != self.n_bins:
            raise ValueError(f"'edges' must hold {self.n_bins + 1} values and 'bin_values' {self.n_bins}")
        if (np.diff(edges) < 0).any() or (values < 0).any() or (values > 1).any():
            raise ValueError("'edges' must be sorted and 'bin_values' in [0, 1]")
        if edges[0] < 0 or edges[-1] > 1:  # they split top-class confidences, which lie in [0, 1]
            raise ValueError(f"'edges' must lie in [0, 1], got {edges[0]:.6g} to {edges[-1]:.6g}")
        self.edges_, self.bin_values_, self.bin_counts_ = edges, values, counts
