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
import hashlib
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

import adacal  # noqa: E402
# The result files' I/O, re-exported here, where the scripts and tests have always found it.
from quality_files import RESULT_SCHEMA, commit_file, read_result, result_path, write_result  # noqa: E402,F401


def _shared_data() -> Path:
    """The project's offline data folder beside the checkout (or beside the folder of worktrees), else adacal's
    default data folder ($ADACAL_DATA or the user cache)."""
    for candidate in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    from adacal.data import default_data_dir

    return default_data_dir()


SHARED_DATA = _shared_data()
RESULTS_DIR = ROOT / "benchmarks" / "results"
PLOTS_DIR = RESULTS_DIR / "plots"
RUNS_DIR = RESULTS_DIR / "quality_runs"

# benchmark name -> (adacal loss name, loss options)
LOSS_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "ce": ("ce", {}),
    "focal-3": ("focal", {"gamma": 3.0}),
    "flsd-53": ("flsd-53", {}),
    "adafocal": ("adafocal", {}),
    "brier": ("brier", {}),
    "ls-0.05": ("label-smoothing", {"alpha": 0.05}),
    "mmce": ("mmce", {}),
}
DISPLAY = {"ce": "CE", "focal-3": "FL-3", "flsd-53": "FLSD-53", "adafocal": "AdaFocal", "brier": "Brier",
           "ls-0.05": "LS-0.05", "mmce": "MMCE"}

# AdaFocal variants (what might close the gap to temperature-scaled CE without giving up AdaFocal's principle): the
# loss options they change, and the γ-update schedule where it differs from the protocol's (see `variant_schedule`).
# Each is trained like any loss of the grid (`--losses adafocal-burst,...`) and summarised beside it.
VARIANTS: dict[str, dict[str, Any]] = {
    "adafocal-burst": {"options": {}, "schedule": "burst",
                       "note": "γ updated ~8 times an epoch for the 2 epochs after each learning-rate drop, every "
                               "epoch otherwise (γ lags after a drop when it moves once an epoch)"},
    "adafocal-lam3": {"options": {"lam": 3.0}, "schedule": None,
                      "note": "λ = 3 in γ ← γ·exp(λ(C_val − A_val)): three times the paper's step"},
    "adafocal-g0": {"options": {"gamma_init": 0.0}, "schedule": None,
                    "note": "γ starts at 0 (cross-entropy) in every bin instead of the paper's 1"},
    "adafocal-g0-lam3": {"options": {"gamma_init": 0.0, "lam": 3.0}, "schedule": None,
                         "note": "γ starts at 0 and moves with λ = 3: γ0=0's accuracy with λ3's faster correction"},
    "adafocal-g0-burst": {"options": {"gamma_init": 0.0}, "schedule": "burst",
                          "note": "γ starts at 0 and is updated ~8 times an epoch for the 2 epochs after each "
                                  "learning-rate drop: γ0=0's accuracy with burst's catch-up after a drop"},
    "adafocal-refsched": {"options": {}, "schedule": "reference",
                          "note": "the reference code's schedule (--update-every paper: every epoch to epoch 25 of "
                                  "350, every 100 of 352 batches to epoch 40, then every batch) scaled to the run's "
                                  "length and batches per epoch; costly on CPU (a validation pass per batch)"},
}
for _name in VARIANTS:
    LOSS_SPECS[_name] = ("adafocal", dict(VARIANTS[_name]["options"]))
DISPLAY.update({"adafocal-burst": "AdaFocal burst", "adafocal-lam3": "AdaFocal λ3", "adafocal-g0": "AdaFocal γ0=0",
                "adafocal-refsched": "AdaFocal ref. sched.", "adafocal-g0-lam3": "AdaFocal γ0=0 λ3",
                "adafocal-g0-burst": "AdaFocal γ0=0 burst"})
# The reference run the paper's schedule was written for: 350 epochs of 45,000 / 128 = 352 batches.
_REFERENCE_EPOCHS, _REFERENCE_BATCHES = 350, 352


def loss_protocol() -> dict[str, dict[str, Any]]:
    """What each name of the grid trains, for the summary's protocol section."""
    return {name: {"loss": loss, "options": options,
                   **({"variant": VARIANTS[name]["note"]} if name in VARIANTS else {})}
            for name, (loss, options) in LOSS_SPECS.items()}


