"""Shared pieces of the calibration-quality benchmarks (quality_cifar10.py, quality_20newsgroups.py).

The grid is losses × arms × seeds. Each cell is one training run through `adacal.training.train` in its own folder
`<out>/<dataset>-<model>-<loss>[-<arm>]-s<seed>/<run>` (outside the repository), analysed once, and its figures
written (atomically, as soon as the run finishes) to a small JSON committed with the repository:

    benchmarks/results/quality_runs/<dataset>/<loss>-<arm>-seed<k>.json

Each result file carries `key`, a hash of the resolved training options that change what is trained (not where
data or runs live) and of the analysis protocol. A cell whose result file holds the key the current options give is
done: the scripts skip it, so the grid resumes across sessions and machines even when the run folders are gone; a
changed protocol gives another key and the cell runs again. Summaries (mean ± std over seeds per loss and arm), tables
and figures are rebuilt from the result files alone.

The pieces live in modules of their own, all re-exported here, where the scripts and tests find them:
quality_protocol.py (the losses, arms, paths and result keys), quality_training.py (train or reuse a run folder),
quality_analysis.py (`analyse_run`, the temperature fits), quality_summary.py (summaries, tables, figures, the paper's
figures) and quality_files.py (the result files). This module holds the grid's cells, the options both scripts
take, and `run_benchmark`.

- `LOSS_SPECS`: the compared losses by benchmark name ("focal-3" = focal with γ = 3, "ls-0.05" = label smoothing 0.05).
- `ARMS`: "mean" (adacal's default dynamics: loss averaged over the batch, no clipping) and "sum-clip" (the reference
  code's: loss summed over the batch, gradient norm clipped to 2), the latter only where TrainConfig has those options.
- `analyse_run`: test metrics before and after temperature scaling, T fitted on the run's own validation logits two
  ways — the paper's grid T ∈ {0.1, 0.2, …, 10} minimising validation ECE-EM, and the T minimising validation NLL —
  plus the reliability bins, the training history (curves, AdaFocal's γ-updates) and AdaFocal's last per-bin state.

Metrics in the JSON are fractions (keys say so); tables show %.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

# quality_protocol first: it puts the checkout on sys.path (the scripts run without installing adacal).
from quality_protocol import (  # noqa: F401  (re-exported)
    ANALYSIS_PROTOCOL, ARM_DEFAULTS, ARM_NOTES, ARMS, DISPLAY, KEY_SPELLING, LOSS_SPECS, PLOTS_DIR, PROTOCOL_KEYS,
    RESULTS_DIR, ROOT, RUNS_DIR, SHARED_DATA, VARIANTS, arm_of, loss_protocol, protocol_key, protocol_options,
    repo_relative, variant_schedule, with_loss_defaults)

import adacal
from quality_analysis import (  # noqa: F401  (re-exported)
    METRICS, N_BINS, T_GRID, analyse_run, fit_temperature_grid, fit_temperature_nll, flat_figures, read_history)
from quality_files import (  # noqa: F401
    RESULT_SCHEMA, commit_file, keep_predictions, predictions_path, predictions_record_path, read_predictions_record,
    read_result, result_path, write_predictions_record, write_result)
from quality_summary import (  # noqa: F401  (re-exported)
    GAMMA_PLOT_BINS, LATER_PAPERS_CIFAR10, OOD_COLUMNS, PAPER_20NG_CNN, PAPER_CIFAR10_RESNET50, PAPER_COLUMNS,
    TABLE_COLUMNS, device_of, draw_figures, later_paper_rows, markdown_table, mean_std, paper_rows, per_bin_table,
    summarise, table_rows, text_table)
from quality_training import EpochPrinter, gpu_name, machine_info, set_threads, train_or_reuse  # noqa: F401


# ------------------------------------------------------------------------------------------------ options


def parse_losses(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise SystemExit("Error: expected at least one loss in --losses.")
    for name in names:
        if name not in LOSS_SPECS:
            raise SystemExit(f"Error: unknown loss '{name}' in --losses (choices: {', '.join(LOSS_SPECS)}).")
    return names


def parse_ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"Error: expected {what} as comma-separated integers, got {text!r}.") from None
    if not values:
        raise SystemExit(f"Error: expected at least one value for {what}.")
    return values


def train_config_fields() -> set[str]:
    from adacal.training import TrainConfig

    return {field.name for field in dataclasses.fields(TrainConfig)}


def missing_arm_options(arm: str, fields: set[str] | None = None) -> list[str]:
    """The TrainConfig options `arm` needs that this adacal lacks (an option left at its default needs nothing)."""
    fields = train_config_fields() if fields is None else fields
    return sorted(k for k, v in ARMS[arm].items() if k not in fields and v != ARM_DEFAULTS.get(k))


def available_arms(fields: set[str] | None = None) -> list[str]:
    return [arm for arm in ARMS if not missing_arm_options(arm, fields)]


def parse_arms(text: str | None, fields: set[str] | None = None) -> list[str]:
    """`--arms mean,sum-clip`; None means every arm this adacal can train. An arm it cannot train is refused."""
    if text is None:
        return available_arms(fields)
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise SystemExit("Error: expected at least one arm in --arms.")
    for name in names:
        if name not in ARMS:
            raise SystemExit(f"Error: unknown arm '{name}' in --arms (choices: {', '.join(ARMS)}).")
        missing = missing_arm_options(name, fields)
        if missing:
            raise SystemExit(f"Error: arm '{name}' needs TrainConfig option(s) {', '.join(missing)}, which this adacal "
                             f"({adacal.__version__}) does not have; use --arms "
                             f"{','.join(available_arms(fields)) or 'mean'} or update adacal.")
    return list(dict.fromkeys(names))


def arm_options(arm: str, fields: set[str] | None = None) -> dict[str, Any]:
    """TrainConfig keyword arguments for `arm`, leaving out options this adacal lacks (only ever at their default)."""
    fields = train_config_fields() if fields is None else fields
    missing = missing_arm_options(arm, fields)
    if missing:
        raise SystemExit(f"Error: arm '{arm}' needs TrainConfig option(s) {', '.join(missing)}.")
    return {k: v for k, v in ARMS[arm].items() if k in fields}


# ------------------------------------------------------------------------------------------------ the grid


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run of the grid: a loss, an arm, a seed, its TrainConfig, run folder and result file."""

    name: str
    arm: str
    seed: int
    config: Any
    folder: Path
    result: Path

    @property
    def label(self) -> str:
        return f"{DISPLAY.get(self.name, self.name)} {self.arm} s{self.seed}"


