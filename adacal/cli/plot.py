"""`adacal plot`: reliability diagrams, AdaFocal's γ dynamics, C_train/C_val correspondence, training, ROC and
risk–coverage curves, calibration under shift, conformal sets.

Only options live here; each subcommand is one call of `adacal.commands.plot` (which checks the output path and the
inputs before drawing and writes the figure atomically, so a failed command leaves nothing behind). Warnings raised
while drawing are held back: after a failure only the `Error:` line is printed, after a success they follow the
"Wrote" line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import OneLineErrorGroup, guarded
from adacal.cli.inputs import LabelsKey, LogitsKey, Renormalize, ScoresKind, Header, Separator, PtItems
from adacal.cli.inputs import ClassNames, LabelsAre, ScoreColumns
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import unknown_name

try:  # Typer >= 0.20 vendors click; its exceptions are not the `click` package's.
    from typer import _click as click
except ImportError:  # pragma: no cover - older Typer uses click itself
    import click

HELP = (
    "Draw reliability diagrams, AdaFocal gamma dynamics, training curves, ROC and risk-coverage curves, "
    "calibration under shift and conformal sets as PNG, SVG or PDF.\n\n"
    "Example: adacal plot reliability runs/ce runs/adafocal --binning equal-mass"
)


class PlotGroup(OneLineErrorGroup):
    """`adacal plot`: an unknown figure kind lists the kinds and suggests the closest, like every unknown name."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError:
            name = args[0] if args else ""
            if not name or name.startswith("-") or self.get_command(ctx, name) is not None:
                raise
            raise click.exceptions.UsageError(str(unknown_name("plot kind", name, self.list_commands(ctx))),
                                              ctx) from None


plot_app = typer.Typer(
    cls=PlotGroup,
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
        help="Figure file; .png, .svg or .pdf picks the format. Default for one input: <run>/plots/<kind>.png for a "
        "run folder, else <input stem>-<kind>.png beside the input; for several: plots/compare-<kind>-<names>.png in "
        "the current folder.",
        show_default=False,
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Replace an existing output even when it is not a figure of this kind (another "
                 "plot's figure or any other file), one of this command's inputs or a file 'adacal train' wrote. "
                 "Without it only a figure of the same kind is redrawn in place."),
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
    typer.Option("--bins", help="Comma-separated validation-bin indices to draw, e.g. 0,7,14, at most 30 (one panel "
                                "each; default: all bins, or 30 evenly spaced from first to last when there are more).",
                 show_default=False),
]
AdaFocalRunArgument = Annotated[
    Path, typer.Argument(metavar="RUN", help="A run folder trained with --loss adafocal.", show_default=False)
]