def variant_schedule(name: str, *, epochs: int, milestones: tuple[int, ...] | list[int], batches_per_epoch: int,
                     default: str | int) -> str | int:
    """The `update_every` spec a grid entry trains with: `default` (the protocol's) unless `name` is a variant with
    a schedule of its own.

    "burst": every `batches_per_epoch // 8` batches (at least 1) during the two epochs after each milestone, every
    epoch otherwise. "reference": the reference code's "epoch:25,100:40,1" with its epochs scaled by
    epochs / 350 and its 100 batches by batches_per_epoch / 352."""
    kind = VARIANTS.get(name, {}).get("schedule")
    if kind is None:
        return default
    if kind == "burst":
        every = max(1, batches_per_epoch // 8)
        segments, last = [], 0
        for milestone in sorted(set(int(m) for m in milestones)):
            if milestone <= last or milestone >= epochs:
                continue
            end = min(milestone + 2, epochs)
            segments += [f"epoch:{milestone}", f"{every}:{end}"]
            last = end
        return ",".join(segments + ["epoch"]) if segments else "epoch"
    if kind == "reference":
        first = max(1, round(epochs * 25 / _REFERENCE_EPOCHS))
        second = max(first + 1, round(epochs * 40 / _REFERENCE_EPOCHS))
        every = max(1, round(100 * batches_per_epoch / _REFERENCE_BATCHES))
        return f"epoch:{first},{every}:{second},1"
    raise ValueError(f"unknown schedule kind {kind!r} for {name!r}")
# arm name -> TrainConfig options it sets. "mean" is adacal's default (no clipping); "sum-clip" is what
# torrvision/focal_calibration and 3mcloud/adafocal do: loss summed over the batch, clip_grad_norm_(…, 2).
ARMS: dict[str, dict[str, Any]] = {
    "mean": {"loss_reduction": "mean", "grad_clip": None},
    "sum-clip": {"loss_reduction": "sum", "grad_clip": 2.0},
}
ARM_NOTES = {"mean": "loss averaged over the batch, no gradient clipping (adacal's default)",
             "sum-clip": "loss summed over the batch, gradient norm clipped to 2 (the reference code)"}
METRICS = ("error", "nll", "brier", "ece_em", "ece_ew", "ece_debias", "ece_sweep_em", "ece_sweep_ew", "mce",
           "classwise_ece")
N_BINS = 15
# The paper's temperature grid (T = 0.1, 0.2, …, 10.0; the first minimum of validation ECE-EM wins).
T_GRID = np.round(np.arange(1, 101) * 0.1, 1)
# What `analyse_run` computes; part of every result's key, so a changed analysis is not taken for a finished one.
ANALYSIS_PROTOCOL = ("test metrics (15 bins) pre and post temperature scaling; T fitted on the run's validation logits "
                     "by the grid 0.1..10 step 0.1 minimising ECE-EM (first minimum) and by minimising NLL; v1")
# Training options that change what is trained, hence the result (where data and runs live, the device and the
# loader's workers do not). `preset` is left out: every option it sets is resolved into the fields listed here.
PROTOCOL_KEYS = ("dataset", "model", "model_options", "loss", "loss_options", "epochs", "batch_size", "lr",
                 "milestones", "lr_decay", "momentum", "weight_decay", "optimizer", "seed", "amp", "channels_last",
                 "update_every", "select", "grad_clip", "loss_reduction", "train_subset", "val_size", "test_subset")
# Loss options as result keys spell them: the committed results hash `num_bins` (adacal's deprecated spelling of
# `n_bins`), so a result's key is the same whichever name its options use.
KEY_SPELLING = {"n_bins": "num_bins"}
# AdaFocal γ-dynamics figure: five of the 15 bins, low to high confidence, to keep the PNG small (the JSON has every
# bin; `adacal plot gamma RUN` draws all of them).
GAMMA_PLOT_BINS = (0, 4, 7, 10, 14)


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
    return sorted(k for k, v in ARMS[arm].items() if k not in fields and v != _ARM_DEFAULTS.get(k))


# What adacal does when TrainConfig has no such option: averages the loss over the batch and does not clip.
_ARM_DEFAULTS: dict[str, Any] = {"loss_reduction": "mean", "grad_clip": None}


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


def gpu_name(device: str) -> str | None:
    """The name of the GPU `device` names on this machine (None for the CPU or where torch sees no CUDA)."""
    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return None


def machine_info(device: str = "cpu", gpu: str | None = None) -> dict[str, Any]:
    """This machine, and where the run trained: `device` and `gpu` as recorded when it trained (a reused run folder may
    have trained elsewhere)."""
    import torch

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "device": str(device),
        "gpu": gpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "adacal": adacal.__version__,
        "load_average_at_start": None if load is None else [round(v, 2) for v in load],
    }


# ------------------------------------------------------------------------------------------------ result keys