def cell_key(cell: Cell) -> tuple[dict[str, Any], str]:
    """The protocol options and key of a cell; refuses a config whose resolved options contradict its arm."""
    from adacal.training import resolve_config

    options = protocol_options(resolve_config(cell.config).to_dict())
    if arm_of(options) != cell.arm:
        raise SystemExit(f"Error: the {cell.label} run resolves to loss_reduction={options['loss_reduction']!r}, "
                         f"grad_clip={options['grad_clip']!r}, not the '{cell.arm}' arm.")
    return options, protocol_key(options)


def run_cell(cell: Cell, *, dataset: str, reuse: bool, commit: bool,
             score_ood: Callable[[Path, float], dict[str, Any]] | None = None,
             recover_predictions: bool = False, keep: bool = False) -> dict[str, Any]:
    """The cell's result: read from its result file when that holds the current key (and `reuse`), else trained (or
    taken from a finished run folder), analysed, written atomically (with its predictions beside it when `keep` or
    `recover_predictions`) and, with `commit`, committed. With `recover_predictions`, a done cell without predictions
    beside it is trained again for them; its result file stays as committed, and the figures of the retrained
    predictions go beside them (`write_predictions_record`, saying whether they reproduce it: `_reproduced`)."""
    options, key = cell_key(cell)
    done = read_result(cell.result, key) if reuse else None
    if done is not None:
        if not (recover_predictions and not predictions_path(cell.result).is_file()):
            print(f"  [{cell.label}] done already: {repo_relative(cell.result)}", flush=True)
            return done
        print(f"  [{cell.label}] done, without its predictions: training it again for them", flush=True)
    run_dir, timing = train_or_reuse(cell.config, folder=cell.folder, label=cell.label, reuse=reuse)
    started = time.perf_counter()
    from adacal.reports import utc_now

    entry: dict[str, Any] = {
        "schema": RESULT_SCHEMA, "key": key, "dataset": dataset, "loss": cell.name, "arm": cell.arm,
        "seed": cell.seed, "options": options, "analysis_protocol": ANALYSIS_PROTOCOL,
        "adacal_version": adacal.__version__, "created": utc_now(), "run_dir": str(run_dir),
        **analyse_run(run_dir),
    }
    if score_ood is not None:
        entry["ood"] = score_ood(run_dir, entry["ts_ece_em"]["temperature"])
    timing["analysis_seconds"] = round(time.perf_counter() - started, 2)
    entry["timing"] = timing
    entry["machine"] = machine_info(timing.get("device") or str(getattr(cell.config, "device", "cpu")),
                                    timing.get("gpu"))
    if keep or recover_predictions:
        keep_predictions(run_dir, cell.result)
    if done is not None:
        # The committed result stays as it is (the tables and their reading were written from it); the predictions
        # of the retrained run go beside it with the figures they give, which say whether they reproduce it.
        differences = _reproduced(done, entry)
        write_predictions_record(cell.result, {
            "key": key, "loss": cell.name, "arm": cell.arm, "seed": cell.seed, "created": utc_now(),
            "reproduces_result": not differences, "figures": flat_figures(entry),
            "result_figures": flat_figures(done), "timing": timing, "machine": entry["machine"],
            "note": "the predictions beside this file are a retrained run of the result file's cell (same key: "
                    "options, seed, data, split and batch order); 'figures' are theirs, 'result_figures' the "
                    "committed result's"})
        verdict = ("every figure equals the committed result's (to 1e-6)" if not differences else
                   "figures differ from the committed result's (another draw of the same cell: "
                   + ", ".join(f"{name} {old:.4g} → {new:.4g}" for name, old, new in differences[:4]) + ")")
        print(f"  [{cell.label}] retrained: {verdict}; its predictions → "
              f"{repo_relative(predictions_path(cell.result))}", flush=True)
        if commit:
            commit_file(cell.result, f"Quality predictions: {dataset} {cell.name} {cell.arm} seed {cell.seed} "
                                     f"(key {key}, retrained; {'reproduced' if not differences else 'redrawn'})")
        return done
    write_result(cell.result, entry)
    f = flat_figures(entry)
    print(f"  [{cell.label}] test error {100 * f['error']:.2f}%  ECE-EM {100 * f['ece_em']:.2f}% → "
          f"{100 * f['ece_em_ts_ece_em']:.2f}% (T={f['t_ece_em']:.1f}, grid ECE-EM) / "
          f"{100 * f['ece_em_ts_nll']:.2f}% (T={f['t_nll']:.2f}, NLL)  → {repo_relative(cell.result)}", flush=True)
    if commit:
        commit_file(cell.result, f"Quality result: {dataset} {cell.name} {cell.arm} seed {cell.seed} "
                                 f"(key {key}, {timing.get('train_wall_seconds', '?')} s training)")
    return entry


