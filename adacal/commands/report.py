"""`adacal report` as one library call: every section the input allows (`adacal.commands.report_sections`), laid out
on one self-contained HTML page (`adacal.report_page`) with report.json beside it, the house report holding every
figure's numbers.

A run folder gets every section its model allows (an image model's run also calibration under shift and OOD
detection against the generated shifted sets, its model run once per set); a predictions file gets those its arrays
allow (post-hoc calibration and conformal sets need validation predictions: a file's `val_` arrays or `--val FILE`).
Several inputs are laid out side by side, the same sections for each, after a table comparing their headline
figures.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adacal.checks import check_non_negative_int
from adacal.errors import InputError
from adacal.report_page import SKIPPED, Section

REPORT_KIND = "report"
GENERATOR = "adacal report"  # the page's <meta name="generator">: how a later report knows it may replace the page
DEFAULT_BOOTSTRAP = 1000
QUICK_BOOTSTRAP = 100
DEFAULT_BAND_SAMPLES = 1000
QUICK_BAND_SAMPLES = 200
PAGE_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class ReportRun:
    """What `run_report` did: the page and report.json written, the report, and each input's sections."""

    page: Path
    json: Path
    report: dict[str, Any]
    sections: list[list[Section]]

    @property
    def skipped(self) -> list[str]:
        """One line per skipped section: "<input>: <title>: <reason>"."""
        return [f"{entry['label']}: {section.title}: {section.reason}"
                for entry, column in zip(self.report["results"]["inputs"], self.sections)
                for section in column if section.status == SKIPPED]


def default_outputs(inputs: Sequence[Path]) -> Path:
    """Where the page goes by default: `RUN/report.html` for one run folder, `<stem>-report.html` beside one file,
    `report.html` in the current folder for several inputs.

        >>> default_outputs([Path("runs/a"), Path("runs/b")])
        PosixPath('report.html')
    """
    if len(inputs) == 1:
        path = inputs[0]
        if path.is_dir():
            return path / "report.html"
        return path.with_name(f"{path.name.split('.')[0] or path.stem}-report.html")
    return Path("report.html")


def json_beside(page: Path) -> Path:
    """report.json's path: the page's with the suffix .json.

        >>> json_beside(Path("out/report.html"))
        PosixPath('out/report.json')
    """
    return page.with_suffix(".json")


def _ours(page: Path, json_path: Path) -> tuple[bool, bool]:
    """Whether an existing page and JSON were written by adacal report (so writing again may replace them)."""
    page_ours = json_ours = True
    if page.is_file():
        with open(page, "rb") as handle:
            page_ours = f'<meta name="generator" content="{GENERATOR}">'.encode() in handle.read(4096)
    if json_path.is_file():
        try:
            json_ours = json.loads(json_path.read_text(encoding="utf-8")).get("kind") == REPORT_KIND
        except (OSError, ValueError, AttributeError):
            json_ours = False
    return page_ours, json_ours


def check_report_options(inputs: Sequence[Path], *, val: Path | None, out: Path | None, bootstrap: Any, seed: Any,
                         method: str, force: bool, options: Any = None, data_dir: Path | None = None
                         ) -> tuple[Path, Path]:
    """`adacal report`'s cheap checks, before anything is read; returns the page's and the JSON's paths."""
    from adacal.commands.calibrate import calibration_methods
    from adacal.writing import check_output

    if not inputs:
        raise InputError("Expected at least one INPUT (a run folder or a predictions file), got none.")
    for path in inputs:
        if not path.exists():
            raise InputError(f"Expected INPUT to be a run folder or predictions file, got {path}: no such file or "
                             "folder.")
    seen = [os.path.realpath(path) for path in inputs]
    if len(set(seen)) != len(seen):
        raise InputError("Expected each INPUT once, got one twice: give each run or file once.")
    if val is not None:
        if len(inputs) != 1:
            raise InputError(f"Expected --val with one INPUT (the test predictions it pairs with), got {len(inputs)}.")
        if inputs[0].is_dir():
            raise InputError(f"Expected --val only with a predictions file of test outputs, got the folder "
                             f"{inputs[0]}: a run folder holds its own validation predictions.")
        if not val.is_file():
            raise InputError(f"Expected --val to be a predictions file of validation outputs, got {val}: no such "
                             "file.")
    if data_dir is not None:
        if not data_dir.is_dir():
            raise InputError(f"Expected --data-dir to be the folder holding the runs' dataset, got {data_dir}: no "
                             "such folder.")
        if not any(path.is_dir() for path in inputs):
            raise InputError("Expected --data-dir with a run folder (its model reads the data), got only "
                             "predictions files, which need no data folder.")
    check_non_negative_int(bootstrap, "--bootstrap", note=" (0 = no intervals)")
    check_non_negative_int(seed, "--seed")
    calibration_methods(method)
    page = Path(out) if out is not None else default_outputs(inputs)
    if page.suffix.lower() not in PAGE_SUFFIXES:
        raise InputError(f"Expected --out to be an .html file, got {page}: name the page report.html or another "
                         ".html path.")
    json_path = json_beside(page)
    own = (*inputs, val, getattr(options, "labels_file", None))
    check_output(page, flag="--out", inputs=own, force=force)
    check_output(json_path, flag="the report's JSON", inputs=own, force=force)
    page_ours, json_ours = _ours(page, json_path)
    if not force and not (page_ours and json_ours):
        which = page if not page_ours else json_path
        raise InputError(f"{which} already exists and adacal report did not write it; give another --out, or "
                         "--force to replace it.")
    return page, json_path