def _plain(value: Any) -> Any:
    """JSON-comparable form: tuples as lists, numbers as floats (1 == 1.0), dicts sorted."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return str(value)


def protocol_options(resolved: dict[str, Any]) -> dict[str, Any]:
    """The options of a resolved TrainConfig (its `to_dict()` or a run's config.json) that decide the result.

    An option missing from the config reads as its behaviour (`loss_reduction` "mean", `grad_clip` None), so a run
    whose config.json lacks an option has the key of the same options spelled out."""
    options = {key: _plain(resolved.get(key)) for key in PROTOCOL_KEYS}
    for key, default in _ARM_DEFAULTS.items():
        if options[key] is None:
            options[key] = _plain(default)
    for key in ("model_options", "loss_options"):
        options[key] = options[key] or {}
    options["loss_options"] = dict(sorted((KEY_SPELLING.get(k, k), v) for k, v in options["loss_options"].items()))
    options["milestones"] = options["milestones"] or []
    return options


def protocol_key(options: dict[str, Any], analysis: str = ANALYSIS_PROTOCOL) -> str:
    """A short stable hash of the protocol options and the analysis protocol."""
    text = json.dumps({"options": options, "analysis": analysis}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def arm_of(options: dict[str, Any]) -> str | None:
    for arm, values in ARMS.items():
        if all(options.get(k) == _plain(v) for k, v in values.items()):
            return arm
    return None


# ------------------------------------------------------------------------------------------------ training


def _runs_with_options(folder: Path, options: dict[str, Any]) -> Iterator[Path]:
    """The run folders under `folder`, newest first, whose config.json holds the protocol options `options`."""
    if not folder.is_dir():
        return
    for run in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        try:
            config = json.loads((run / "config.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _with_loss_defaults(protocol_options(config)) == _with_loss_defaults(options):
            yield run


def _finished_run(folder: Path, options: dict[str, Any]) -> Path | None:
    """The newest finished run under `folder` whose protocol options equal `options`, else None."""
    return next((run for run in _runs_with_options(folder, options)
                 if (run / "evaluate.json").is_file() and (run / "predictions.npz").is_file()), None)


def _unfinished_run(folder: Path, options: dict[str, Any]) -> Path | None:
    """The newest run under `folder` with the protocol options `options` that stopped before its end (no
    evaluate.json) but holds a checkpoint to resume from, else None."""
    return next((run for run in _runs_with_options(folder, options)
                 if not (run / "evaluate.json").is_file()
                 and any((run / "checkpoints" / name).is_file() for name in ("last.pt", "interrupted.pt"))), None)


def _with_loss_defaults(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with every loss hyper-parameter filled in: a run's config.json records them all, a resolved
    TrainConfig only those typed. Only for comparing runs: result keys stay hashes of the options as typed."""
    from adacal.training.config import resolved_loss_options

    return {**options, "loss_options": _plain(resolved_loss_options(options["loss"], options["loss_options"]))}


class EpochPrinter:
    """A progress listener printing one line per epoch (with AdaFocal's γ range) and the epoch time."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.epoch_seconds: list[float] = []

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event != "epoch_end":
            return
        record, seconds = info["record"], float(info["seconds"])
        self.epoch_seconds.append(seconds)
        train, val = record["train"], record["val"]
        line = (f"  [{self.label}] epoch {info['epoch']:>3}/{info['epochs']}  {seconds:5.1f}s  lr {record['lr']:.4g}  "
                f"train loss {train['loss']:.4f} acc {100 * train['accuracy']:5.1f}%  "
                f"val err {100 * val['error']:5.2f}% ECE-EM {100 * val['ece_em']:5.2f}%")
        updates = (record.get("adafocal") or {}).get("updates") or []
        if updates:
            gammas = updates[-1]["gammas"]
            line += f"  γ [{min(gammas):+.2f}, {max(gammas):+.2f}]"
        print(line, flush=True)


def train_or_reuse(config: Any, *, folder: Path, label: str, reuse: bool) -> tuple[Path, dict[str, Any]]:
    """Train `config` (a TrainConfig) into `folder`, or reuse a finished run there with the same protocol options.

    Returns (run folder, timing dict)."""
    from adacal.training import resolve_config, train

    options = protocol_options(resolve_config(config).to_dict())
    resumed_from = None
    if reuse:
        found = _finished_run(folder, options)
        if found is not None:
            print(f"  [{label}] reusing finished run {found}", flush=True)
            recorded = _recorded_seconds(found)
            recorded.setdefault("device", _run_device(found))  # folders timed before the device was recorded
            return found, {"reused_run_folder": True, **recorded}
        # A run cut short (a session's end, Ctrl-C) continues from its last checkpoint: adacal's resume is exact, so
        # the result is the one an uninterrupted run gives, and the epochs already trained are not paid again.
        resumed_from = _unfinished_run(folder, options)
    folder.mkdir(parents=True, exist_ok=True)
    config = dataclasses.replace(config, out=str(folder), resume=None if resumed_from is None else str(resumed_from))
    device = _device_name(config.device)
    gpu = gpu_name(device)
    if resumed_from is not None:
        print(f"  [{label}] resuming unfinished run {resumed_from}", flush=True)
        before = _run_device(resumed_from)
        if before != device:  # epochs on two devices: its time is neither's
            device, gpu = "mixed", None
    printer = EpochPrinter(label)
    started = time.perf_counter()
    result = train(config, progress=printer)
    wall = time.perf_counter() - started
    epoch_seconds = printer.epoch_seconds
    if resumed_from is not None:
        # Every epoch's time, the ones before the interruption included, from the run's history.
        epoch_seconds = [float(line["seconds"]) for line in read_history(Path(result.run_dir)) if "seconds" in line]
        wall = sum(epoch_seconds) or wall
    timing = {
        "device": device,
        "gpu": gpu,
        "resumed_run_folder": resumed_from is not None,
        "train_wall_seconds": round(wall, 2),
        "train_loop_seconds": round(float(result.seconds), 2),
        "epoch_seconds_median": round(statistics.median(epoch_seconds), 2) if epoch_seconds else None,
        "epoch_seconds": [round(s, 2) for s in epoch_seconds],
        "torch_threads": _torch_threads(),
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    (Path(result.run_dir) / "benchmark_timing.json").write_text(json.dumps(timing))
    return Path(result.run_dir), {"reused_run_folder": False, **timing}


def _device_name(device: Any) -> str:
    """A run's device as the grid groups it: cpu, cuda or cuda:N as given; 'auto' as what it resolves to here."""
    text = str(device or "cpu").strip().lower()
    if text == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return text


def _run_device(run: Path) -> str:
    """The device a run folder's config.json names (the last one it trained on); the CPU when it names none."""
    try:
        config = json.loads((run / "config.json").read_text()).get("config") or {}
    except (OSError, ValueError):
        config = {}
    return _device_name(config.get("device"))


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _recorded_seconds(run: Path) -> dict[str, Any]:
    path = run / "benchmark_timing.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            data.pop("reused", None)
            data.pop("reused_run_folder", None)
            return data
        except ValueError:
            pass
    return {}


# ------------------------------------------------------------------------------------------------ temperature


def fit_temperature_grid(logits: np.ndarray, labels: np.ndarray, *, n_bins: int = N_BINS,
                         grid: np.ndarray = T_GRID) -> tuple[float, float]:
    """The paper's fit: the T of `grid` with the lowest ECE-EM of softmax(logits / T) (first on ties).

    Returns (T, ECE-EM at T)."""
    from adacal.metrics import ece_em

    logits = np.asarray(logits, dtype=np.float64)
    scores = np.array([ece_em(logits / float(t), labels, n_bins=n_bins) for t in grid])
    best = int(np.argmin(scores))
    return float(grid[best]), float(scores[best])


def _nll_and_slope(logits: np.ndarray, labels: np.ndarray, beta: float) -> tuple[float, float]:
    """Mean NLL of softmax(β·logits) and its derivative in β: mean(E_p[z] − z_y)."""
    z = beta * logits
    z_max = z.max(axis=1, keepdims=True)
    e = np.exp(z - z_max)
    total = e.sum(axis=1)
    picked = logits[np.arange(len(labels)), labels]
    nll = float(np.mean(np.log(total) + z_max[:, 0] - beta * picked))
    slope = float(np.mean((e * logits).sum(axis=1) / total - picked))
    return nll, slope


def fit_temperature_nll(logits: np.ndarray, labels: np.ndarray, *, lower: float = 0.01,
                        upper: float = 100.0) -> tuple[float, float]:
    """The T in [lower, upper] minimising the validation NLL of softmax(logits / T). Returns (T, NLL at T).

    The NLL is convex in β = 1/T (a log-sum-exp of functions linear in β less a linear term), so its derivative in β
    is increasing: bisection on the sign of the derivative, in log β, finds the minimum to ~1e-12 relative."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    lo, hi = math.log(1.0 / upper), math.log(1.0 / lower)
    if _nll_and_slope(logits, labels, math.exp(lo))[1] >= 0:
        beta = math.exp(lo)
    elif _nll_and_slope(logits, labels, math.exp(hi))[1] <= 0:
        beta = math.exp(hi)
    else:
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if _nll_and_slope(logits, labels, math.exp(mid))[1] > 0:
                hi = mid
            else:
                lo = mid
        beta = math.exp(0.5 * (lo + hi))
    return 1.0 / beta, _nll_and_slope(logits, labels, beta)[0]


# ------------------------------------------------------------------------------------------------ analysis


def read_history(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines() if line.strip()]


def _reliability_bins(logits: np.ndarray, labels: np.ndarray) -> dict[str, dict[str, list[float]]]:
    from adacal.metrics.binning import bin_statistics

    probs = _softmax(logits)
    confidences = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    out = {}
    for binning in ("equal-width", "equal-mass"):
        stats = bin_statistics(confidences, correct, n_bins=N_BINS, binning=binning)
        out[binning] = {"edges": stats.edges.tolist(), "counts": [int(c) for c in stats.counts],
                        "mean_confidence": stats.mean_confidence.tolist(), "accuracy": stats.accuracy.tolist()}
    return out


def _compact_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per epoch: lr, train loss/accuracy, val (and test, when recorded) error and ECE-EM, AdaFocal's updates."""
    keep = ("error", "ece_em", "nll", "loss", "accuracy")
    out = []
    for record in history:
        entry: dict[str, Any] = {"epoch": int(record["epoch"]), "lr": record.get("lr")}
        for split in ("train", "val", "test"):
            block = record.get(split)
            if isinstance(block, dict):
                entry[split] = {k: block[k] for k in keep if k in block}
        block = record.get("adafocal")
        if isinstance(block, dict) and block.get("updates"):
            entry["adafocal"] = {"updates": [
                {k: u[k] for k in ("edges", "gammas", "val_confidence", "val_accuracy", "counts") if k in u}
                for u in block["updates"]]}
        out.append(entry)
    return out


def analyse_run(run: Path) -> dict[str, Any]:
    """Test metrics before and after temperature scaling (T by the ECE-EM grid and by NLL, on validation logits)."""
    from adacal.metrics import compute_metrics
    from adacal.predictions import load_split_predictions

    preds = load_split_predictions(run / "predictions.npz")
    val, test = preds["val"], preds["test"]
    val_logits, test_logits = np.asarray(val.logits, np.float64), np.asarray(test.logits, np.float64)
    pre = compute_metrics(test_logits, test.labels, names=list(METRICS))
    fits = {}
    t_grid, val_ece = fit_temperature_grid(val_logits, val.labels)
    t_nll, val_nll = fit_temperature_nll(val_logits, val.labels)
    for name, temperature, objective in (("ts_ece_em", t_grid, {"val_ece_em": val_ece}),
                                         ("ts_nll", t_nll, {"val_nll": val_nll})):
        post = compute_metrics(test_logits / temperature, test.labels, names=list(METRICS))
        fits[name] = {"temperature": temperature, **objective, "test": {k: float(post[k]) for k in METRICS}}
    fits["ts_ece_em"]["method"] = "grid T = 0.1..10 step 0.1, first minimum of validation ECE-EM (15 bins)"
    fits["ts_nll"]["method"] = "T in [0.01, 100] minimising validation NLL (bisection on its convex form in 1/T)"
    val_pre = compute_metrics(val_logits, val.labels, names=["error", "ece_em", "nll"])
    history = read_history(run)
    out: dict[str, Any] = {
        "n_val": int(val.labels.shape[0]),
        "n_test": int(test.labels.shape[0]),
        "test_pre": {k: float(pre[k]) for k in METRICS},
        **fits,
        "val_pre": {k: float(v) for k, v in val_pre.items()},
        "final_train": {"loss": float(history[-1]["train"]["loss"]),
                        "accuracy": float(history[-1]["train"]["accuracy"])},
        "mean_test_confidence_pre": float(_softmax(test_logits).max(axis=1).mean()),
        "reliability_test_pre": _reliability_bins(test_logits, test.labels),
        "history": _compact_history(history),
    }
    updates = [u for r in history for u in ((r.get("adafocal") or {}).get("updates") or [])]
    if updates:
        final = updates[-1]
        conf, acc = np.asarray(final["val_confidence"], float), np.asarray(final["val_accuracy"], float)
        out["adafocal_final_bins"] = {
            "edges": [float(e) for e in final["edges"]],
            "gammas_after_update": [float(g) for g in final["gammas"]],
            "val_confidence": conf.tolist(),
            "val_accuracy": acc.tolist(),
            "e_val": (conf - acc).tolist(),
            "counts": [int(c) for c in final["counts"]],
        }
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


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
             score_ood: Callable[[Path, float], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The cell's result: read from its result file when that holds the current key (and `reuse`), else trained (or
    taken from a finished run folder), analysed, written atomically at once and, with `commit`, committed."""
    options, key = cell_key(cell)
    if reuse:
        done = read_result(cell.result, key)
        if done is not None:
            print(f"  [{cell.label}] done already: {_rel(cell.result)}", flush=True)
            return done
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
    write_result(cell.result, entry)
    f = flat_figures(entry)
    print(f"  [{cell.label}] test error {100 * f['error']:.2f}%  ECE-EM {100 * f['ece_em']:.2f}% → "
          f"{100 * f['ece_em_ts_ece_em']:.2f}% (T={f['t_ece_em']:.1f}, grid ECE-EM) / "
          f"{100 * f['ece_em_ts_nll']:.2f}% (T={f['t_nll']:.2f}, NLL)  → {_rel(cell.result)}", flush=True)
    if commit:
        commit_file(cell.result, f"Quality result: {dataset} {cell.name} {cell.arm} seed {cell.seed} "
                                 f"(key {key}, {timing.get('train_wall_seconds', '?')} s training)")
    return entry


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


def _rel(path: Path | str) -> str:
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


def run_cells(cells: list[Cell], *, dataset: str, reuse: bool, commit: bool, jobs: int, threads: int,
              score_ood: Callable[[Path, float], dict[str, Any]] | None = None) -> list[str]:
    """Run the cells not done yet, `jobs` at a time (separate processes, `threads` torch threads each).

    Returns the labels of the cells that failed (their error is printed; the others go on)."""
    failed: list[str] = []
    if jobs <= 1:
        for cell in cells:
            try:
                run_cell(cell, dataset=dataset, reuse=reuse, commit=commit, score_ood=score_ood)
            except Exception as exc:  # a failed run must not lose the grid's other runs
                print(f"  [{cell.label}] FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                failed.append(cell.label)
        return failed
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a clean torch in each worker
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_set_threads,
                                                initargs=(threads,)) as pool:
        futures = {pool.submit(run_cell, cell, dataset=dataset, reuse=reuse, commit=commit, score_ood=score_ood): cell
                   for cell in cells}
        for future in concurrent.futures.as_completed(futures):
            exc = future.exception()
            if exc is not None:
                cell = futures[future]
                print(f"  [{cell.label}] FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                failed.append(cell.label)
    return failed


def _set_threads(threads: int) -> None:
    """Torch threads of this process, and float32 arithmetic on CUDA (TF32 would make GPU seeds of a grid compute
    with a 10-bit mantissa where the CPU seeds had 23)."""
    import torch

    torch.set_num_threads(threads)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


# ------------------------------------------------------------------------------------------------ summaries


def flat_figures(entry: dict[str, Any]) -> dict[str, float | None]:
    """The per-run figures the tables show (fractions; T as is): `<metric>` before temperature scaling,
    `<metric>_ts_ece_em` / `<metric>_ts_nll` after it, `t_ece_em` / `t_nll` the two temperatures."""
    figures: dict[str, float | None] = dict(entry["test_pre"])
    for fit in ("ts_ece_em", "ts_nll"):
        figures.update({f"{k}_{fit}": v for k, v in entry[fit]["test"].items()})
    figures["t_ece_em"] = entry["ts_ece_em"]["temperature"]
    figures["t_nll"] = entry["ts_nll"]["temperature"]
    ood = entry.get("ood")
    if ood:
        figures["ood_auroc"] = ood["entropy"]["pre"]["auroc"]
        figures["ood_auroc_ts_ece_em"] = ood["entropy"]["post"]["auroc"] if ood["entropy"]["post"] else None
    seconds = (entry.get("timing") or {}).get("train_wall_seconds")
    figures["train_seconds"] = float(seconds) if seconds is not None else None
    return figures


def mean_std(values: list[Any]) -> dict[str, Any]:
    """Mean and sample standard deviation (ddof = 1; None for one value) of the finite values."""
    values = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    std = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def summarise(entries: list[dict[str, Any]], losses: list[str], arms: list[str]) -> list[dict[str, Any]]:
    """One row per (loss, arm) with results: seeds and mean ± std of every figure. Runs of other options (another
    key for the same cell) never get here: `collect` keeps only the files holding the current key."""
    rows = []
    for arm in arms:
        for loss in losses:
            chosen = sorted((e for e in entries if e["loss"] == loss and e["arm"] == arm), key=lambda e: e["seed"])
            if not chosen:
                continue
            flats = [flat_figures(e) for e in chosen]
            keys = list(dict.fromkeys(k for f in flats for k in f))
            devices = [device_of(e) for e in chosen]
            figures = {k: mean_std([f.get(k) for f in flats]) for k in keys}
            if len(set(devices)) > 1:  # a mean of CPU and GPU times means nothing: per device only
                figures.pop("train_seconds", None)
            rows.append({"loss": loss, "arm": arm, "seeds": [e["seed"] for e in chosen], "devices": devices,
                         "figures": figures,
                         # a GPU run takes a small fraction of a CPU run's time: times are only averaged per device
                         "train_seconds_by_device": {
                             d: mean_std([f.get("train_seconds") for f, e in zip(flats, devices) if e == d])
                             for d in dict.fromkeys(devices)}})
    return rows


def device_of(entry: dict[str, Any]) -> str:
    """Where a result's run trained, as training times are grouped: the GPU's name for a CUDA run (cuda and cuda:0 on
    the same card are one group, two kinds of card are two), 'cpu', or 'mixed' for a run resumed on another device.
    Results written before the device was recorded ran on the CPU, the only device the grid ran on then."""
    machine = entry.get("machine") or {}
    device = str(machine.get("device") or "cpu")
    if device.startswith("cuda"):
        return str(machine.get("gpu") or "cuda")
    return device


def _time_cell(row: dict[str, Any]) -> str:
    by_device = row.get("train_seconds_by_device") or {}
    if not by_device or list(by_device) == ["cpu"]:
        return _cell(row["figures"].get("train_seconds"), 1.0, 0)
    return " · ".join(f"{_cell(stat, 1.0, 0)} ({device})" for device, stat in by_device.items())


def _cell(stat: dict[str, Any] | None, scale: float = 100.0, digits: int = 2) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    text = f"{scale * stat['mean']:.{digits}f}"
    if stat.get("std") is not None:
        text += f" ± {scale * stat['std']:.{digits}f}"
    return text


TABLE_COLUMNS = (("error", "error", 100.0, 2), ("nll", "NLL", 1.0, 3), ("ece_em", "ECE-EM", 100.0, 2),
                 ("ece_ew", "ECE-EW", 100.0, 2), ("ece_debias", "ECE-debias", 100.0, 2),
                 ("ece_sweep_em", "ECE-sweep-EM", 100.0, 2), ("t_ece_em", "T (grid ECE-EM)", 1.0, 2),
                 ("ece_em_ts_ece_em", "ECE-EM post-T grid", 100.0, 2),
                 ("ece_debias_ts_ece_em", "ECE-debias post-T grid", 100.0, 2), ("t_nll", "T (NLL)", 1.0, 2),
                 ("ece_em_ts_nll", "ECE-EM post-T NLL", 100.0, 2), ("nll_ts_nll", "NLL post-T NLL", 1.0, 3))
OOD_COLUMNS = (("ood_auroc", "OOD AUROC", 100.0, 2), ("ood_auroc_ts_ece_em", "OOD AUROC post-T grid", 100.0, 2))


def table_rows(summary: list[dict[str, Any]], *, with_ood: bool) -> tuple[list[str], list[list[str]]]:
    columns = TABLE_COLUMNS + (OOD_COLUMNS if with_ood else ())
    header = ["loss", "arm", "seeds"] + [title for _, title, _, _ in columns] + ["train s/run"]
    rows = []
    for row in summary:
        f = row["figures"]
        rows.append([DISPLAY.get(row["loss"], row["loss"]), row["arm"], ",".join(map(str, row["seeds"]))]
                    + [_cell(f.get(key), scale, digits) for key, _, scale, digits in columns]
                    + [_time_cell(row)])
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def per_bin_table(bins: dict[str, Any]) -> str:
    """AdaFocal's last update per validation bin: edges, C_val, A_val, E_val (%), γ after the update."""
    header = ["bin", "lower", "upper", "n", "C_val %", "A_val %", "E_val %", "γ"]
    rows = []
    edges = bins["edges"]
    for i, (c, a, e, g, n) in enumerate(zip(bins["val_confidence"], bins["val_accuracy"], bins["e_val"],
                                            bins["gammas_after_update"], bins["counts"])):
        rows.append([str(i), f"{edges[i]:.3f}", f"{edges[i + 1]:.3f}", str(n), f"{100 * c:.1f}", f"{100 * a:.1f}",
                     f"{100 * e:+.1f}", f"{g:+.2f}"])
    return text_table(header, rows)


# ------------------------------------------------------------------------------------------------ figures


def draw_figures(entries: list[dict[str, Any]], losses: list[str], arms: list[str], folder: Path, *, slug: str,
                 title: str) -> dict[str, str]:
    """From the result files alone, per arm: reliability diagrams side by side (test, before temperature scaling,
    equal-width and equal-mass bins; the lowest seed every shown loss has), validation curves with mean ± std bands
    over seeds, and AdaFocal's γ dynamics (lowest seed). PNG at dpi 100 in `folder`; returns {figure: path}."""
    from adacal.metrics.binning import BinStatistics
    from adacal.plots import gamma_dynamics, reliability_diagram, save_figure, training_curves
    from adacal.plots.reliability_diagrams import ReliabilityPanel

    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}

    def save(fig: Any, name: str) -> None:
        path = folder / f"quality_{slug}_{name}.png"
        save_figure(fig, path, dpi=100)
        written[name] = _rel(path)

    for arm in arms:
        mine = [e for e in entries if e["arm"] == arm]
        shown = [loss for loss in losses if any(e["loss"] == loss for e in mine)]
        if not shown:
            continue
        seeds = sorted(set.intersection(*({e["seed"] for e in mine if e["loss"] == loss} for loss in shown)))
        if seeds:
            seed = seeds[0]
            chosen = [next(e for e in mine if e["loss"] == loss and e["seed"] == seed) for loss in shown]
            for binning in ("equal-width", "equal-mass"):
                panels = []
                for e in chosen:
                    b = e["reliability_test_pre"][binning]
                    stats = BinStatistics(edges=np.asarray(b["edges"]), counts=np.asarray(b["counts"]),
                                          mean_confidence=np.asarray(b["mean_confidence"]),
                                          accuracy=np.asarray(b["accuracy"]))
                    panels.append(ReliabilityPanel(label=DISPLAY[e["loss"]], stats=stats))
                save(reliability_diagram(panels, title=f"{title}, {arm} arm, seed {seed}: test set before temperature "
                                                       f"scaling ({binning} bins)"),
                     f"reliability_{binning.replace('-', '_')}_{arm.replace('-', '_')}")
        histories = {DISPLAY[loss]: [e["history"] for e in sorted(mine, key=lambda e: e["seed"]) if e["loss"] == loss]
                     for loss in shown}
        save(training_curves(histories, split="val", losses={DISPLAY[loss]: LOSS_SPECS[loss][0] for loss in shown},
                             title=f"{title}, {arm} arm: validation curves"), f"curves_{arm.replace('-', '_')}")
        ada = sorted((e for e in mine if e["loss"] == "adafocal" and "adafocal_final_bins" in e),
                     key=lambda e: e["seed"])
        if ada:
            save(gamma_dynamics(ada[0]["history"], GAMMA_PLOT_BINS,
                                title=f"AdaFocal, {title}, {arm} arm, seed {ada[0]['seed']}: E_val and γ per bin"),
                 f"adafocal_gamma_{arm.replace('-', '_')}")
    import matplotlib.pyplot as plt

    plt.close("all")
    return written