def _reproduced(old: dict[str, Any], new: dict[str, Any], tolerance: float = 1e-6) -> list[tuple[str, float, float]]:
    """The figures (`flat_figures`) on which a retrained entry differs from the committed one by more than
    `tolerance`; empty when the run reproduced. Time is no figure of the result: it is left out."""
    before, after = flat_figures(old), flat_figures(new)
    differences = []
    for name in sorted((set(before) | set(after)) - {"train_seconds"}):
        a, b = before.get(name), after.get(name)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not abs(float(a) - float(b)) <= tolerance:
                differences.append((name, float(a), float(b)))
        elif a != b:
            differences.append((name, float("nan"), float("nan")))
    return differences


_RESULT_NAME = re.compile(r"(?P<stem>.+)-seed(?P<seed>\d+)\.json")


def cells_on_disk(runs_dir: Path, cells: list[Cell], *, make_config: Callable[[str, str, int], Any],
                  folder_name: Callable[[str, str, int], str], out: Path) -> list[Cell]:
    """`cells` plus a cell for every result file in `runs_dir` named `<loss>-<arm>-seed<k>.json` for a loss and arm
    this script knows (whether it holds the current key is for `collect` to say)."""
    known = {(c.name, c.arm, c.seed) for c in cells}
    found = list(cells)
    for path in sorted(Path(runs_dir).glob("*-seed*.json")):
        match = _RESULT_NAME.fullmatch(path.name)
        if match is None:
            continue
        # Names and arms both hold dashes: split at a known arm ("adafocal-burst" + "sum-clip").
        stem, seed = match["stem"], int(match["seed"])
        arm = next((a for a in ARMS if stem.endswith(f"-{a}") and stem[: -len(a) - 1] in LOSS_SPECS), None)
        if arm is None:
            continue
        name = stem[: -len(arm) - 1]
        if (name, arm, seed) in known:
            continue
        known.add((name, arm, seed))
        found.append(Cell(name=name, arm=arm, seed=seed, config=make_config(name, arm, seed),
                          folder=out / folder_name(name, arm, seed), result=result_path(runs_dir, name, arm, seed)))
    return found