@plot_app.command(
    "reliability",
    help="Reliability diagrams (accuracy per confidence bin, the gap to confidence, a confidence histogram), side by "
    "side for several inputs. INPUT is a run folder, a predictions file (.npz/.pt; the test split when it holds "
    "val_/test_ arrays) or an evaluate.json. An input given twice (or a run folder and its predictions file) is drawn "
    "once, as a note says. Each title gives ECE-EM (and ECE-EW) as `adacal evaluate` prints them for the same input, "
    "whatever the bars' binning. Equal-mass bins never split tied confidences, so ties leave bins empty and of zero "
    "width: they are not drawn, and the panel's title says how many.\n\n"
    "Example: adacal plot reliability runs/ce runs/flsd runs/adafocal --binning equal-mass",
)
@guarded
def reliability(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help="Run folders, predictions files or "
                                                 "evaluate.json reports.", show_default=False)],
    binning: Annotated[str, typer.Option("--binning", help="Bins: equal-width or equal-mass.")] = "equal-width",
    n_bins: Annotated[Optional[int], typer.Option("--n-bins", help=f"Number of bins (default {DEFAULT_N_BINS}, at "
                                                  "most 1,000; an evaluate.json keeps its own).",
                                                  show_default=False)] = None,
    split: Annotated[str, typer.Option("--split", help="Split of a file holding val_/test_ arrays: test or val.")]
    = "test",
    calibrated: Annotated[Optional[Path], typer.Option("--calibrated", help="A calibrate.json, or a calibrator "
                                                       "`adacal calibrate --save` wrote: add a panel after its "
                                                       "calibrator (vector / matrix scaling: on the kind of scores "
                                                       "they were fitted on).", show_default=False)] = None,
    method: Annotated[str, typer.Option("--method", help="Calibrator in --calibrated to apply ('best': the one "
                                        "the report picked).")] = "best",
    bands: Annotated[str, typer.Option("--bands", help="Uncertainty drawn on each bin: consistency (where a "
                                       "perfectly calibrated model's bin accuracy would fall, Bröcker & Smith 2007), "
                                       "bootstrap (the interval of the observed accuracy) or none. Needs per-sample "
                                       "predictions.")] = "none",
    band_samples: Annotated[int, typer.Option("--band-samples", help="Resamples behind --bands (10 to 100,000).")]
    = 1000,
    band_level: Annotated[float, typer.Option("--band-level", help="Coverage of --bands, between 0 and 1.")] = 0.9,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --bands resampling (same seed, same band).")] = 0,
    smooth: Annotated[bool, typer.Option("--smooth", help="Draw the smoothed reliability curve (kernel regression "
                                         "with smooth ECE's automatic bandwidth, Błasiok & Nakkiran 2023) over "
                                         "the bars, only where the samples' confidences lie. Needs per-sample "
                                         "predictions.")] = False,
    corp: Annotated[bool, typer.Option("--corp", help="Draw the CORP reliability curve (the isotonic, PAV, "
                                       "recalibration of the top-1 confidence; Dimitriadis et al. 2021) with its "
                                       "consistency band (--band-samples outcome sets drawn from the confidences, "
                                       "--band-level). Needs per-sample predictions.")] = False,
    positive: Annotated[bool, typer.Option("--positive", help="A binary model's positive-class diagram: the "
                                           "predicted P(class 1) (class index 1, scikit-learn's classes_[1]) binned "
                                           "against the observed frequency of class 1, as scikit-learn's "
                                           "CalibrationDisplay draws it; titles give ECE-Positive-EM/-EW. Needs "
                                           "per-sample scores of 2 classes.")] = False,
    min_bin_count: Annotated[int, typer.Option("--min-bin-count", help="Bins with fewer samples are faded and "
                                               "labelled with their count.")] = 10,
    labels: LabelsOption = None,
    labels_file: Annotated[Optional[Path], typer.Option("--labels-file", help="File of labels for predictions files "
                                                        "saved without them (as evaluate's --labels; here --labels "
                                                        "names the panels).", show_default=False)] = None,
    logits_key: LogitsKey = None,
    labels_key: LabelsKey = None,
    renormalize: Renormalize = False,
    scores_kind: ScoresKind = "auto",
    header: Header = None,
    separator: Separator = None,
    pt_items: PtItems = None,
    labels_are: LabelsAre = None,
    score_columns: ScoreColumns = None,
    classes: ClassNames = None,
    group_by: Annotated[Optional[str], typer.Option("--group-by", metavar="KEY", help="One diagram per group of the "
                                                    "one INPUT's samples: KEY is a per-sample key or column of strings "
                                                    "or integers (task, subject), as for evaluate --group-by; at most "
                                                    "12 diagrams (the 12 largest groups, noted).",
                                                    show_default=False)] = None,
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.cli.inputs import print_notes, read_options
    from adacal.commands.plot import run_plot_reliability

    options = read_options(logits_key, labels_key, labels_file, renormalize, scores_kind, header, separator,
                           pt_items, labels_are=labels_are, score_columns=score_columns, classes=classes)
    run = run_plot_reliability(
        inputs, binning=binning, n_bins=n_bins, split=split, calibrated=calibrated, method=method, bands=bands,
        band_samples=band_samples, band_level=band_level, seed=seed, smooth=smooth, min_bin_count=min_bin_count,
        labels=labels, options=options, out=out, force=force, dpi=dpi, title=title, group_by=group_by, corp=corp,
        positive=positive,
    )
    _report(run)
    print_notes(run.notes, quiet=False)


def _report(run: Any) -> None:
    """The "Wrote" line, then the warnings held back while drawing, on stderr."""
    typer.echo(f"Wrote {run.written}")
    for message in run.warnings:
        typer.echo(f"Warning: {message}", err=True)


def _draw_adafocal_run(kind: str, run: Path, bins: str | None, out: Path | None, dpi: int, title: str | None,
                       force: bool) -> None:
    """`plot gamma` and `plot correspondence`: per-bin panels from an AdaFocal run's history."""
    from adacal.commands.plot import run_plot_adafocal

    _report(run_plot_adafocal(kind, run, bins=bins, out=out, dpi=dpi, title=title, force=force))


