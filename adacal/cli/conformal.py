"""`adacal conformal`: split-conformal prediction sets fitted on validation, their coverage and sizes on test."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from adacal.cli.common import ForceOption, guarded, number, table_console
from adacal.cli.inputs import (
    ClassNames, Header, LabelsAre, LabelsFile, LabelsKey, LogitsKey, PtItems, Renormalize, ScoreColumns, ScoresKind,
    Separator, print_notes, read_options,
)

HELP = (
    "Conformal prediction sets: fit the set threshold on validation predictions, report coverage and set sizes on "
    "test.\n\n"
    "RUN_OR_PREDICTIONS is what 'adacal calibrate' reads: a run folder (its val and test predictions), a predictions "
    "file holding val_ and test_ logits and labels, or the test predictions of any framework with --val FILE. For "
    "each --alpha, the sets hold the true class with probability at least 1 - alpha on exchangeable data (split "
    "conformal, the finite-sample quantile ceil((n+1)(1-alpha))/n). Scores: thr (alias lac, 1 - p of the class), "
    "aps (Romano et al. 2020), raps (Angelopoulos et al. 2021; k_reg and lambda chosen on a seeded 30 % of "
    "validation as the paper does, unless --k-reg/--lam give them) or topk. --calibrator applies a saved calibrator "
    "('adacal calibrate --save') to both splits first. The table gives, per alpha, the test coverage with its 95 % "
    "Clopper-Pearson interval, mean and median set size, singleton and empty-set rates and the worst class's "
    "coverage; a second table the share of rows and the coverage per set size. --json writes everything (coverage "
    "per class too); --save the fitted predictors, which --predictor FILE applies to other test predictions (from "
    "Python: adacal.conformal.load_predictors).\n\n"
    "Example: adacal conformal runs/RUN --alpha 0.05,0.1,0.2 --score aps\n\n"
    "Example: adacal conformal test.npz --val val.npz --calibrator temperature.json --save sets.json"
)

SIZE_BUCKETS = 7  # sizes 0..5 one column each, then "6+"


def _pct(value: Any) -> str:
    return "-" if value is None else number(100 * value, 1)


def _bucket(size: int) -> str:
    return str(size) if size < SIZE_BUCKETS - 1 else f"{SIZE_BUCKETS - 1}+"


def size_table_rows(level: dict[str, Any]) -> tuple[dict[str, float], dict[str, float | None]]:
    """Per size column (0..5, 6+): the share of test rows and their coverage, from a level of results.levels."""
    counts: dict[str, int] = {}
    covered: dict[str, float] = {}
    for size, entry in level["coverage_by_size"].items():
        key = _bucket(int(size))
        counts[key] = counts.get(key, 0) + entry["n"]
        covered[key] = covered.get(key, 0.0) + entry["n"] * entry["coverage"]
    shares = {key: count / level["n"] for key, count in counts.items()}
    return shares, {key: covered[key] / counts[key] for key in counts}


def _print_tables(run: Any) -> None:
    from rich import box
    from rich.table import Table

    results = run.results
    console = table_console()
    fitted = (f"fitted on {run.n_val} validation rows" if run.n_val is not None
              else f"saved predictor {run.report['config'].get('predictor')}")
    table = Table(title=f"Conformal sets ({results['score']}"
                        f"{', class-conditional' if results['class_conditional'] else ''}"
                        f"{', after the calibrator' if results['calibrated'] else ''}): coverage and size in %",
                  caption=f"{fitted}, tested on {run.n_test}; interval: 95 % Clopper-Pearson; mean, median: set "
                          "size; single, empty: rows with 1 and 0 classes",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for header in ("alpha", "target", "covered", "interval", "mean", "median", "single", "empty", "worst class"):
        table.add_column(header, justify="left" if header == "worst class" else "right", no_wrap=True)
    classes = results.get("classes")
    for level in results["levels"]:
        low, high = level["coverage_interval"]
        worst = level["worst_class"]
        name = classes[worst["class"]] if classes else str(worst["class"])
        table.add_row(f"{level['alpha']:g}", _pct(level["target_coverage"]), _pct(level["coverage"]),
                      f"{_pct(low)}-{_pct(high)}", number(level["mean_set_size"], 2),
                      f"{level['median_set_size']:g}", _pct(level["singleton_rate"]), _pct(level["empty_rate"]),
                      f"{name[:10]}: {_pct(worst['coverage'])}")
    console.print(table)
    sizes = Table(title="Set sizes: share of test rows and their coverage (%)", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    sizes.add_column("alpha", justify="right", no_wrap=True)
    sizes.add_column("", no_wrap=True)
    columns = [_bucket(size) for size in range(SIZE_BUCKETS)]
    for column in columns:
        sizes.add_column(f"size {column}", justify="right", no_wrap=True)
    for level in results["levels"]:
        shares, coverage = size_table_rows(level)
        sizes.add_row(f"{level['alpha']:g}", "rows", *(_pct(shares.get(column, 0.0)) for column in columns))
        sizes.add_row("", "covered", *(_pct(coverage.get(column)) for column in columns), end_section=True)
    console.print(sizes)


@guarded
def conformal(
    source: Annotated[Path, typer.Argument(metavar="RUN_OR_PREDICTIONS", help="Run folder, or a .npz/.pt with "
                                           "val_ and test_ logits and labels, or test predictions with --val.",
                                           show_default=False)],
    alpha: Annotated[Optional[str], typer.Option("--alpha", help="Miscoverage level(s) in (0, 1), comma-separated: "
                                                 "sets cover 1 - alpha (default 0.1).", show_default=False)] = None,
    score: Annotated[Optional[str], typer.Option("--score", help="Score: thr (alias lac), aps (default), raps or "
                                                 "topk.", show_default=False)] = None,
    class_conditional: Annotated[bool, typer.Option("--class-conditional", help="One threshold per class (Mondrian): "
                                                    "the coverage holds for each class; every class must be in "
                                                    "validation.")] = False,
    k_reg: Annotated[Optional[int], typer.Option("--k-reg", help="RAPS's k_reg (default: chosen on validation).",
                                                 show_default=False)] = None,
    lam: Annotated[Optional[float], typer.Option("--lam", help="RAPS's lambda (default: chosen on validation from "
                                                 "0.001, 0.01, 0.1, 0.2, 0.5).", show_default=False)] = None,
    randomized: Annotated[Optional[bool], typer.Option("--randomized/--no-randomized", help="APS/RAPS: subtract "
                                                       "U*p (exact coverage; default) or not.",
                                                       show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the randomised scores' U and of RAPS's tuning split.")] = 0,
    calibrator: Annotated[Optional[Path], typer.Option("--calibrator", help="A calibrator 'adacal calibrate --save' "
                                                       "wrote, applied to validation and test first.",
                                                       show_default=False)] = None,
    val: Annotated[Optional[Path], typer.Option("--val", help="Validation predictions to fit on (any format evaluate "
                                                "reads); RUN_OR_PREDICTIONS then holds the test predictions.",
                                                show_default=False)] = None,
    predictor: Annotated[Optional[Path], typer.Option("--predictor", help="Predictors '--save' wrote: apply them to "
                                                      "the test predictions of RUN_OR_PREDICTIONS instead of "
                                                      "fitting.", show_default=False)] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the report here ('-': to stdout, and "
                                                      "nothing else goes there).", show_default=False)] = None,
    save: Annotated[Optional[Path], typer.Option("--save", help="Save the fitted predictors (one per alpha) as JSON.",
                                                 show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="One line per alpha instead of the tables.")] = False,
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
    """Conformal prediction sets fitted on validation, judged on test."""
    from adacal.commands import is_stdout
    from adacal.commands.conformal import run_conformal

    run = run_conformal(
        source, alpha=alpha, score=score, class_conditional=class_conditional, k_reg=k_reg, lam=lam,
        randomized=randomized, seed=seed, calibrator=calibrator, val=val, predictor=predictor, json_path=json_path,
        save=save, force=force,
        options=read_options(logits_key, labels_key, labels, renormalize, scores_kind, header, separator, pt_items,
                             labels_are=labels_are, score_columns=score_columns, classes=classes),
    )
    print_notes(run.notes, quiet, run.reading)
    if is_stdout(json_path) or is_stdout(save):
        return
    if quiet:
        for level in run.results["levels"]:
            typer.echo(f"alpha {level['alpha']:g}: coverage {_pct(level['coverage'])}% (target "
                       f"{_pct(level['target_coverage'])}%), mean set size {number(level['mean_set_size'], 2)}")
    else:
        _print_tables(run)
    if run.written is not None:
        typer.echo(f"Wrote {run.written}")
    if run.saved is not None:
        typer.echo(f"Saved {len(run.predictors)} conformal predictor(s) to {run.saved}")