def collect(cells: list[Cell]) -> tuple[list[dict[str, Any]], list[Cell]]:
    """The result files of `cells` that hold their current key, and the cells still to run."""
    done, missing = [], []
    for cell in cells:
        entry = read_result(cell.result, cell_key(cell)[1])
        (done if entry is not None else missing).append(entry if entry is not None else cell)
    return done, missing


def run_cells(cells: list[Cell], *, dataset: str, reuse: bool, commit: bool, jobs: int, threads: int,
              score_ood: Callable[[Path, float], dict[str, Any]] | None = None,
              recover_predictions: bool = False, keep: bool = False) -> list[str]:
    """Run the cells not done yet, `jobs` at a time (separate processes, `threads` torch threads each).

    Returns the labels of the cells that failed (their error is printed; the others go on)."""
    failed: list[str] = []
    if jobs <= 1:
        for cell in cells:
            try:
                run_cell(cell, dataset=dataset, reuse=reuse, commit=commit, score_ood=score_ood,
                         recover_predictions=recover_predictions, keep=keep)
            except Exception as exc:  # a failed run must not lose the grid's other runs
                print(f"  [{cell.label}] FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                failed.append(cell.label)
        return failed
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a clean torch in each worker
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=set_threads,
                                                initargs=(threads,)) as pool:
        futures = {pool.submit(run_cell, cell, dataset=dataset, reuse=reuse, commit=commit, score_ood=score_ood,
                               recover_predictions=recover_predictions, keep=keep): cell
                   for cell in cells}
        for future in concurrent.futures.as_completed(futures):
            exc = future.exception()
            if exc is not None:
                cell = futures[future]
                print(f"  [{cell.label}] FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                failed.append(cell.label)
    return failed


# ------------------------------------------------------------------------------------------------ the benchmark


def add_common_arguments(parser: Any, *, results: Path, dataset: str) -> None:
    """The options both quality benchmarks take: the grid (seeds, losses, arms), where data, runs, result files, the
    summary JSON and the figures go, and how the runs are scheduled."""
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--losses", default="ce,focal-3,flsd-53,adafocal",
                        help=f"comma-separated, from {', '.join(LOSS_SPECS)}")
    parser.add_argument("--arms", default=None,
                        help="comma-separated training dynamics: mean (" + ARM_NOTES["mean"] + "), sum-clip ("
                             + ARM_NOTES["sum-clip"] + "); default: every arm this adacal can train")
    parser.add_argument("--data-dir", default=str(SHARED_DATA))
    parser.add_argument("--out", default="/tmp/quality_runs", help="where the run folders go (outside the repo)")
    parser.add_argument("--runs-dir", default=str(RUNS_DIR / dataset),
                        help="where the per-run result files go (one small JSON per loss, arm and seed)")
    parser.add_argument("--results", default=str(results), help="the summary JSON to write")
    parser.add_argument("--plots", default=str(PLOTS_DIR), help="folder for the PNG figures")
    parser.add_argument("--fresh", action="store_true",
                        help="retrain every cell, even those with a matching result file or finished run folder")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--device", default="cpu",
                        help="where runs train and are scored: cpu (default), cuda or cuda:N. Not part of a result's "
                             "key (a seed is the same cell on any device); recorded in its machine block. On CUDA, "
                             "TF32 is turned off so convolutions and matrix products stay float32, as on the CPU")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at the same time (default 1)")
    parser.add_argument("--commit", action="store_true",
                        help="git add + commit each result file as soon as it is written (never pushes)")
    parser.add_argument("--keep-predictions", action="store_true",
                        help="keep each run's validation and test logits beside its result file (float16, ~0.25 MB "
                             "a CIFAR-10 run) and commit them with it: for the runs a later analysis reads")
    parser.add_argument("--recover-predictions", action="store_true",
                        help="train again the done cells that have no predictions beside their result file, for "
                             "them (the result file stays as it is; implies --keep-predictions)")
    parser.add_argument("--summary-only", action="store_true",
                        help="train nothing: rebuild the summary JSON and figures from the result files there are")
    parser.add_argument("--no-summary", action="store_true",
                        help="only run the cells (for runs split over several processes); no summary or figures")


