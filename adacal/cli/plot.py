"""`adacal plot`: reliability diagrams, AdaFocal's γ dynamics, C_train/C_val correspondence, training and ROC curves.

Only options live here; reading inputs and drawing is `adacal.plots`. Every subcommand checks the output path and
its inputs before drawing, and writes the figure atomically, so a failed command leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import ForceOption, OneLineErrorGroup, guarded

HELP = (
    "Draw reliability diagrams, AdaFocal gamma dynamics, training curves and ROC curves as PNG, SVG or PDF.\n\n"
    "Example: adacal plot reliability runs/ce runs/adafocal --binning equal-mass"
)

plot_app = typer.Typer(
    cls=OneLineErrorGroup,
    help=HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

OutOption = Annotated[
    Optional[Path],
    typer.Option(
        "--out",
        "-o",
        help="Figure file; .png, .svg or .pdf picks the format. Default: <run>/plots/<kind>.png for a run folder, "
        "else <input stem>-<kind>.png beside the input.",
        show_default=False,
    ),
]
DpiOption = Annotated[int, typer.Option("--dpi", help="Resolution of PNG output (dots per inch).")]
TitleOption = Annotated[Optional[str], typer.Option("--title", help="Title above the figure.", show_default=False)]
LabelsOption = Annotated[
    Optional[str],
    typer.Option("--labels", help="Comma-separated legend labels, one per input (default: the run's loss).",
                 show_default=False),
]
BinsOption = Annotated[
    Optional[str],
    typer.Option("--bins", help="Comma-separated validation-bin indices to draw, e.g. 0,7,14 (default: all bins).",
                 show_default=False),
]


def _draw(
    kind: str, inputs: Path | list[Path], out: Optional[Path], dpi: int, build: Callable[[], Any], force: bool = False,
    extra_inputs: tuple[Optional[Path], ...] = (),
) -> None:
    """Check the output path, build the figure (which reads and checks the inputs), then write it atomically."""
    from adacal import plots
    from adacal.writing import check_output

    given = list(inputs) if isinstance(inputs, list) else [inputs]
    target = out if out is not None else plots.default_output(given[0], kind)
    plots.figure_format(target)
    plots.check_dpi(dpi)
    check_output(target, flag="--out", inputs=(*given, *extra_inputs), force=force)
    figure = build()
    written = plots.save_figure(figure, target, dpi=dpi)
    typer.echo(f"Wrote {written}")


@plot_app.command(
    "reliability",
    help="Reliability diagrams (accuracy per confidence bin, the gap to confidence, a confidence histogram), side by "
    "side for several inputs. INPUT is a run folder, a predictions file (.npz/.pt; the test split when it holds "
    "val_/test_ arrays) or an evaluate.json.\n\n"
    "Example: adacal plot reliability runs/ce runs/flsd runs/adafocal --binning equal-mass",
)
@guarded
def reliability(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help="Run folders, predictions files or "
                                                 "evaluate.json reports.", show_default=False)],
    binning: Annotated[str, typer.Option("--binning", help="Bins: equal-width or equal-mass.")] = "equal-width",
    n_bins: Annotated[Optional[int], typer.Option("--n-bins", help="Number of bins [default: 15; an evaluate.json "
                                                  "keeps its own].", show_default=False)] = None,
    split: Annotated[str, typer.Option("--split", help="Split of a file holding val_/test_ arrays: test or val.")]
    = "test",
    calibrated: Annotated[Optional[Path], typer.Option("--calibrated", help="A calibrate.json: add a panel after its "
                                                       "calibrator (needs logits).", show_default=False)] = None,
    method: Annotated[str, typer.Option("--method", help="Calibrator in --calibrated to apply ('best': the one "
                                        "the report picked).")] = "best",
    labels: LabelsOption = None,
    out: OutOption = None,
    dpi: DpiOption = 150,
    title: TitleOption = None,
    force: ForceOption = False,
) -> None:
    from adacal import plots

    def build() -> Any:
        panels = plots.reliability_inputs(
            inputs, binning=binning, n_bins=n_bins, split=split, labels=plots.parse_labels(labels, len(inputs)),
            calibrated=calibrated, method=method,
        )
        return plots.reliability_diagram(panels, title=title)

    _draw("reliability", inputs, out, dpi, build, force, (calibrated,))


def _draw_adafocal_run(
    kind: str, run: Path, bins: str | None, out: Path | None, dpi: int, title: str | None, force: bool = False
) -> None:
    """`plot gamma` and `plot correspondence`: per-bin panels from an AdaFocal run's history."""
    from adacal import plots

    def build() -> Any:
        chosen = plots.parse_bins(bins)
        _, history = plots.read_adafocal_run(run, kind)
        draw = plots.gamma_dynamics if kind == "gamma" else plots.correspondence
        return draw(history, chosen, title=title)

    _draw(kind, run, out, dpi, build, force)


