"""`adacal train`: options in, `adacal.training.train` does the work; progress bars and the final table out."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from adacal.cli.common import DEBIAS_NOTE, EXIT_INTERRUPTED, debias_clipped, guarded, metric_cell
from adacal.commands.train import LOSS_FLAGS  # each loss flag's parameter name → the loss option it sets
from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError

HELP = """Train a classifier with a calibration-aware loss and write a run folder.

The run folder (runs/<time>-<dataset>-<model>-<loss>/ under --out, or --name) holds config.json, history.jsonl (one line
per epoch, with AdaFocal's bins and gammas), checkpoints/last.pt and best.pt, predictions.npz and evaluate.json.

Options left out come from the preset: 'quick' by default (digits: 30 epochs of SGD, seconds on a laptop CPU),
or 'paper' (--preset paper) for the paper's protocol on cifar10, cifar100, tiny-imagenet, imagenet, 20newsgroups.

Ctrl-C or SIGTERM stops training with exit code 130 and prints the command that resumes it. During an epoch's
batches the current batch is finished first and checkpoints/interrupted.pt is written, so the resumed run continues
from the next batch (a second Ctrl-C stops at once); checkpoints/last.pt always holds the last completed epoch. Either
way the resumed run ends exactly as an uninterrupted run would (same device).

One run, one writer: a training process holds the run folder's lock (RUN/.lock, released by the OS when the process
ends, however it ends), so a second 'train --resume' of a run that is still training is refused at once.
--print-config prints the resolved options (preset, model and loss defaults filled in) as JSON and exits.

Examples:

  adacal train     (digits, mlp, adafocal; offline, seconds)

  adacal train --loss ce --out runs --name ce     (the run folder is runs/ce)

  adacal train --dataset cifar10 --model resnet50 --loss adafocal --preset paper

  adacal train --resume runs/20250101-120000-cifar10-resnet50-adafocal --epochs 350