def check_common_arguments(args: Any) -> None:
    for name in ("threads", "jobs"):
        if getattr(args, name) < 1:
            raise SystemExit(f"Error: expected --{name} to be a positive integer, got {getattr(args, name)}.")
    if args.summary_only and args.no_summary:
        raise SystemExit("Error: --summary-only and --no-summary exclude each other.")
    if not Path(args.data_dir).is_dir() and not args.summary_only:
        raise SystemExit(f"Error: expected --data-dir to be a folder, got {args.data_dir!r}.")
    device = str(getattr(args, "device", "cpu"))
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise SystemExit(f"Error: expected --device to be cpu, cuda or cuda:N, got {device!r}.")
    if device.startswith("cuda") and not args.summary_only:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit(f"Error: --device {device} asks for CUDA, but this torch sees no CUDA device.")
        from adacal.data import resolve_device
        from adacal.errors import InputError

        try:
            resolve_device(device)  # cuda:N with N past the devices there are: refused here, not in every run
        except InputError as error:
            raise SystemExit(f"Error: {error}") from None


def redirect_quick_outputs(args: Any, *, results: Path, dataset: str, runs_dir: Path | None = None) -> None:
    """A smoke test writes nothing into the repository: runs, result files, JSON and plots all go under <out>_quick
    (`runs_dir`: the default result-file folder, RUNS_DIR / dataset unless given)."""
    args.out = args.out.rstrip("/") + "_quick"
    if args.runs_dir == str(runs_dir or RUNS_DIR / dataset):
        args.runs_dir = str(Path(args.out) / "quality_runs" / Path(runs_dir or dataset).name)
    if args.results == str(results):
        args.results = str(Path(args.out) / f"{results.stem}_quick.json")
    if args.plots == str(PLOTS_DIR):
        args.plots = str(Path(args.out) / "plots")
    args.commit = False