# ------------------------------------------------------------------------------------------------ the paper's figures
# Ghosh, Schaaf & Gormley, NeurIPS 2022 (paper/adafocal.tex): means over 5 seeds, in %. ECE-EM post-T uses T fitted on
# validation ECE-EM (Table "adaptive ECE"); ECE-debias / ECE-sweep-EM post-T use T fitted on validation ECE-EW (their
# appendix tables); OOD is CIFAR-10 → CIFAR-10-C Gaussian 5 with ResNet-110 (no ResNet-50 entry), post-T with T on
# ECE-EW.

PAPER_CIFAR10_RESNET50: dict[str, dict[str, float]] = {
    "ce": {"error": 4.95, "ece_em_pre": 4.24, "ece_em_post": 2.11, "temperature": 2.52, "ece_debias_pre": 4.05,
           "ece_debias_post": 1.70, "ece_sweep_em_pre": 4.05, "ece_sweep_em_post": 1.43,
           "ood_auroc_pre": 77.53, "ood_auroc_post": 75.16},
    "focal-3": {"ood_auroc_pre": 80.11, "ood_auroc_post": 79.78},
    "flsd-53": {"error": 4.98, "ece_em_pre": 1.63, "ece_em_post": 1.42, "temperature": 1.08, "ece_debias_pre": 1.62,
                "ece_debias_post": 1.62, "ece_sweep_em_pre": 1.54, "ece_sweep_em_post": 1.54,
                "ood_auroc_pre": 82.06, "ood_auroc_post": 81.38},
    "adafocal": {"error": 5.30, "ece_em_pre": 0.66, "ece_em_post": 0.44, "temperature": 1.06, "ece_debias_pre": 0.47,
                 "ece_debias_post": 0.82, "ece_sweep_em_pre": 0.04, "ece_sweep_em_post": 0.70, "ood_auroc_pre": 84.96},
    "brier": {"error": 5.00, "ece_em_pre": 1.78, "ece_em_post": 1.24, "temperature": 1.11,
              "ood_auroc_pre": 84.09, "ood_auroc_post": 83.86},
    "ls-0.05": {"error": 5.29, "ece_em_pre": 3.86, "ece_em_post": 2.97, "temperature": 0.92,
                "ood_auroc_pre": 72.17, "ood_auroc_post": 72.18},
    "mmce": {"error": 4.99, "ece_em_pre": 4.52, "ece_em_post": 2.12, "temperature": 2.65,
             "ood_auroc_pre": 71.96, "ood_auroc_post": 70.02},
}
PAPER_20NG_CNN: dict[str, dict[str, float]] = {
    "ce": {"error": 26.68, "ece_em_pre": 18.57, "ece_em_post": 4.08, "temperature": 3.78, "ece_debias_pre": 18.36,
           "ece_debias_post": 5.23, "ece_sweep_em_pre": 18.38, "ece_sweep_em_post": 5.53},
    "flsd-53": {"error": 27.98, "ece_em_pre": 8.86, "ece_em_post": 2.13, "temperature": 1.58, "ece_debias_pre": 8.94,
                "ece_debias_post": 0.94, "ece_sweep_em_pre": 8.95, "ece_sweep_em_post": 2.13},
    "adafocal": {"error": 28.53, "ece_em_pre": 2.62, "ece_em_post": 2.46, "temperature": 1.10, "ece_debias_pre": 1.84,
                 "ece_debias_post": 1.84, "ece_sweep_em_pre": 2.22, "ece_sweep_em_post": 2.22},
    "brier": {"error": 27.06, "ece_em_pre": 13.52, "ece_em_post": 3.13, "temperature": 2.33},
    "ls-0.05": {"error": 26.03, "ece_em_pre": 4.36, "ece_em_post": 2.62, "temperature": 1.12},
    "mmce": {"error": 27.23, "ece_em_pre": 15.23, "ece_em_post": 6.45, "temperature": 2.21},
}
PAPER_COLUMNS = (("error", "error"), ("ece_em_pre", "ECE-EM"), ("ece_debias_pre", "ECE-debias"),
                 ("ece_sweep_em_pre", "ECE-sweep-EM"), ("temperature", "T"), ("ece_em_post", "ECE-EM post-T"),
                 ("ece_debias_post", "ECE-debias post-T*"), ("ece_sweep_em_post", "ECE-sweep-EM post-T*"),
                 ("ood_auroc_pre", "OOD AUROC†"), ("ood_auroc_post", "OOD AUROC post-T†"))