@plot_app.command(
    "gamma",
    help="AdaFocal's dynamics per validation bin: calibration error C_val - A_val, gamma and the bin boundaries "
    "over epochs (the paper's figure 5), each row on one y-scale shared by the panels; an epoch without validation "
    "samples in a bin is marked and named in its title.\n\nExample: adacal plot gamma runs/adafocal --bins 0,7,14",
)
@guarded
def gamma(run: AdaFocalRunArgument, bins: BinsOption = None, out: OutOption = None, force: ForceOption = False,
          dpi: DpiOption = 150, title: TitleOption = None) -> None:
    _draw_adafocal_run("gamma", run, bins, out, dpi, title, force)


@plot_app.command(
    "correspondence",
    help="C_train against C_val and A_val per validation bin over epochs (the paper's figure 2) from an AdaFocal "
    "run. Where a bin holds no training (or validation) samples the line breaks, marked on the epoch axis and named "
    "in the panel's title.\n\nExample: adacal plot correspondence runs/adafocal --bins 0,7,14",
)
@guarded
def correspondence(run: AdaFocalRunArgument, bins: BinsOption = None, out: OutOption = None,
                   force: ForceOption = False, dpi: DpiOption = 150, title: TitleOption = None) -> None:
    _draw_adafocal_run("correspondence", run, bins, out, dpi, title, force)


@plot_app.command(
    "curves",
    help="Error and ECE-EM (%) against epoch for several runs. Runs whose config.json options are equal except the "
    "seed (and where or how they ran: output folder, name, device, workers, data folder, channels-last, --select, "
    "--eval-test-every) are seeds of one setting, drawn as one line, mean ± std; every other difference makes a line "
    "of its own, named by the options that differ (Focal γ=0, Focal γ=1000) or by its run folder when more differ. "
    "A run given twice, or two runs with the same options and seed, count once (a note says so). Seeds that "
    "recorded different numbers of epochs are drawn over the epochs they all have, as the legend (epochs 1–4 of "
    "4/1/20) and a note say.\n\nExample: adacal plot curves runs/ce-* runs/adafocal-* --out curves.pdf",
)
@guarded
def curves(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN", help="Run folders.", show_default=False)],
    split: Annotated[str, typer.Option("--split", help="Metrics of: auto (test when every run has it, else val), "
                                       "val or test.")] = "auto",
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.cli.inputs import print_notes
    from adacal.commands.plot import run_plot_curves

    run = run_plot_curves(runs, split=split, out=out, force=force, dpi=dpi, title=title)
    _report(run)
    print_notes(run.notes, quiet=False)


@plot_app.command(
    "roc",
    help="ROC curves of out-of-distribution detection before and after temperature scaling, AUROC in the legend, "
    "from the reports `adacal ood` writes (RUN/ood-<set>.json, or its --json file) or run folders holding them. The "
    "title (or each legend entry) says where the OOD set came from: generated by adacal, Hendrycks' files, a "
    "dataset, a file, saved outputs, or 'source not recorded'.\n\n"
    "Example: adacal plot roc runs/ce runs/adafocal (or runs/ce/ood-svhn.json runs/adafocal/ood-svhn.json)",
)
@guarded
def roc(
    reports: Annotated[list[Path], typer.Argument(metavar="OOD_JSON", help="ood-<set>.json reports or run folders.",
                                                  show_default=False)],
    score: Annotated[str, typer.Option("--score", help="OOD score whose ROC to draw: entropy, max-prob or energy.")]
    = "entropy",
    labels: LabelsOption = None,
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.commands.plot import run_plot_roc

    _report(run_plot_roc(reports, score=score, labels=labels, out=out, force=force, dpi=dpi, title=title))


@plot_app.command(
    "risk-coverage",
    help="Risk-coverage curves of selective prediction: the error among the samples accepted (selective risk, %) "
    "against the share accepted (coverage, %), the most confident first, tied confidences accepted together, several "
    "inputs side by side on one axes, AURC in the legend. Each input's oracle (dashed: every right answer accepted "
    "before any wrong one) and random reference (dotted: its error rate at every coverage) are drawn in its colour. "
    "INPUT is a run folder, a checkpoint or a predictions file (class scores or confidence/correct pairs), its test "
    "split read as `adacal evaluate` reads it; an input given twice is drawn once.\n\n"
    "Example: adacal plot risk-coverage runs/ce runs/adafocal --labels CE,AdaFocal",
)
@guarded
def risk_coverage(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help="Run folders or predictions files.",
                                                 show_default=False)],
    labels: LabelsOption = None,
    labels_file: Annotated[Optional[Path], typer.Option("--labels-file", help="File of labels for predictions files "
                                                        "saved without them (as evaluate's --labels; here --labels "
                                                        "names the curves).", show_default=False)] = None,
    data_dir: Annotated[Optional[Path], typer.Option("--data-dir", help="Dataset folder, when a checkpoint must be "
                                                     "run on its test split.", show_default=False)] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N (when a checkpoint must be "
                                        "run).")] = "auto",
    logits_key: LogitsKey = None,
    labels_key: LabelsKey = None,
    renormalize: Renormalize = False,
    scores_kind: ScoresKind = "auto",
    header: Header = None,
    separator: Separator = None,
    pt_items: PtItems = None,
    labels_are: LabelsAre = None,
    score_columns: ScoreColumns = None,
    classes: ClassNames = None,
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.cli.inputs import print_notes, read_options
    from adacal.commands.plot import run_plot_risk_coverage

    options = read_options(logits_key, labels_key, labels_file, renormalize, scores_kind, header, separator,
                           pt_items, labels_are=labels_are, score_columns=score_columns, classes=classes)
    run = run_plot_risk_coverage(inputs, labels=labels, options=options, data_dir=data_dir, device=device, out=out,
                                 force=force, dpi=dpi, title=title)
    _report(run)
    print_notes(run.notes, quiet=False)


