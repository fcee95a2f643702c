"""Saving a fitted calibrator as a JSON report (kind "calibrator") and loading it back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adacal.calibrators.base import Calibrator
from adacal.errors import InputError
from adacal.reports import make_report, write_json
from adacal.sources.documents import read_report

CALIBRATOR_KIND = "calibrator"


def save_calibrator(calibrator: Calibrator, path: str | os.PathLike) -> Path:
    """Write a fitted calibrator to a JSON report (atomically), results = {"calibrator": calibrator.to_dict()}.

    Args:
        calibrator: a fitted calibrator.
        path: the file to write.

    Returns:
        The path written.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from adacal.calibrators import TemperatureScaling, load_calibrator, save_calibrator
        >>> calibrator = TemperatureScaling().fit(np.array([[2.0, 0.0]] * 4), [0, 0, 0, 1])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = save_calibrator(calibrator, os.path.join(folder, "temperature.json"))
        ...     round(load_calibrator(path).temperature_, 4)
        1.8205
    """
    data = calibrator.to_dict()
    report = make_report(
        CALIBRATOR_KIND,
        config={"method": data["method"], "options": data["options"]},
        results={"calibrator": data},
    )
    return write_json(path, report)


def load_calibrator(path: str | os.PathLike) -> Calibrator:
    """A fitted calibrator from a file written by `save_calibrator`.

    Args:
        path: the JSON report to read.

    Returns:
        The fitted calibrator. A file of another kind, method or version is an InputError.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from adacal.calibrators import HistogramBinning, load_calibrator, save_calibrator
        >>> calibrator = HistogramBinning(n_bins=1).fit(np.array([[2.0, 0.0]] * 4), [0, 0, 0, 1])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     loaded = load_calibrator(save_calibrator(calibrator, os.path.join(folder, "histogram.json")))
        >>> loaded, loaded.bin_values_.tolist()
        (HistogramBinning(n_bins=1), [0.75])
    """
    return calibrator_from_report(read_report(path, kind=CALIBRATOR_KIND), path)


def calibrator_from_report(report: dict[str, Any], path: str | os.PathLike) -> Calibrator:
    """The calibrator of a report of kind 'calibrator' already read from `path` (named in errors)."""
    data = report["results"].get("calibrator") if isinstance(report["results"], dict) else None
    if data is None:
        raise InputError(f"Expected {path} to hold a calibrator under results.calibrator, but it has none.")
    if isinstance(data, dict) and data.get("applies_to") == "confidences":
        raise InputError(f"Expected a calibrator of class scores in {Path(path).name}, got a confidence map (fitted on "
                         "top-label confidences): apply it to a (confidence, correct) file with 'adacal evaluate "
                         "--calibrator'.")
    try:
        return Calibrator.from_dict(data)
    except InputError as exc:
        raise type(exc)(f"Cannot load the calibrator in {Path(path)}: {exc}") from None