def paper_rows(
    paper: dict[str, dict[str, float]], losses: list[str], *, with_ood: bool
) -> tuple[list[str], list[list[str]]]:
    columns = [c for c in PAPER_COLUMNS if with_ood or not c[0].startswith("ood")]
    header = ["loss (paper)"] + [title for _, title in columns]
    rows = []
    for loss in losses:
        figures = paper.get(loss)
        if not figures:
            continue
        rows.append([DISPLAY[loss]] + [("–" if key not in figures else
                                        f"{figures[key]:.2f}" if key != "temperature" else f"{figures[key]:.2f}")
                                       for key, _ in columns])
    return header, rows




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
                  score_ood: Callable[[Path, float], dict[str, Any]] | None = None) -> int:
    """Run the grid (seeds × arms × losses) — skipping the cells whose result file holds their key — then rebuild the
    summary JSON, the tables and the figures from the result files."""
    check_common_arguments(args)
    _set_threads(args.threads)
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
          f"{len(done)} done already (result files in {_rel(runs_dir)}), {len(todo)} to run", flush=True)
    started = time.perf_counter()
    failed: list[str] = []
    if not args.summary_only:
        if args.fresh:
            todo = cells
        failed = run_cells(todo, dataset=dataset, reuse=not args.fresh, commit=args.commit, jobs=args.jobs,
                           threads=args.threads, score_ood=score_ood)
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
        "argv": sys.argv[1:] if argv is None else list(argv), "runs_dir": _rel(runs_dir)}, results={
        "units": "metrics are fractions (tables show %); nll in nats; temperature unitless; std is the sample "
                 "standard deviation over seeds (ddof 1)",
        "summary": summary, "table_percent": {"header": header, "rows": rows},
        "runs": [{"loss": e["loss"], "arm": e["arm"], "seed": e["seed"], "key": e["key"],
                  "result_file": _rel(result_path(runs_dir, e["loss"], e["arm"], e["seed"])),
                  "figures": flat_figures(e), "timing": e.get("timing"), "machine": e.get("machine")}
                 for e in entries],
        "missing": [{"loss": c.name, "arm": c.arm, "seed": c.seed} for c in missing],
        "paper_percent": {"note": paper_note, "figures": paper, "table": {"header": paper_header, "rows": paper_table}},
        "plots": plots, "wall_seconds_this_invocation": round(time.perf_counter() - started, 1),
    }))
    print(
        f"\nwrote {_rel(Path(args.results))}"
        + (f"; {len(failed)} run(s) failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