@plot_app.command(
    "gamma",
    help="AdaFocal's dynamics per validation bin: calibration error C_val - A_val, gamma and the bin boundaries "
    "over epochs (the paper's figure 5).\n\nExample: adacal plot gamma runs/adafocal --bins 0,7,14",
)
@guarded
def gamma(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="A run folder trained with --loss adafocal.",
                                        show_default=False)],
    bins: BinsOption = None,
    out: OutOption = None,
    dpi: DpiOption = 150,
    title: TitleOption = None,
    force: ForceOption = False,
) -> None:
    _draw_adafocal_run("gamma", run, bins, out, dpi, title, force)


@plot_app.command(
    "correspondence",
    help="C_train against C_val and A_val per validation bin over epochs (the paper's figure 2) from an AdaFocal "
    "run.\n\nExample: adacal plot correspondence runs/adafocal --bins 0,7,14",
)
@guarded
def correspondence(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="A run folder trained with --loss adafocal.",
                                        show_default=False)],
    bins: BinsOption = None,
    out: OutOption = None,
    dpi: DpiOption = 150,
    title: TitleOption = None,
    force: ForceOption = False,
) -> None:
    _draw_adafocal_run("correspondence", run, bins, out, dpi, title, force)


@plot_app.command(
    "curves",
    help="Error and ECE-EM (%) against epoch for several runs; runs of the same dataset, model and loss (different "
    "seeds) are drawn as mean ± std.\n\nExample: adacal plot curves runs/ce-* runs/adafocal-* --out curves.pdf",
)
@guarded
def curves(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN", help="Run folders.", show_default=False)],
    split: Annotated[str, typer.Option("--split", help="Metrics of: auto (test when every run has it, else val), "
                                       "val or test.")] = "auto",
    out: OutOption = None,
    dpi: DpiOption = 150,
    title: TitleOption = None,
    force: ForceOption = False,
) -> None:
    from adacal import plots

    def build() -> Any:
        histories, losses = plots.curve_inputs(runs)
        return plots.training_curves(histories, split=split, losses=losses, title=title)

    _draw("curves", runs, out, dpi, build, force)


@plot_app.command(
    "roc",
    help="ROC curves of out-of-distribution detection before and after temperature scaling, AUROC in the legend, "
    "from ood.json reports (or run folders holding one).\n\nExample: adacal plot roc runs/ce/ood.json "
    "runs/adafocal/ood.json",
)
@guarded
def roc(
    reports: Annotated[list[Path], typer.Argument(metavar="OOD_JSON", help="ood.json reports or run folders.",
                                                  show_default=False)],
    score: Annotated[str, typer.Option("--score", help="OOD score whose ROC to draw: entropy, max-prob or energy.")]
    = "entropy",
    labels: LabelsOption = None,
    out: OutOption = None,
    dpi: DpiOption = 150,
    title: TitleOption = None,
    force: ForceOption = False,
) -> None:
    from adacal import plots

    def build() -> Any:
        items = plots.roc_inputs(reports, plots.parse_labels(labels, len(reports)))
        return plots.roc_curves(items, score=score, title=title)

    _draw("roc", reports, out, dpi, build, force)


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, name="plot", help=HELP)
