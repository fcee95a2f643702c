"""Saving a fitted calibrator as a JSON report (kind "calibrator") and loading it back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adacal.calibrators.base import Calibrator
from adacal.errors import InputError
from adacal.reports import make_report, read_report, write_json

CALIBRATOR_KIND = "calibrator"


def save_calibrator(calibrator: Calibrator, path: str | os.PathLike) -> Path:
    """Write a fitted calibrator to `path` (JSON, atomic): the report envelope with results = {"calibrator": ...}."""
    data = calibrator.to_dict()
    report = make_report(
        CALIBRATOR_KIND,
        config={"method": data["method"], "options": data["options"]},
        results={"calibrator": data},
    )
    return write_json(path, report)


def load_calibrator(path: str | os.PathLike) -> Calibrator:
    """A fitted calibrator from a file written by `save_calibrator` (wrong kind, method or version → InputError)."""
    return calibrator_from_report(read_report(path, kind=CALIBRATOR_KIND), path)


def calibrator_from_report(report: dict[str, Any], path: str | os.PathLike) -> Calibrator:
    """The calibrator of a report of kind 'calibrator' already read from `path` (named in errors)."""
    data = report["results"].get("calibrator") if isinstance(report["results"], dict) else None
    if data is None:
        raise InputError(f"Expected {path} to hold a calibrator under results.calibrator, but it has none.")
    try:
        return Calibrator.from_dict(data)
    except InputError as exc:
        raise type(exc)(f"Cannot load the calibrator in {Path(path)}: {exc}") from None