"""

# Defaults shown in --help. The CLI module stays free of torch (fast start-up), so they are written out here;
# tests/cli/test_train.py checks them against adacal.training.config and the losses' signatures.
LOSS_DEFAULTS_HELP = {
    "gamma": "focal 3, inverse-focal 1, dual-focal 5",
    "lam": "adafocal 1, calfocal 10",
    "gamma_max": "20",
    "gamma_min": "-2",
    "switch_threshold": "0.2",
    "n_bins": str(DEFAULT_N_BINS),
    "gamma_init": "1",
    "mmce_weight": "2",
    "smoothing": "0.05",
    "margin": "mbls 10, acls 10, cals 10",
    "margin_weight": "mbls 0.1, acls 0.1",
    "acls_pos_lambda": "1",
    "acls_neg_lambda": "0.1",
    "beta": "mdca 1, confidence-penalty 0.1",
    "cals_lambda_min": "cals 1e-06",
    "cals_lambda_max": "cals 1e+06",
    "cals_rho_min": "cals 1",
    "cals_rho_max": "cals 10",
    "cals_rho_every": "cals 10",
    "cals_rho_growth": "cals 1.2",
    "cals_tau": "cals 0.9",
}
DIGITS_DEFAULTS_HELP = {
    "epochs": "30", "batch_size": "32", "lr": "0.1", "milestones": "20", "lr_decay": "0.1", "momentum": "0.9",
    "weight_decay": "0", "optimizer": "sgd", "select": "last",
}


def _loss_default(flag: str) -> str:
    return f" (default: {LOSS_DEFAULTS_HELP[flag]})"


def _preset_default(key: str) -> str:
    return f" (default: {DIGITS_DEFAULTS_HELP[key]} for digits; other datasets and --preset paper: see --print-config)"


TABLE_METRICS = (
    "error", "nll", "brier", "ece_ew", "ece_em", "ece_debias", "ece_sweep_ew", "ece_sweep_em", "mce", "classwise_ece",
)
NOT_PERCENT = ("nll", "brier")


def _percent(name: str, value: float) -> str:
    return f"{value:.4f}" if name in NOT_PERCENT else f"{100 * value:.2f}"


# -------------------------------------------------------------------------------------------------------- progress


def _epoch_line(record: dict[str, Any], epochs: int, seconds: float) -> str:
    train, val = record["train"], record["val"]
    line = (
        f"epoch {record['epoch']}/{epochs}  loss {train['loss']:.4g}  acc {100 * train['accuracy']:.2f}%  "
        f"val err {100 * val['error']:.2f}%  val ECE-EM {100 * val['ece_em']:.2f}%  lr {record['lr']:.3g}"
    )
    if "test" in record:
        line += f"  test err {100 * record['test']['error']:.2f}%  test ECE-EM {100 * record['test']['ece_em']:.2f}%"
    from adacal.commands import UPDATES_KEY, BinnedLossEpoch  # loaded by training already; keeps --help light

    section = next((v for v in record.values() if isinstance(v, dict) and UPDATES_KEY in v), None)
    updates = BinnedLossEpoch.from_dict(section).updates if section is not None else ()
    last = dict(updates[-1]) if updates else {}
    gammas, multipliers = last.get("gammas"), last.get("multipliers")  # AdaFocal's γ per bin, CALS's λ per class
    if gammas:
        line += f"  γ {min(gammas):.2f}..{max(gammas):.2f}"
    if multipliers:
        line += f"  λ {min(multipliers):.3g}..{max(multipliers):.3g}"
    return line + f"  ({seconds:.1f}s)"


def _start_line(*, start_epoch: int, epochs: int, resumed: bool, device: str) -> str:
    """What train does now: train from epoch 1, resume at an epoch, or (a resumed run that has every epoch already,
    e.g. one interrupted in its final evaluation) only evaluate again."""
    if resumed and start_epoch >= epochs:
        return f"All {epochs} epochs are trained already; evaluating the run again on {device}"
    what = f"Resuming at epoch {start_epoch + 1}" if resumed else "Training"
    return f"{what} to epoch {epochs} on {device}"


class PlainProgress:
    """One line per epoch (stdout is not a terminal, e.g. a log file or CI)."""

    # Notes on stderr once training starts (every check passed): printed earlier, they would precede an error line.
    notes: tuple[str, ...] = ()

    def _print_notes(self, more: Any = ()) -> None:
        for note in (*self.notes, *more):
            typer.echo(f"Note: {note}.", err=True)

    def on_train_start(self, *, run_dir: Path, start_epoch: int, epochs: int, resumed: bool, device: str,
                       notes: Any = (), **_: Any) -> None:
        line = _start_line(start_epoch=start_epoch, epochs=epochs, resumed=resumed, device=device)
        typer.echo(f"{line}; run folder: {run_dir}")
        self._print_notes(notes)

    def on_epoch_end(self, *, record: dict[str, Any], epochs: int, seconds: float, **_: Any) -> None:
        typer.echo(_epoch_line(record, epochs, seconds))

    def on_evaluate_start(self, *, selected_epoch: int, select: str, **_: Any) -> None:
        typer.echo(f"Evaluating the model of epoch {selected_epoch} ({select}) on the test split")


class RichProgress(PlainProgress):
    """Epoch and batch bars with ETA, running loss and the last validation ECE (stdout is a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.console = Console()
        self.bars = Progress(
            TextColumn("{task.description:>6}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"), console=self.console, transient=True,
        )
        self.epoch_task = self.batch_task = None

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bars.stop()

    def on_train_start(self, *, run_dir: Path, start_epoch: int, epochs: int, resumed: bool, device: str,
                       notes: Any = (), **_: Any) -> None:
        line = _start_line(start_epoch=start_epoch, epochs=epochs, resumed=resumed, device=device)
        from rich.markup import escape  # a folder named like a markup tag ('[red]', '[/x]') is printed as it is

        self.console.print(f"{escape(line)}; run folder: [bold]{escape(str(run_dir))}[/]", soft_wrap=True)
        self._print_notes(notes)
        self.epoch_task = self.bars.add_task("epoch", total=epochs, completed=start_epoch, info="")
        self.batch_task = self.bars.add_task("batch", total=1, completed=0, info="")

    def on_epoch_start(self, *, batches: int, **_: Any) -> None:
        self.bars.reset(self.batch_task, total=batches, info="")

    def on_batch_end(self, *, batch: int, running_loss: float, **_: Any) -> None:
        self.bars.update(self.batch_task, completed=batch, info=f"loss {running_loss:.4g}")

    def on_epoch_end(self, *, record: dict[str, Any], epochs: int, seconds: float, **_: Any) -> None:
        self.console.print(_epoch_line(record, epochs, seconds), highlight=False)
        val = record["val"]
        self.bars.update(
            self.epoch_task, completed=record["epoch"],
            info=f"val err {100 * val['error']:.2f}%  ECE-EM {100 * val['ece_em']:.2f}%",
        )

    def on_predict_start(self, *, split: str, batches: int, **_: Any) -> None:
        """The validation pass (and the final test pass): a bar of its own, removed when it ends."""
        self.predict_task = self.bars.add_task(split, total=batches, completed=0, info="")

    def on_predict_batch(self, *, batch: int, **_: Any) -> None:
        if getattr(self, "predict_task", None) is not None:
            self.bars.update(self.predict_task, completed=batch)

    def on_predict_end(self, **_: Any) -> None:
        if getattr(self, "predict_task", None) is not None:
            self.bars.remove_task(self.predict_task)
            self.predict_task = None

    def on_evaluate_start(self, *, selected_epoch: int, select: str, **_: Any) -> None:
        self.bars.update(self.batch_task, visible=False)
        self.console.print(f"Evaluating the model of epoch {selected_epoch} ({select}) on the test split")


# ------------------------------------------------------------------------------------------------------- summary


def _print_summary(result: Any, quiet: bool) -> None:
    metrics = result.test_metrics
    if quiet:
        typer.echo(
            f"test error {100 * metrics.get('error', float('nan')):.2f}%  ECE-EM "
            f"{100 * metrics.get('ece_em', float('nan')):.2f}%  ECE-EW "
            f"{100 * metrics.get('ece_ew', float('nan')):.2f}%  NLL {metrics.get('nll', float('nan')):.4f}"
        )
        typer.echo(str(result.run_dir))
        return
    from rich.console import Console
    from rich.table import Table

    from adacal.commands import display_name

    table = Table(
        title="Test metrics", caption=f"% except NLL and Brier; model of epoch {result.selected_epoch} "
                                      f"({result.select})"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    shown = [name for name in TABLE_METRICS if name in metrics] + [n for n in metrics if n not in TABLE_METRICS]
    for name in shown:
        # as evaluate names and shows them: ECE-EM, a clipped ECE-DEBIAS as ≤ 0
        table.add_row(display_name(name), metric_cell(name, metrics[name], _percent(name, metrics[name])))
    console = Console()
    console.print(table)
    if debias_clipped(metrics.get("ece_debias")):
        typer.echo(f"Note: {DEBIAS_NOTE}.", err=True)
    # Printed as text, not markup: a folder named like a tag ('[/x]') would stop the summary with a MarkupError.
    console.print(f"Run folder: {result.run_dir}  ({result.seconds:.1f}s)", highlight=False, soft_wrap=True,
                  markup=False)


# ------------------------------------------------------------------------------------------------------- command


@guarded
def train(
    dataset: Annotated[str | None, typer.Option(
        help="Dataset name: digits (default), cifar10, cifar100, svhn, tiny-imagenet, imagenet, 20newsgroups; or a "
             "path to your own data: an image folder (ImageFolder layout), a .csv file or an .npz of arrays.")] = None,
    label_column: Annotated[str | None, typer.Option(
        help="The label column of a --dataset CSV file (default: the one column named label, target, class or "
             "y).")] = None,
    model: Annotated[str | None, typer.Option(
        help="Model name (resnet20, resnet50, resnet110, wrn-26-10, densenet121, mlp, textcnn, torchvision:<name>); "
             "default per dataset.")] = None,
    loss: Annotated[str | None, typer.Option(
        help="Loss: adafocal (default), ce, focal, flsd-53, inverse-focal, calfocal, brier, mmce, "
             "label-smoothing, dual-focal, mbls, acls, cals, mdca, confidence-penalty.")] = None,
    embeddings: Annotated[Path | None, typer.Option(
        help="GloVe text file ('word v1 v2 ...' per line, .gz too) whose vectors initialise --model textcnn's "
             "embeddings (the words of the training vocabulary it has); default: trained from scratch.")] = None,
    gamma: Annotated[float | None, typer.Option(
        help="γ of focal / inverse-focal / dual-focal (paper: 5 on CIFAR-10), and of --loss mdca --mdca-base focal "
             "(default 1)." + _loss_default("gamma"))] = None,
    lam: Annotated[float | None, typer.Option(
        help="λ of the AdaFocal γ-update (and CalFocal); paper: 1." + _loss_default("lam"))] = None,
    gamma_max: Annotated[float | None, typer.Option(
        help="AdaFocal upper bound on γ; paper: 20." + _loss_default("gamma_max"))] = None,
    gamma_min: Annotated[float | None, typer.Option(
        help="AdaFocal lower bound on γ (negative = inverse focal); paper: -2." + _loss_default("gamma_min"))] = None,
    switch_threshold: Annotated[float | None, typer.Option(
        help="AdaFocal |γ| below which focal and inverse focal switch; paper: 0.2."
             + _loss_default("switch_threshold"))] = None,
    n_bins: Annotated[int | None, typer.Option(
        help="Number of AdaFocal / CalFocal validation bins; paper: " + str(DEFAULT_N_BINS) + "."
             + _loss_default("n_bins"))] = None,
    num_bins: Annotated[int | None, typer.Option(hidden=True, help="Another spelling of --n-bins.")] = None,
    gamma_init: Annotated[float | None, typer.Option(
        help="AdaFocal initial γ per bin; paper: 1." + _loss_default("gamma_init"))] = None,
    mmce_weight: Annotated[float | None, typer.Option(
        help="Weight of the MMCE term added to cross-entropy (--loss mmce)." + _loss_default("mmce_weight"))] = None,
    smoothing: Annotated[float | None, typer.Option(
        help="Label-smoothing α (--loss label-smoothing; paper: 0.05), and of --loss mdca --mdca-base "
             "label-smoothing (default 0.1)." + _loss_default("smoothing"))] = None,
    margin: Annotated[float | None, typer.Option(
        help="Logit margin m of --loss mbls / acls / cals: logit distances from the largest beyond m are penalised; "
             "papers: 10." + _loss_default("margin"))] = None,
    margin_weight: Annotated[float | None, typer.Option(
        help="Weight λ of the margin penalty added to cross-entropy (--loss mbls / acls); papers: 0.1."
             + _loss_default("margin_weight"))] = None,
    acls_pos_lambda: Annotated[float | None, typer.Option(
        help="ACLS weight of the largest logit's excess over the margin (--loss acls); authors' config: 1."
             + _loss_default("acls_pos_lambda"))] = None,
    acls_neg_lambda: Annotated[float | None, typer.Option(
        help="ACLS weight of the other logits' distances beyond the margin (--loss acls); authors' config: 0.1."
             + _loss_default("acls_neg_lambda"))] = None,
    beta: Annotated[float | None, typer.Option(
        help="β: weight of the MDCA term (--loss mdca; paper: 1) or of the entropy subtracted from cross-entropy "
             "(--loss confidence-penalty)." + _loss_default("beta"))] = None,
    cals_lambda_min: Annotated[float | None, typer.Option(
        help="CALS: initial value and lower bound of each class's multiplier λ (--loss cals); authors: 1e-6."
             + _loss_default("cals_lambda_min"))] = None,
    cals_lambda_max: Annotated[float | None, typer.Option(
        help="CALS: upper bound of the multipliers λ; authors: 1e6." + _loss_default("cals_lambda_max"))] = None,
    cals_rho_min: Annotated[float | None, typer.Option(
        help="CALS: initial value and lower bound of each class's penalty parameter ρ; authors: 1."
             + _loss_default("cals_rho_min"))] = None,
    cals_rho_max: Annotated[float | None, typer.Option(
        help="CALS: upper bound of ρ; authors: 10." + _loss_default("cals_rho_max"))] = None,
    cals_rho_every: Annotated[int | None, typer.Option(
        help="CALS: ρ is updated at every this-many-th multiplier update (--update-every sets how often those "
             "come); authors: 10 epochs." + _loss_default("cals_rho_every"))] = None,
    cals_rho_growth: Annotated[float | None, typer.Option(
        help="CALS: factor by which ρ grows for a class whose constraint did not improve; authors: 1.2."
             + _loss_default("cals_rho_growth"))] = None,
    cals_tau: Annotated[float | None, typer.Option(
        help="CALS: improvement τ asked of each class's mean validation constraint between ρ updates; authors: "
             "0.9." + _loss_default("cals_tau"))] = None,
    mdca_base: Annotated[str | None, typer.Option(
        help="The loss --loss mdca adds its term to: ce, focal (--gamma) or label-smoothing (--smoothing, spread "
             "over the other classes as the MDCA authors do). (default: ce)")] = None,
    epochs: Annotated[int | None, typer.Option(
        help="Epochs in total (with --resume: total to reach)." + _preset_default("epochs"))] = None,
    batch_size: Annotated[int | None, typer.Option(
        help="Training batch size (per process under torchrun)." + _preset_default("batch_size"))] = None,
    lr: Annotated[float | None, typer.Option(help="Initial learning rate." + _preset_default("lr"))] = None,
    milestones: Annotated[str | None, typer.Option(
        help="Epochs after which the learning rate is multiplied by --lr-decay, e.g. 150,250 ('none' for a constant "
             "rate). Milestones at or past --epochs never fire." + _preset_default("milestones"))] = None,
    lr_decay: Annotated[float | None, typer.Option(
        help="Learning-rate factor at each milestone." + _preset_default("lr_decay"))] = None,
    momentum: Annotated[float | None, typer.Option(
        help="SGD momentum (sgd only)." + _preset_default("momentum"))] = None,
    weight_decay: Annotated[float | None, typer.Option(
        help="Weight decay (L2)." + _preset_default("weight_decay"))] = None,
    optimizer: Annotated[str | None, typer.Option(help="sgd, adam or adamw." + _preset_default("optimizer"))] = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed for the validation split, weights, data order and augmentation (default 0).")] = None,
    device: Annotated[str | None, typer.Option(
        help="auto (CUDA when available), cpu, cuda or cuda:N. (default: auto)")] = None,
    amp: Annotated[bool | None, typer.Option(
        "--amp/--no-amp",
        help="Mixed precision: bf16 (or fp16 with loss scaling) on CUDA; bf16 autocast on CPU (often slower there). "
             "(default: --no-amp)")] = None,
    channels_last: Annotated[bool | None, typer.Option(
        "--channels-last/--no-channels-last",
        help="channels_last memory format for image models (faster convolutions on recent GPUs). (default: "
             "--no-channels-last)")] = None,
    update_every: Annotated[str | None, typer.Option(
        help="When AdaFocal updates γ (CALS its multipliers): 'epoch' (default), N (every N batches), 'paper' (= "
             "'epoch:25,100:40,1': every epoch to epoch 25, every 100 batches to 40, then every batch) or such a "
             "spec.")] = None,
    select: Annotated[str | None, typer.Option(
        help="Model to evaluate at the end: last (default) or best-val (best validation accuracy). best.pt is kept "
             "either way." + _preset_default("select"))] = None,
    grad_clip: Annotated[float | None, typer.Option(
        help="Clip the gradient norm to this value before each optimiser step (with --amp after unscaling). (default: "
             "none; 2 with --preset paper on image datasets, as the reference code)")] = None,
    eval_test_every: Annotated[int | None, typer.Option(
        help="Also compute test metrics every K epochs (0 = only at the end). (default: 0)")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder that receives the run folder (default ./runs).")] = None,
    resume: Annotated[Path | None, typer.Option(
        help="Continue a run (its folder or a checkpoint in it) up to --epochs in total; other options come from the "
             "run (giving a different value is an error; --device, --workers and --data-dir may change). (default: "
             "start a new run)")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Data is held as tensors (no loader workers); this is passed only to dataset loaders that take it. "
             "Image-folder sets decode with one thread per CPU core. (default: 0)")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Where datasets are (default $ADACAL_DATA or ~/.cache/adacal).")] = None,
    train_subset: Annotated[int | None, typer.Option(
        help="Train on N training samples only: the first N of the seeded shuffle of the training split (a random "
             "sample, not balanced by class; val and test unchanged). At most the training split's size. (default: all "
             "of them)")] = None,
    val_size: Annotated[int | None, typer.Option(
        help="Validation samples split off the training set (default per dataset).")] = None,
    test_subset: Annotated[int | None, typer.Option(
        help="Score only a fixed seeded sample of N test samples, every class represented: N must be at least the "
             "number of classes and at most the test split's size (quick experiments; the full test set by "
             "default).")] = None,
    preset: Annotated[str | None, typer.Option(
        help="quick (default) or paper: where options you leave out come from.")] = None,
    loss_reduction: Annotated[str | None, typer.Option(
        help="How the training loss combines a batch: mean, or sum (the reference code's choice: a batch-size times "
             "larger gradient, usually with --grad-clip). γ-updates and validation metrics do not depend on it. "
             "(default: mean; --preset paper on image datasets: sum (brier: mean), as the reference code)")] = None,
    name: Annotated[str | None, typer.Option(
        help="Name of the run folder under --out (e.g. --out runs --name ce gives runs/ce); a name that is taken is "
             "refused. (default: <time>-<dataset>-<model>-<loss>, with -2, -3, ... when taken)")] = None,
    print_config: Annotated[bool, typer.Option(
        "--print-config",
        help="Print the fully resolved configuration (presets and loss defaults filled in) as JSON and exit: a dry run "
             "that writes nothing and loads no data.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Print only the final summary line and the run folder.")] = False,
) -> None:
    from adacal.commands.train import train_config

    if num_bins is not None:
        if n_bins is not None and n_bins != num_bins:
            raise InputError(f"Expected one of --n-bins and --num-bins (the same option), got {n_bins} and {num_bins}.")
        n_bins = num_bins
    options = locals()
    config = train_config(
        dataset=dataset, model=model, loss=loss, embeddings=embeddings, epochs=epochs,
        batch_size=batch_size, lr=lr, milestones=milestones, lr_decay=lr_decay,
        momentum=momentum, weight_decay=weight_decay, optimizer=optimizer, seed=seed, device=device, amp=amp,
        channels_last=channels_last, update_every=update_every, select=select, grad_clip=grad_clip,
        eval_test_every=eval_test_every, out=out, resume=resume, workers=workers, data_dir=data_dir,
        train_subset=train_subset, val_size=val_size, test_subset=test_subset, preset=preset,
        loss_reduction=loss_reduction, name=name, label_column=label_column,
        **{flag: options[flag] for flag in LOSS_FLAGS},
    )
    with _flags_as_typed({"--n-bins": "--num-bins"} if num_bins is not None else {}):
        _run(config, print_config=print_config, quiet=quiet)


@contextmanager
def _flags_as_typed(spellings: dict[str, str]) -> Iterator[None]:
    """Error messages name a flag the way it was typed (`--num-bins`, the hidden spelling of `--n-bins`)."""
    try:
        yield
    except InputError as exc:
        if not spellings:
            raise
        message = str(exc)
        for flag, typed in spellings.items():
            message = re.sub(re.escape(flag) + r"\b", typed, message)
        raise InputError(message) from None


def _run(config: Any, *, print_config: bool, quiet: bool) -> None:
    from adacal.commands.train import TrainingInterrupted, milestone_notes, resolved_train_config, run_train

    if print_config:
        import json

        typer.echo(json.dumps(resolved_train_config(config), indent=2))
        return
    if quiet:
        progress: Any = None
    elif sys.stdout.isatty():
        progress = RichProgress()
    else:
        progress = PlainProgress()
    if progress is not None:
        progress.notes = milestone_notes(config)
    try:
        if isinstance(progress, RichProgress):
            with progress:
                result = run_train(config, progress=progress)
        else:
            result = run_train(config, progress=progress)
    except TrainingInterrupted as interrupted:
        typer.echo(interrupted.message, err=True)
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    if result.rank == 0:
        _print_summary(result, quiet)
