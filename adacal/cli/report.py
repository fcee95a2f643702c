"""`adacal report`: one self-contained HTML page (and report.json) of everything the input allows."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import ForceOption, guarded
from adacal.cli.inputs import (
    ClassNames, Header, LabelsAre, LabelsFile, LabelsKey, LogitsKey, PtItems, Renormalize, ScoreColumns, ScoresKind,
    Separator, read_options,
)

HELP = """Write one HTML page that judges a model: calibration metrics with bootstrap intervals, the reliability
diagram with consistency bands, the post-hoc comparison (--method all) with the selected calibrator before and after,
selective prediction (AURC, risk–coverage curve), conformal sets (thr and aps at α = 0.1) and, for a run folder, the
training curves and AdaFocal's γ dynamics; for an image model's run also calibration under shift (every generated
corruption at severities 1-5, its model run once per set; --quick: a seeded 500 test images) and OOD detection of the
shifted sets by softmax entropy. Each section gives the command that reproduces it alone, and says why when
it was skipped (post-hoc calibration and conformal sets need validation predictions: a run folder has them, a file
may hold val_ arrays, or give --val FILE). The page is self-contained (figures embedded, no JavaScript, nothing
fetched: it opens from disk); report.json beside it holds every figure's numbers. Several INPUTs are laid out side
by side, the same sections for each.

Example: adacal report runs/ce runs/adafocal --out compare.html"""


@contextlib.contextmanager
def _progress(silent: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A progress bar (sections done, elapsed, ETA) on stderr when it is a terminal; None otherwise."""
    from rich.console import Console

    console = Console(stderr=True)
    if silent or not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    bar = Progress(TextColumn("Report sections"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.description}"), console=console,
                   transient=True)
    tasks: list[Any] = []

    def advance(done: int, total: int, title: str) -> None:
        if not tasks:
            bar.start()
            tasks.append(bar.add_task("", total=total))
        bar.update(tasks[0], completed=done, description=title)

    try:
        yield advance
    finally:
        if tasks:
            bar.stop()


@guarded
def report(
    inputs: Annotated[list[Path], typer.Argument(metavar="RUN|PREDICTIONS", show_default=False,
                                                 help="Run folders written by 'adacal train' or predictions files "
                                                      "(any format 'adacal evaluate' reads).")],
    val: Annotated[Path | None, typer.Option("--val", help="Validation predictions of the one PREDICTIONS file "
                                                           "(for post-hoc calibration and conformal sets).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="The page to write (.html); report.json goes beside "
                                                           "it. [default: RUN/report.html, <stem>-report.html beside "
                                                           "a file, report.html for several inputs]")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer resamples: 100 bootstrap resamples (unless "
                                                        "--bootstrap) and 200 for the reliability bands; the shift "
                                                        "and OOD sections on a seeded 500 test images.")] = False,
    bootstrap: Annotated[int | None, typer.Option("--bootstrap", help="Bootstrap resamples for the 95% intervals "
                                                                      "(0 = none). [default: 1000]")] = None,
    method: Annotated[str, typer.Option("--method", help="Calibrators compared: all, or one name (temperature, "
                                                         "...).")] = "all",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling, the cross-validation and the "
                                                     "--quick subset.")] = 0,
    device: Annotated[str, typer.Option("--device", help="Where a run's model scores the shifted sets: auto, cpu, "
                                                         "cuda or cuda:N.")] = "auto",
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Dataset folder a run's model reads its test "
                                                                     "split (and Hendrycks' files) from. [default: "
                                                                     "the one its checkpoint records]")] = None,
    silent: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the files written.")] = False,
    force: ForceOption = False,
    logits_key: LogitsKey = None,
    labels_key: LabelsKey = None,
    labels: LabelsFile = None,
    renormalize: Renormalize = False,
    scores_kind: ScoresKind = "auto",
    header: Header = None,
    separator: Separator = None,
    pt_items: PtItems = None,
    labels_are: LabelsAre = None,
    score_columns: ScoreColumns = None,
    classes: ClassNames = None,
) -> None:
    from adacal.commands.report import run_report

    options = read_options(logits_key, labels_key, labels, renormalize, scores_kind, header, separator, pt_items,
                           labels_are=labels_are, score_columns=score_columns, classes=classes)
    with _progress(silent) as progress:
        run = run_report(inputs, val=val, out=out, quick=quick, bootstrap=bootstrap, method=method, seed=seed,
                         force=force, options=options, device=device, data_dir=data_dir,
                         progress=progress)
    if not silent:
        for line in run.skipped:
            typer.echo(f"Skipped {line}", err=True)
    typer.echo(f"Wrote {run.page}")
    typer.echo(f"Wrote {run.json}")