@plot_app.command(
    "conformal",
    help="Conformal prediction sets side by side: test coverage against alpha (error bars: 95 % Clopper-Pearson; "
    "dashed: the target 1 - alpha) and the set-size histogram at one alpha. INPUT is a report 'adacal conformal "
    "--json' wrote (drawn as it is), or a run folder or predictions file as 'adacal conformal' reads it, fitted here "
    "at --alpha (default 0.05,0.1,0.15,0.2,0.3) with --score, after --calibrator when given.\n\n"
    "Example: adacal plot conformal ce.json ce-temperature.json adafocal.json --labels CE,CE+T,AdaFocal",
)
@guarded
def conformal(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help="Conformal reports, run folders or "
                                                 "predictions files.", show_default=False)],
    alpha: Annotated[Optional[str], typer.Option("--alpha", help="Levels to fit at, comma-separated (not for "
                                                 "reports).", show_default=False)] = None,
    score: Annotated[Optional[str], typer.Option("--score", help="thr, aps (default), raps or topk (not for "
                                                 "reports).", show_default=False)] = None,
    calibrator: Annotated[Optional[Path], typer.Option("--calibrator", help="A saved calibrator applied first (not "
                                                       "for reports).", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the randomised scores and RAPS's tuning split.")] = 0,
    size_alpha: Annotated[Optional[float], typer.Option("--size-alpha", help="The alpha whose set sizes the "
                                                        "histogram shows (default 0.1 when every input has it).",
                                                        show_default=False)] = None,
    labels: LabelsOption = None,
    labels_file: Annotated[Optional[Path], typer.Option("--labels-file", help="File of labels for test predictions "
                                                        "saved without them (with --val in 'adacal conformal'; here "
                                                        "--labels names the inputs).", show_default=False)] = None,
    logits_key: LogitsKey = None,
    labels_key: LabelsKey = None,
    scores_kind: ScoresKind = "auto",
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.cli.inputs import read_options
    from adacal.commands.plot import run_plot_conformal

    options = read_options(logits_key, labels_key, labels_file, False, scores_kind)
    _report(run_plot_conformal(inputs, alpha=alpha, score=score, calibrator=calibrator, seed=seed,
                               size_alpha=size_alpha, labels=labels, options=options, out=out, force=force, dpi=dpi,
                               title=title))


@plot_app.command(
    "shift",
    help="Calibration under dataset shift (Ovadia et al. 2019): a metric against corruption severity, clean first, "
    "one box per input at each severity over its corruptions (whiskers: min-max), inputs side by side, before and "
    "after temperature scaling on one y-scale, from the reports `adacal shift` writes (RUN/shift.json) or run folders "
    "holding them. The title says whether the sets were generated by adacal or read from Hendrycks' files.\n\n"
    "Example: adacal plot shift runs/ce runs/adafocal --metric ece-em",
)
@guarded
def shift(
    reports: Annotated[list[Path], typer.Argument(metavar="SHIFT_JSON", help="shift*.json reports or run folders.",
                                                  show_default=False)],
    metric: Annotated[str, typer.Option("--metric", help="ece-em, ece-ew, ece-debias, error or nll.")] = "ece-em",
    labels: LabelsOption = None,
    out: OutOption = None,
    force: ForceOption = False,
    dpi: DpiOption = 150,
    title: TitleOption = None,
) -> None:
    from adacal.commands.plot import run_plot_shift

    _report(run_plot_shift(reports, metric=metric, labels=labels, out=out, force=force, dpi=dpi, title=title))