def _label(path: Path) -> str:
    return path.name or str(path)


def run_report(
    inputs: Sequence[str | os.PathLike],
    *,
    val: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    quick: bool = False,
    bootstrap: int | None = None,
    method: str = "all",
    seed: int = 0,
    force: bool = False,
    options: Any = None,
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ReportRun:
    """Everything `adacal report` does, without printing.

    Runs every section of `adacal.commands.report_sections.SECTIONS` on each of `inputs` (run folders or
    predictions files; `val`, the validation predictions of the one file given), renders the page to `out` (default
    `default_outputs`) and writes report.json beside it (`json_beside`). `bootstrap` resamples (default 1000;
    `quick`: 100 and fewer band resamples) give the metrics' intervals; `method` is the calibrators compared ("all"
    or one name); `options` is an `adacal.sources.ReadOptions`; `device` runs a run's model on the shifted sets
    (`quick`: a seeded 500 of the test images in each), reading the test split from `data_dir` (default: the folder
    each run's checkpoint records, which a moved data folder needs). `progress(done, total, title)` is called after
    each section and, within the shift section, before each shifted set. Every cheap check runs before anything is
    read; nothing is written before every section is done.
    """
    from adacal.commands.report_sections import SECTIONS, ReportInput, guarded, headline
    from adacal.report_page import render_page
    from adacal.reports import make_report, utc_now, write_json
    from adacal.version import __version__
    from adacal.writing import write_file

    paths = [Path(path) for path in inputs]
    val = None if val is None else Path(val)
    data_dir = None if data_dir is None else Path(data_dir)
    resamples = (QUICK_BOOTSTRAP if quick else DEFAULT_BOOTSTRAP) if bootstrap is None else bootstrap
    page_path, json_path = check_report_options(paths, val=val, out=None if out is None else Path(out),
                                                bootstrap=resamples, seed=seed, method=method, force=force,
                                                options=options, data_dir=data_dir)
    band_samples = QUICK_BAND_SAMPLES if quick else DEFAULT_BAND_SAMPLES
    from adacal.checks import check_device_name

    check_device_name(device)
    items = [ReportInput(path, val=val, options=options, bootstrap=resamples, band_samples=band_samples, seed=seed,
                         method=method, quick=quick, device=device, data_dir=data_dir) for path in paths]
    total, done = len(items) * len(SECTIONS), 0
    columns: list[list[Section]] = []
    for item in items:
        column = []
        for key, title, build in SECTIONS:
            if progress is not None:
                item.step = lambda what, title=title, done=done: progress(done, total, f"{title}: {what}")
            column.append(guarded(key, title, build, item))
            done += 1
            if progress is not None:
                progress(done, total, title)
        columns.append(column)

    labels = [_label(path) for path in paths]
    config = {"inputs": [str(path) for path in paths], "val": None if val is None else str(val), "method": method,
              "bootstrap": resamples, "band_samples": band_samples, "seed": seed, "quick": quick,
              "data_dir": None if data_dir is None else str(data_dir),
              "sections": [key for key, _, _ in SECTIONS], "page": str(page_path)}
    summary, headline_rows = headline(labels, columns)
    results = {"headline": headline_rows,
               "inputs": [{"input": str(path), "label": label,
                           "sections": {section.key: section.to_json() for section in column}}
                          for path, label, column in zip(paths, labels, columns)]}
    report = make_report(REPORT_KIND, config=config, results=results)
    given = [f"--val {shlex.quote(str(val))}" if val else "", "--quick" if quick else "",
             f"--bootstrap {bootstrap}" if bootstrap is not None else "",
             f"--method {method}" if method != "all" else "", f"--seed {seed}" if seed else "",
             f"--device {device}" if device != "auto" else "",
             f"--data-dir {shlex.quote(str(data_dir))}" if data_dir is not None else ""]
    command = " ".join(["adacal report", *(shlex.quote(str(path)) for path in paths), *filter(None, given)])
    lines = [f"Inputs: {', '.join(map(str, paths))}", f"Reproduce this page: {command}",
             f"Written by adacal {__version__} on {utc_now()}; the numbers of every figure are in {json_path.name}."]
    title = "Calibration report: " + ", ".join(labels)
    page = render_page(title, labels, columns, lines, generator=GENERATOR, summary=summary)
    write_json(json_path, report)
    write_file(page_path, lambda handle: handle.write(page))
    return ReportRun(page=page_path, json=json_path, report=report, sections=columns)


__all__ = ["DEFAULT_BOOTSTRAP", "QUICK_BOOTSTRAP", "REPORT_KIND", "ReportRun", "check_report_options",
           "default_outputs", "json_beside", "run_report"]
