"""`adacal ood`: out-of-distribution detection (softmax entropy and friends) before and after temperature scaling."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import ForceOption, guarded, table_console
from adacal.cli.inputs import LabelsKey, LogitsKey, Renormalize, ScoresKind, Header, Separator, PtItems, read_options
from adacal.cli.inputs import ClassNames, LabelsAre, ScoreColumns

HELP = (
    "Out-of-distribution detection: how well a classifier's softmax tells its test set from an OOD set.\n\n"
    "Scores every sample (higher = more OOD: softmax entropy by default; also max-prob and energy) and reports AUROC, "
    "AUPR-in, AUPR-out and FPR at 95% TPR, with OOD as the positive class, before and after temperature scaling. "
    "The temperature is --temperature T, else --fit-temperature (fitted on the validation logits, minimising ECE_EM "
    "as the paper does), else the one in the run's calibrate.json if there is one.\n\n"
    "From a trained adacal model (a run folder or checkpoint), writing one report per OOD set into the run folder "
    "(ood-svhn.json, ood-cifar10-c-gaussian_noise-5.json, ood-<stem>.json for an image file) or to --json PATH (a "
    "checkpoint outside a run folder without --json: the table only). A vector model (digits) takes an .npz of "
    "float feature vectors (N, *input shape) instead of images. --in defaults to the dataset the model was "
    "trained on. A model trained with --test-subset m is compared with m OOD images (for CIFAR-10-C the corrupted "
    "copies of the same m images).\n\n"
    "  adacal ood --out svhn --model runs/RUN\n\n"
    "  adacal ood --out cifar10-c --corruption fog --severity 5 --model runs/RUN --data-dir DIR\n\n"
    "CIFAR-10-C: Hendrycks' published files are read from --data-dir (DIR/CIFAR-10-C/<corruption>.npy and "
    "labels.npy; all 19 corruptions); without them 16 of the 19 are generated from the CIFAR-10 test set (all but "
    "frost, snow and spatter; docs/corruptions.md), and the report says which.\n\n"
    "From saved outputs of any model (.npz, .pt, .npy, .txt, .safetensors, .mat, .csv, .tsv, .json or .jsonl with "
    "`logits`, `probs` or `scores`, or `test_logits` as in predictions.npz, or the key --logits-key names; labels "
    "optional), printing the table, and writing a report only with --json PATH:\n\n"
    "  adacal ood --in-preds cifar10_logits.npz --out-preds svhn_logits.npz --json ood.json"
)


@guarded
def ood(
    in_name: Annotated[
        str | None,
        typer.Option("--in", help="In-distribution dataset, e.g. cifar10. [default with --model: the dataset the "
                                  "model was trained on] With --in-preds: only a name for the report."),
    ] = None,
    out_name: Annotated[
        str | None,
        typer.Option("--out", help="OOD set: a dataset name (svhn, cifar100, ...; its test split), cifar10-c, or an "
                                   ".npz file under key x or test_x of uint8 HWC images (image models) or float "
                                   "feature vectors (N, D) as the training dataset's loader makes them (vector models, "
                                   "e.g. digits: (N, 64) in [0, 1]). With --out-preds: only a name for the report."),
    ] = None,
    model: Annotated[
        Path | None, typer.Option("--model", help="Run folder or checkpoint written by 'adacal train'.")
    ] = None,
    in_preds: Annotated[
        Path | None,
        typer.Option("--in-preds", help="Saved in-distribution scores, logits or probabilities (any predictions "
                                        "file, e.g. .npz/.pt with `logits`, `probs` or `test_logits`; their kind "
                                        "decided as --scores-kind says)."),
    ] = None,
    out_preds: Annotated[
        Path | None, typer.Option("--out-preds", help="Saved OOD scores, logits or probabilities, read by the "
                                                      "same rules as --in-preds.")
    ] = None,
    corruption: Annotated[
        str | None,
        typer.Option("--corruption", help="Corruption of the OOD images (default for --out cifar10-c): any of "
                                          "Hendrycks' 19 from the CIFAR-10-C files, or one of the 16 adacal "
                                          "generates. [default: gaussian_noise]"),
    ] = None,
    severity: Annotated[
        int | None, typer.Option("--severity", help="Corruption severity, 1-5. [default: 5]")
    ] = None,
    scores: Annotated[
        str, typer.Option("--scores", help="Comma-separated OOD scores: entropy, max-prob, energy.")
    ] = "entropy",
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Temperature T for the post-scaling results (logits / T).")
    ] = None,
    fit_temperature: Annotated[
        bool,
        typer.Option("--fit-temperature", help="Fit T on the validation logits (of the run, or val_logits/val_labels "
                                               "in --in-preds), minimising ECE_EM."),
    ] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Dataset folder. [default: $ADACAL_DATA or ~/.cache/adacal]")
    ] = None,
    download: Annotated[
        bool, typer.Option("--download/--no-download", help="Download a missing dataset (torchvision) or fail.")
    ] = True,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Images per forward pass.")] = 512,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Score a seeded random N of each set (quick checks). [default: all]"),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for --limit and the corruption noise.")] = 0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the report here (instead of ood-<set>.json in the run "
                                  "folder; '-': to stdout, and nothing else goes there).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print one summary line instead of the table.")] = False,
    force: ForceOption = False,
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
) -> None:
    """Out-of-distribution detection before and after temperature scaling."""
    from adacal.commands.ood import run_ood
    from adacal.commands import is_stdout

    run = run_ood(
        in_name=in_name, out_name=out_name, model=model, in_preds=in_preds, out_preds=out_preds,
        corruption=corruption, severity=severity, scores=scores, temperature=temperature,
        fit_temperature=fit_temperature, data_dir=data_dir, download=download, device=device,
        batch_size=batch_size, limit=limit, seed=seed, json_path=json_path, force=force,
        options=read_options(logits_key, labels_key, None, renormalize, scores_kind, header, separator, pt_items,
                             labels_are=labels_are, score_columns=score_columns, classes=classes),
        status=_status(quiet),
    )
    if not quiet:
        for line in run.reading:  # how the saved sets were read, as evaluate and calibrate say it
            typer.echo(f"Note: {line}.", err=True)
    if is_stdout(json_path):
        for note in run.notes:  # the report is the whole of stdout; what it assumed still reaches the user
            typer.echo(f"Note: {note}", err=True)
        return
    if quiet:
        typer.echo(_summary_line(run.results))
    else:
        _print_table(run.results, run.written, run.notes)


def _summary_line(results: dict[str, Any]) -> str:
    """`-q`: AUROC of each score before → after temperature scaling, on one line."""
    parts = []
    for name, entry in results["scores"].items():
        text = f"{name} AUROC {100 * entry['pre']['auroc']:.2f}%"
        if results["temperature"] is not None:
            text += f" ({100 * entry['post']['auroc']:.2f}% after T = {results['temperature']:.3g})"
        parts.append(text)
    return "  ".join(parts)


def _status(quiet: bool) -> Any:
    """A spinner on an interactive terminal around the library's long scoring; None otherwise (keeps piped output
    and tests clean)."""
    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        return None
    return console.status


def _print_table(results: dict[str, Any], written: Path | None, notes: list[str] = ()) -> None:
    """One row per score and logits (as given, and / T when there is a temperature): fits 80 columns whatever the
    number of scores. Notes go to stderr, as every command's do."""
    from rich.markup import escape
    from rich.table import Table

    post = results["temperature"] is not None
    title = (
        f"OOD detection: {results['in']['name']} (n={results['in']['n']}) vs "
        f"{results['out']['name']} (n={results['out']['n']})"
    )
    caption = (
        f"/ T: logits divided by T = {results['temperature']:.3g} ({results['temperature_source']})" if post
        else "no temperature: see --temperature, --fit-temperature"
    )
    table = Table(title=escape(title), caption=escape(caption))  # names come from file names: never markup
    table.add_column("score", no_wrap=True)
    table.add_column("logits", no_wrap=True)
    columns = [("auroc", "AUROC %"), ("aupr_in", "AUPR-in %"), ("aupr_out", "AUPR-out %"),
               ("fpr_at_95_tpr", "FPR@95 %")]
    for _, label in columns:
        table.add_column(label, justify="right", no_wrap=True)
    for name, entry in results["scores"].items():
        table.add_row(name, "as given", *(f"{100 * entry['pre'][key]:.2f}" for key, _ in columns),
                      end_section=not post)
        if post:
            table.add_row("", "/ T", *(f"{100 * entry['post'][key]:.2f}" for key, _ in columns), end_section=True)
    console = table_console()
    console.print(table)
    for note in notes:
        typer.echo(f"Note: {note}", err=True)
    if written is not None:
        console.print(f"Wrote {written}", soft_wrap=True, highlight=False, markup=False)