def run_benchmark(args: Any, argv: list[str] | None, *, dataset: str, kind: str, slug: str, title: str,
                  make_config: Callable[[str, str, int], Any], folder_name: Callable[[str, str, int], str],
                  protocol: dict[str, Any], paper: dict[str, dict[str, float]], paper_note: str,
                  score_ood: Callable[[Path, float], dict[str, Any]] | None = None,
                  later_papers: dict[str, dict[str, Any]] | None = None) -> int:
    """Run the grid (seeds × arms × losses) — skipping the cells whose result file holds their key — then rebuild the
    summary JSON, the tables and the figures from the result files. `later_papers`: the later losses' own papers'
    figures (`LATER_PAPERS_CIFAR10`), printed beside the table for the losses it ran."""
    check_common_arguments(args)
    set_threads(args.threads)
    losses = parse_losses(args.losses)
    seeds = parse_ints(args.seeds, "--seeds")
    arms = parse_arms(args.arms)
    if not arms:
        raise SystemExit("Error: no arm can be trained with this adacal.")
    runs_dir, out = Path(args.runs_dir), Path(args.out)
    cells = [Cell(name=name, arm=arm, seed=seed, config=make_config(name, arm, seed),
                  folder=out / folder_name(name, arm, seed), result=result_path(runs_dir, name, arm, seed))
             for seed in seeds for arm in arms for name in losses]
    done, todo = collect(cells)
    print(f"adacal quality benchmark — {title}: losses {losses}, arms {arms}, seeds {seeds}: {len(cells)} runs, "
          f"{len(done)} done already (result files in {repo_relative(runs_dir)}), {len(todo)} to run", flush=True)
    started = time.perf_counter()
    failed: list[str] = []
    if not args.summary_only:
        if args.fresh:
            todo = cells
        elif getattr(args, "recover_predictions", False):
            todo = [c for c in cells if c in todo or not predictions_path(c.result).is_file()]
        failed = run_cells(todo, dataset=dataset, reuse=not args.fresh, commit=args.commit, jobs=args.jobs,
                           threads=args.threads, score_ood=score_ood,
                           recover_predictions=getattr(args, "recover_predictions", False),
                           keep=getattr(args, "keep_predictions", False))
    if args.no_summary:
        return 1 if failed else 0
    _, missing = collect(cells)
    # The summary covers every finished cell on disk, not only this invocation's grid, so that running one arm or
    # one variant at a time never drops the others from the summary JSON, the tables and the figures.
    summary_cells = cells_on_disk(runs_dir, cells, make_config=make_config, folder_name=folder_name, out=out)
    entries, _ = collect(summary_cells)
    losses = [name for name in LOSS_SPECS if any(c.name == name for c in summary_cells)]
    arms = [arm for arm in ARMS if any(c.arm == arm for c in summary_cells)]
    seeds = sorted({c.seed for c in summary_cells})
    summary = summarise(entries, losses, arms)
    with_ood = any("ood" in e for e in entries)
    header, rows = table_rows(summary, with_ood=with_ood)
    print(f"\nTest-set figures in % (NLL in nats, T unitless), mean ± std over seeds, from {len(entries)} result "
          f"file(s):")
    print(text_table(header, rows))
    if missing:
        print(f"Not run yet ({len(missing)}): " + ", ".join(c.label for c in missing))
    paper_header, paper_table = paper_rows(paper, list(LOSS_SPECS), with_ood=with_ood)
    print("\n" + paper_note)
    print(text_table(paper_header, paper_table))
    later = {loss: figures for loss, figures in (later_papers or {}).items() if loss in losses}
    later_header, later_table = later_paper_rows(later, summary)
    if later:
        print("\nThe later losses' own papers (CIFAR-10, ResNet-50, whole training set, in %; a different scale, so "
              "the change from CE is the comparison):")
        print(text_table(later_header, later_table))
        for loss, figures in later.items():
            print(f"  {DISPLAY[loss]}: {figures['source']}")
    for entry in entries:
        if entry["loss"] == "adafocal" and "adafocal_final_bins" in entry and entry["seed"] == min(seeds):
            print(f"\nAdaFocal {entry['arm']} seed {entry['seed']}: last γ-update per validation bin "
                  f"(E_val = C_val − A_val):")
            print(per_bin_table(entry["adafocal_final_bins"]))
    plots = draw_figures(entries, losses, arms, Path(args.plots), slug=slug, title=title) if entries else {}
    from adacal.reports import make_report, write_json

    write_json(args.results, make_report(kind, config={
        "protocol": protocol, "arms": {arm: {"options": ARMS[arm], "note": ARM_NOTES[arm]} for arm in arms},
        "grid": {"losses": losses, "arms": arms, "seeds": seeds}, "analysis_protocol": ANALYSIS_PROTOCOL,
        "argv": sys.argv[1:] if argv is None else list(argv), "runs_dir": repo_relative(runs_dir)}, results={
        "units": "metrics are fractions (tables show %); nll in nats; temperature unitless; std is the sample "
                 "standard deviation over seeds (ddof 1)",
        "summary": summary, "table_percent": {"header": header, "rows": rows},
        "runs": [{"loss": e["loss"], "arm": e["arm"], "seed": e["seed"], "key": e["key"],
                  "result_file": repo_relative(result_path(runs_dir, e["loss"], e["arm"], e["seed"])),
                  "figures": flat_figures(e), "timing": e.get("timing"), "machine": e.get("machine")}
                 for e in entries],
        "missing": [{"loss": c.name, "arm": c.arm, "seed": c.seed} for c in missing],
        "paper_percent": {"note": paper_note, "figures": paper, "table": {"header": paper_header, "rows": paper_table}},
        "later_papers_percent": {"figures": later, "table": {"header": later_header, "rows": later_table}},
        "plots": plots, "wall_seconds_this_invocation": round(time.perf_counter() - started, 1),
    }))
    print(
        f"\nwrote {repo_relative(Path(args.results))}"
        + (f"; {len(failed)} run(s) failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
