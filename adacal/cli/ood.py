"""`adacal ood`: out-of-distribution detection (softmax entropy and friends) before and after temperature scaling."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import ForceOption, guarded
from adacal.cli.inputs import LabelsKey, LogitsKey, Renormalize, read_options
from adacal.errors import InputError

HELP = (
    "Out-of-distribution detection: how well a classifier's softmax tells its test set from an OOD set.\n\n"
    "Scores every sample (higher = more OOD: softmax entropy by default; also max-prob and energy) and reports AUROC, "
    "AUPR-in, AUPR-out and FPR at 95% TPR, with OOD as the positive class, before and after temperature scaling. "
    "The temperature is --temperature T, else --fit-temperature (fitted on the validation logits, minimising ECE_EM "
    "as the paper does), else the one in the run's calibrate.json if there is one.\n\n"
    "From a trained adacal model (a run folder or checkpoint), writing one report per OOD set into the run folder "
    "(ood-svhn.json, ood-cifar10-c-gaussian_noise-5.json, ood-<stem>.json for an image file) or to --json PATH (a "
    "checkpoint outside a run folder without --json: the table only). --in defaults to the dataset the model was "
    "trained on. A model trained with --test-subset m is compared with m OOD images (for CIFAR-10-C the corrupted "
    "copies of the same m images).\n\n"
    "  adacal ood --out svhn --model runs/RUN\n\n"
    "  adacal ood --out cifar10-c --corruption fog --severity 5 --model runs/RUN --data-dir DIR\n\n"
    "CIFAR-10-C: Hendrycks' published files are read from --data-dir (DIR/CIFAR-10-C/<corruption>.npy and "
    "labels.npy; all 19 corruptions); without them gaussian_noise is generated (the report says which).\n\n"
    "From saved outputs of any model (.npz, .pt, .npy or .csv with `logits`, `probs` or `scores`, or `test_logits` as "
    "in predictions.npz, or the key --logits-key names; labels optional), printing the table, and writing a report "
    "only with --json PATH:\n\n"
    "  adacal ood --in-preds cifar10_logits.npz --out-preds svhn_logits.npz --json ood.json"
)


def register(app: typer.Typer) -> None:
    @app.command("ood", help=HELP)
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
                                       ".npz file of uint8 HWC images under key x or test_x. With --out-preds: only a "
                                       "name for the report."),
        ] = None,
        model: Annotated[
            Path | None, typer.Option("--model", help="Run folder or checkpoint written by 'adacal train'.")
        ] = None,
        in_preds: Annotated[
            Path | None,
            typer.Option("--in-preds", help="Saved in-distribution logits (.npz/.pt with `logits` or `test_logits`)."),
        ] = None,
        out_preds: Annotated[
            Path | None, typer.Option("--out-preds", help="Saved OOD logits (.npz/.pt with `logits` or `test_logits`).")
        ] = None,
        corruption: Annotated[
            str | None,
            typer.Option("--corruption", help="Corruption of the OOD images (default for --out cifar10-c): any of Hendrycks' "
                                              "19 from the CIFAR-10-C files, or gaussian_noise generated. "
                                              "[default: gaussian_noise]"),
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
    ) -> None:
        from adacal import ood as lib
        from adacal.reports import write_json
        from adacal.writing import check_output, is_stdout

        from adacal.runs import find_run_folder

        model_run = find_run_folder(model) if model is not None else None  # its calibrate.json gives T
        check_output(json_path, flag="--json", force=force, inputs=(
            model, in_preds, out_preds, model_run.report("calibrate.json") if model_run is not None else None))
        score_names = lib.check_score_names(scores)
        if json_path is not None and json_path.is_dir():
            raise InputError(f"Expected --json to be a file path, but {json_path} is a folder.")
        if model is not None and (in_preds is not None or out_preds is not None):
            raise InputError("Expected either --model or --in-preds/--out-preds, not both.")
        if temperature is not None:
            lib.check_temperature(temperature)
            if fit_temperature:
                raise InputError("Expected either --temperature or --fit-temperature, not both.")
        if severity is not None and severity not in lib.SEVERITIES:
            raise InputError(f"Expected --severity to be an integer from 1 to 5, got {severity}.")

        if model is not None:
            if logits_key is not None or labels_key is not None or renormalize:
                raise InputError("Expected --logits-key, --labels-key and --renormalize only with --in-preds/--out-preds.")
            if out_name is None:
                raise InputError("Expected --out (the OOD set: a dataset name, cifar10-c or an .npz of images) with --model.")
            in_name, out_name, corruption, severity = lib.check_ood_options(
                in_name=in_name, out_name=out_name, corruption=corruption, severity=severity
            )
            _, run = lib.resolve_checkpoint(model)
            run_dir = run.root if run is not None else None
            if not fit_temperature:  # option or calibrate.json: settled before the long work
                value, source = lib.resolve_temperature(
                    temperature=temperature, calibration=run_dir / "calibrate.json" if run_dir is not None else None
                )
            with _status("Scoring the in-distribution and OOD sets", quiet):
                in_logits, out_logits, info = lib.ood_from_model(
                    model, in_name=in_name, out_name=out_name, corruption=corruption, severity=severity,
                    data_dir=data_dir, device=device, batch_size=batch_size, seed=seed, limit=limit,
                    download=download, with_val=fit_temperature,
                )
            if fit_temperature:
                value, source = lib.resolve_temperature(fit=True, val=info.get("val"))
            in_name = info["in"]
            report_name = lib.ood_report_name(out_name, corruption, severity)
            target = json_path or (run_dir / report_name if run_dir is not None else None)
            out_label = out_name if corruption is None else f"{out_name} {corruption} s{severity}"
            sources = {"model": str(model), "checkpoint": info["checkpoint"], "in_preds": None, "out_preds": None,
                       "in_source": info["in_source"], "data_dir": None if data_dir is None else str(data_dir),
                       "limit": limit, "seed": seed, "out_source": info["out_source"], "out_files": info["out_files"],
                       "out_size": info["out_size"], "out_subsample": info["out_subsample"]}
        elif in_preds is not None or out_preds is not None:
            if in_preds is None or out_preds is None:
                raise InputError("Expected both --in-preds and --out-preds (saved logits), got only one.")
            for flag, given in (("--corruption", corruption), ("--severity", severity), ("--data-dir", data_dir),
                                ("--limit", limit)):
                if given is not None:
                    raise InputError(f"Expected {flag} only with --model, not with --in-preds/--out-preds.")
            from adacal.sources import resolve_ood_inputs

            in_logits, out_logits, val = resolve_ood_inputs(
                in_preds, out_preds, options=read_options(logits_key, labels_key, None, renormalize),
                with_val=fit_temperature,
            )
            value, source = lib.resolve_temperature(temperature=temperature, fit=fit_temperature, val=val)
            in_name = in_name or in_preds.stem
            out_name = out_name or out_preds.stem
            out_label = out_name
            target = json_path
            sources = {"model": None, "checkpoint": None, "in_preds": str(in_preds), "out_preds": str(out_preds)}
        else:
            raise InputError("Expected --model (with --out) or --in-preds and --out-preds.")

        results = lib.detect_ood(
            in_logits, out_logits, scores=score_names, temperature=value, temperature_source=source,
            in_name=in_name, out_name=out_label,
        )
        edge = lib.temperature_edge(value, objective=lib.FIT_OBJECTIVE) if source == "fitted" else None
        config = {"in": in_name, "out": out_name, "corruption": corruption, "severity": severity,
                  "scores": list(score_names), **sources, "temperature": value, "temperature_source": source,
                  "temperature_edge": edge}
        report = lib.ood_report(results, config=config)
        written = write_json(target, report) if target is not None else None
        if is_stdout(json_path):
            return  # the report is the whole of stdout
        if quiet:
            typer.echo(_summary_line(results))
        else:
            _print_table(results, written, _notes(results, config))


def _summary_line(results: dict[str, Any]) -> str:
    """`-q`: AUROC of each score before → after temperature scaling, on one line."""
    parts = []
    for name, entry in results["scores"].items():
        text = f"{name} AUROC {100 * entry['pre']['auroc']:.2f}%"
        if results["temperature"] is not None:
            text += f" ({100 * entry['post']['auroc']:.2f}% after T = {results['temperature']:.3g})"
        parts.append(text)
    return "  ".join(parts)


def _status(message: str, quiet: bool) -> Any:
    """A spinner on an interactive terminal; nothing otherwise (keeps piped output and tests clean)."""
    import contextlib

    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        return contextlib.nullcontext()
    return console.status(message)


def _notes(results: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """What a reader of the table must know: where the OOD images came from, a subsampled OOD set, sets of
    different sizes, a temperature fitted at the edge of its search range."""
    notes = []
    if config.get("out_source") == "hendrycks-files":
        notes.append(f"OOD images: Hendrycks' CIFAR-C file {config['out_files'][0]}.")
    elif config.get("out_source") == "generated":
        missing = " (no Hendrycks CIFAR-C file for it in the data folder)" if str(config["out"]).endswith("-c") else ""
        notes.append(f"OOD images: {config['corruption']} generated by adacal{missing}.")
    subsample = config.get("out_subsample")
    if subsample:
        notes.append(f"OOD set subsampled from {subsample['from']} to {subsample['to']}: {subsample['reason']}.")
    n_in, n_out = results["in"]["n"], results["out"]["n"]
    if n_in != n_out:
        notes.append(f"The sets differ in size ({n_in} in-distribution, {n_out} OOD): AUROC and FPR@95 do not "
                     "depend on the ratio, AUPR-in and AUPR-out do.")
    edge = config.get("temperature_edge")
    if edge:
        low, high = edge["range"]
        notes.append(f"The fitted T = {config['temperature']:.3g} is at the {edge['edge']} edge of its search range "
                     f"[{low:g}, {high:g}]: the best T may lie beyond it.")
    return notes


def _print_table(results: dict[str, Any], written: Path | None, notes: list[str] = ()) -> None:
    from rich.console import Console
    from rich.table import Table

    post = results["temperature"] is not None
    title = (
        f"OOD detection: {results['in']['name']} (n={results['in']['n']}) vs "
        f"{results['out']['name']} (n={results['out']['n']})"
    )
    caption = (
        f"post: logits / T, T = {results['temperature']:.3g} ({results['temperature_source']})" if post
        else "no temperature: see --temperature, --fit-temperature"
    )
    table = Table(title=title, caption=caption)
    table.add_column("score")
    columns = [("auroc", "AUROC %"), ("aupr_in", "AUPR-in %"), ("aupr_out", "AUPR-out %"), ("fpr_at_95_tpr", "FPR@95 %")]
    for _, label in columns:
        table.add_column(f"{label} pre", justify="right")
        if post:
            table.add_column(f"{label} post", justify="right")
    for name, entry in results["scores"].items():
        row = [name]
        for key, _ in columns:
            row.append(f"{100 * entry['pre'][key]:.2f}")
            if post:
                row.append(f"{100 * entry['post'][key]:.2f}")
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:  # piped or captured: wide enough that the table never wraps
        console = Console(width=140 if post else 100)
    console.print(table)
    for note in notes:
        console.print(f"Note: {note}", soft_wrap=True, highlight=False, markup=False)
    if written is not None:
        console.print(f"Wrote {written}", soft_wrap=True, highlight=False)
