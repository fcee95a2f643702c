"""What the calibration-quality grid trains and how its results are keyed (the leaf of the quality benchmarks'
modules: quality_common.py, the driver, re-exports all of it).

- Where things go: `ROOT` (the checkout, put on sys.path so the scripts run without installing adacal), the shared
  data folder, and the results, plots and result-file folders in the repository.
- `LOSS_SPECS`: the compared losses by benchmark name ("focal-3" = focal with γ = 3, "ls-0.05" = label smoothing 0.05),
  with AdaFocal's `VARIANTS` and their γ-update schedules (`variant_schedule`).
- `ARMS`: "mean" (adacal's default dynamics: loss averaged over the batch, no clipping) and "sum-clip" (the reference
  code's: loss summed over the batch, gradient norm clipped to 2).
- Result keys: `protocol_options` (the resolved training options that decide a result), `protocol_key` (their hash
  with `ANALYSIS_PROTOCOL`), `arm_of`, and `with_loss_defaults` for comparing a run folder's options with a cell's.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing


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


def repo_relative(path: Path | str) -> str:
    """`path` relative to the checkout when it lies inside it, else as given."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


# benchmark name -> (adacal loss name, loss options)
LOSS_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "ce": ("ce", {}),
    "focal-3": ("focal", {"gamma": 3.0}),
    "flsd-53": ("flsd-53", {}),
    "adafocal": ("adafocal", {}),
    "brier": ("brier", {}),
    "ls-0.05": ("label-smoothing", {"alpha": 0.05}),
    "mmce": ("mmce", {}),
    # published after AdaFocal, with their papers' / authors' CIFAR-10 hyper-parameters (the losses' defaults)
    "dual-focal-5": ("dual-focal", {"gamma": 5.0}),
    "mbls": ("mbls", {"margin": 10.0, "margin_weight": 0.1}),
    "acls": ("acls", {}),
    # λ and ρ updated from validation once an epoch (ρ every 10th update), as the authors' trainer does
    "cals": ("cals", {"margin": 10.0}),
    "mdca": ("mdca", {"beta": 1.0}),
    "confidence-penalty": ("confidence-penalty", {"beta": 0.1}),
}
DISPLAY = {"ce": "CE", "focal-3": "FL-3", "flsd-53": "FLSD-53", "adafocal": "AdaFocal", "brier": "Brier",
           "ls-0.05": "LS-0.05", "mmce": "MMCE", "dual-focal-5": "DFL-5", "mbls": "MbLS", "acls": "ACLS",
           "cals": "CALS", "mdca": "NLL+MDCA", "confidence-penalty": "Conf. penalty"}

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
# What adacal does when TrainConfig has no such option: averages the loss over the batch and does not clip.
ARM_DEFAULTS: dict[str, Any] = {"loss_reduction": "mean", "grad_clip": None}


# What `analyse_run` (quality_analysis.py) computes; part of every result's key, so a changed analysis is not
# taken for a finished one.
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
    for key, default in ARM_DEFAULTS.items():
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


def with_loss_defaults(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with every loss hyper-parameter filled in: a run's config.json records them all, a resolved
    TrainConfig only those typed. Only for comparing runs: result keys stay hashes of the options as typed."""
    from adacal.training.config import resolved_loss_options

    return {**options, "loss_options": _plain(resolved_loss_options(options["loss"], options["loss_options"]))}
