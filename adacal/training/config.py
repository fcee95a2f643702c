"""Training options: one dataclass, presets per dataset, defaults; all checked before any work starts.

Every field of `TrainConfig` defaults to None, meaning "not given": `resolve_config` fills it from the preset for the
dataset (`quick` unless `preset="paper"`), so a resumed run can tell options the user typed from defaults.

Presets (an explicit option always wins over its preset):
- quick (default): a short schedule that finishes on a laptop CPU for `digits` (SGD, 30 epochs), and a 30-epoch version
  of the paper's optimiser settings for the other datasets (milestones at epochs 15 and 25).
- paper: the paper's protocol (PAPER.md) for cifar10, cifar100, tiny-imagenet, imagenet and 20newsgroups. On the
  image datasets it also trains as the reference code does (torrvision/focal_calibration, which 3mcloud/adafocal
  copies): the loss summed over the batch (`loss_reduction="sum"`) and the gradient norm clipped to 2 before each SGD
  step (`grad_clip=2`). The reference sums cross-entropy, focal, FLSD-53 (focal_loss_adaptive), AdaFocal and MMCE
  (len(batch) × mean); its Brier score is a batch mean, so brier keeps "mean" (PAPER_REDUCTION).

`--update-every` (AdaFocal's γ-update schedule) is parsed by `adacal.training.update_schedule`; a resumed run's
options (the checkpoint's, with what a resume may change) are merged by `adacal.training.resume_config`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from adacal.checks import check_integer, integer_kind, is_integer, renamed_options
from adacal.conventions import DEFAULT_RUNS_DIR, LOSS_OPTION_ALIASES, LOSS_OPTION_FLAGS, MDCA_BASES
from adacal.errors import InputError
from adacal.training.update_schedule import parse_update_every

OPTIMIZERS = ("sgd", "adam", "adamw")
REDUCTIONS = ("mean", "sum")
SELECTIONS = ("last", "best-val")
PRESETS = ("quick", "paper")
DEFAULT_DATASET = "digits"
DEFAULT_LOSS = "adafocal"

_SGD = {"optimizer": "sgd", "momentum": 0.9}
# the reference code's clip_grad_norm_(model.parameters(), 2); reduction: PAPER_REDUCTION
_REFERENCE = {"grad_clip": 2.0}
_PAPER_CIFAR = {**_SGD, "batch_size": 128, "epochs": 350, "lr": 0.1, "milestones": (150, 250), "lr_decay": 0.1,
                "weight_decay": 5e-4, "select": "last", **_REFERENCE}
_QUICK_CIFAR = {**{k: v for k, v in _PAPER_CIFAR.items() if k not in _REFERENCE}, "epochs": 30, "milestones": (15, 25)}
PAPER_PRESETS: dict[str, dict[str, Any]] = {
    "cifar10": _PAPER_CIFAR,
    "cifar100": _PAPER_CIFAR,
    "tiny-imagenet": {**_PAPER_CIFAR, "epochs": 100, "batch_size": 64, "milestones": (40, 60), "select": "best-val"},
    "imagenet": {**_SGD, "batch_size": 128, "epochs": 90, "lr": 0.01, "milestones": (30, 60), "lr_decay": 0.1,
                 "weight_decay": 1e-4, "select": "last", **_REFERENCE},
    "20newsgroups": {"optimizer": "adam", "lr": 1e-3, "epochs": 50, "batch_size": 128, "milestones": (),
                     "lr_decay": 0.1, "weight_decay": 0.0, "select": "last"},
}
QUICK_PRESETS: dict[str, dict[str, Any]] = {
    # Measured (seeds 0-2): 96.6 % mean test accuracy on digits with the default mlp, a few seconds on one CPU core.
    "digits": {"optimizer": "sgd", "momentum": 0.9, "lr": 0.1, "epochs": 30, "batch_size": 32, "milestones": (20,),
               "lr_decay": 0.1, "weight_decay": 0.0, "select": "last"},
    "cifar10": _QUICK_CIFAR,
    "cifar100": _QUICK_CIFAR,
    "svhn": _QUICK_CIFAR,
    "tiny-imagenet": {**_QUICK_CIFAR, "batch_size": 64},
    "imagenet": {**{k: v for k, v in PAPER_PRESETS["imagenet"].items() if k not in _REFERENCE}, "epochs": 30,
                 "milestones": (15, 25)},
    "20newsgroups": {**PAPER_PRESETS["20newsgroups"], "epochs": 10},
}
GENERIC_QUICK = _QUICK_CIFAR
# The paper preset's reduction per loss on the datasets that have _REFERENCE settings: what the reference code does
# (a loss not listed there is summed like its relatives: inverse-focal and calfocal like focal, label-smoothing like
# cross-entropy). Every other preset, and the paper preset of 20newsgroups (Adam), use the mean.
PAPER_REDUCTION = {"brier": "mean"}
# Defaults that do not depend on the dataset.
COMMON_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "device": "auto",
    "amp": False,
    "channels_last": False,
    "update_every": "epoch",
    "grad_clip": None,
    "loss_reduction": "mean",
    "eval_test_every": 0,
    "out": DEFAULT_RUNS_DIR,
    "workers": 0,
    "model_options": {},
    "loss_options": {},
}


@dataclass
class TrainConfig:
    """Every option of `adacal train`; None means "use the preset/default" (see `resolve_config`)."""

    dataset: str | None = None
    model: str | None = None
    loss: str | None = None
    model_options: dict[str, Any] | None = None
    loss_options: dict[str, Any] | None = None
    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    milestones: tuple[int, ...] | None = None
    lr_decay: float | None = None
    momentum: float | None = None
    weight_decay: float | None = None
    optimizer: str | None = None
    seed: int | None = None
    device: str | None = None
    amp: bool | None = None
    channels_last: bool | None = None
    update_every: str | int | None = None
    select: str | None = None
    grad_clip: float | None = None
    eval_test_every: int | None = None
    out: str | None = None
    resume: str | None = None
    workers: int | None = None
    data_dir: str | None = None
    train_subset: int | None = None
    val_size: int | None = None
    test_subset: int | None = None
    preset: str | None = None
    loss_reduction: str | None = None
    name: str | None = None
    label_column: str | None = None

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # numpy scalars (np.int64(30) epochs) as the Python numbers they are
            value = getattr(self, field.name)
            if isinstance(value, np.generic):
                setattr(self, field.name, value.item())
        if isinstance(self.loss_options, dict):  # num_bins (deprecated; config.json files may say it) reads as n_bins
            self.loss_options = renamed_options(self.loss_options, LOSS_OPTION_ALIASES)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/checkpoint-safe values (tuples become lists)."""
        data = dataclasses.asdict(self)
        if data["milestones"] is not None:
            data["milestones"] = [int(m) for m in data["milestones"]]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        milestones = values.get("milestones")
        if isinstance(milestones, (list, tuple)) and all(
                isinstance(m, (int, np.integer)) and not isinstance(m, bool) for m in milestones):
            values["milestones"] = tuple(int(m) for m in milestones)
        # Anything else (a string, 1.5, a number) stays as given, for `check_structure` to refuse: int("15") would
        # make epochs 1 and 5, int(1.5) epoch 1.
        return cls(**values)


# ---------------------------------------------------------------------------------------------------------------------
# resolving and validating


def preset_values(dataset: str, preset: str) -> dict[str, Any]:
    if preset not in PRESETS:
        raise _choice_error("--preset", preset, PRESETS)
    if preset == "paper":
        if dataset not in PAPER_PRESETS:
            raise InputError(
                f"The paper preset has settings for {', '.join(PAPER_PRESETS)}; got dataset '{dataset}' "
                f"(leave out --preset to use the quick defaults)."
            )
        return dict(PAPER_PRESETS[dataset])
    return dict(QUICK_PRESETS.get(dataset, GENERIC_QUICK))


_NAME_FIELDS = ("dataset", "model", "loss", "optimizer", "device", "select", "preset", "loss_reduction", "name",
                "label_column")
_PATH_FIELDS = ("out", "resume", "data_dir")


def check_structure(config: Any) -> None:
    """The container and type checks a TrainConfig built in Python needs before any of its values is read (the CLI
    builds it right): a TrainConfig, names as strings, paths as strings or path-likes, option dicts as dicts, and
    milestones as a sequence of epoch numbers (int() of "15" would give the epochs 1 and 5, of 1.5 epoch 1)."""
    if not isinstance(config, TrainConfig):
        raise InputError(f"Expected a TrainConfig (TrainConfig(**options) or TrainConfig.from_dict(...)), got "
                         f"{type(config).__name__}.")
    for key in _NAME_FIELDS:
        value = getattr(config, key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"Expected {key} to be a name (a string), got {value!r}.")
    for key in _PATH_FIELDS:
        value = getattr(config, key)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise InputError(f"Expected {key} to be a path (a string), got {value!r}.")
    for key in ("model_options", "loss_options"):
        value = getattr(config, key)
        if value is not None and not isinstance(value, dict):
            raise InputError(f"Expected {key} to be a dict of option names and values, got {value!r}.")
    milestones = config.milestones
    if milestones is not None and (
            isinstance(milestones, (str, bytes, dict)) or not isinstance(milestones, (list, tuple))
            or not all(isinstance(m, (int, np.integer)) and not isinstance(m, bool) for m in milestones)):
        raise InputError(f"Expected milestones to be a sequence of epoch numbers such as (15, 25), got {milestones!r}.")


def resolve_config(config: TrainConfig) -> TrainConfig:
    """A copy of `config` with every None filled from the preset and common defaults, then validated."""
    check_structure(config)
    dataset = config.dataset or DEFAULT_DATASET
    from adacal.data.user_data import user_data_path

    path = user_data_path(dataset)
    if path is not None:  # the user's own data: recorded absolute, so that evaluate and resume reload it from anywhere
        dataset = str(path)
    preset = config.preset or "quick"
    defaults = {**COMMON_DEFAULTS, **preset_values(dataset, preset)}
    values = config.to_dict()
    values["dataset"], values["preset"] = dataset, preset
    values["loss"] = _loss_key(config.loss or DEFAULT_LOSS)
    if preset == "paper" and values.get("loss_reduction") is None and defaults.get("grad_clip") is not None:
        values["loss_reduction"] = PAPER_REDUCTION.get(values["loss"], "sum")
    for key, default in defaults.items():
        if values.get(key) is None:
            values[key] = default
    if values["optimizer"] != "sgd" and config.momentum is None:
        values["momentum"] = None
    elif values["optimizer"] == "sgd" and values.get("momentum") is None:
        values["momentum"] = 0.9
    values["model_options"] = dict(values["model_options"] or {})
    values["loss_options"] = dict(values["loss_options"] or {})
    resolved = TrainConfig.from_dict(values)
    validate_config(resolved)
    resolved.update_every = parse_update_every(resolved.update_every).spec
    return resolved


def _choice_error(flag: str, value: Any, choices: tuple[str, ...]) -> InputError:
    """An option outside its choices: the choices, and the closest one when the value looks like a typo."""
    from adacal.errors import closest_name

    suggestion = closest_name(str(value), choices)
    hint = f" Did you mean '{suggestion}'?" if suggestion else ""
    return InputError(f"Expected {flag} to be one of {', '.join(choices)}, got {value!r}.{hint}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and is_integer(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require_int(value: Any, flag: str, minimum: int) -> None:
    if not _is_int(value):  # a config holds Python ints only (numpy ones would not survive JSON)
        raise InputError(f"Expected {flag} to be {integer_kind(minimum)}, got {value!r}.")
    check_integer(value, flag, minimum=minimum)


# Model weights, optimiser state and the loss are float32: a number outside float32's range would become inf (or 0).
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_TINY = 1.401298464324817e-45  # the smallest positive float32 (subnormal)


def _require_float32(value: Any, flag: str) -> None:
    """A finite number that float32 can hold: |value| <= 3.4e38 and not a non-zero that rounds to 0."""
    if not _is_number(value):
        return  # the option's own check names what was expected
    if abs(value) > FLOAT32_MAX or (value != 0 and abs(value) < FLOAT32_TINY / 2):
        raise InputError(
            f"Expected {flag} to be a number float32 weights can use (magnitude between 1.4e-45 and 3.4e38, or 0), "
            f"got {value!r}."
        )


def _memory_bytes() -> int:
    """Physical memory of this machine, capped by $ADACAL_MEMORY_LIMIT (`adacal.memory.physical_memory`)."""
    from adacal.memory import physical_memory

    return physical_memory()


# Per validation bin, AdaFocal keeps a few float64 tensors and history.jsonl gets ~10 numbers per update: counting
# 1 KiB per bin (the JSON text, the per-epoch record lists, the per-sample bin lookups) keeps every run far within
# memory.
BYTES_PER_BIN = 1024


def max_n_bins() -> int:
    """The largest --n-bins this machine can hold: a quarter of its memory at BYTES_PER_BIN per bin."""
    return max(1, _memory_bytes() // 4 // BYTES_PER_BIN)


def _check_run_name(name: Any) -> None:
    if name is None:
        return
    text = str(name)
    if not isinstance(name, str) or not text.strip() or text in (".", "..") or "/" in text or "\\" in text \
            or "\x00" in text or text.startswith("-"):
        raise InputError(
            f"Expected --name to be a folder name (no '/', not '.' or '..', not starting with '-'), got {name!r}."
        )


def validate_config(config: TrainConfig) -> None:
    """Check every number and choice of a resolved config; one-sentence InputError naming the option."""
    for flag, value in (("--lr", config.lr), ("--lr-decay", config.lr_decay), ("--momentum", config.momentum),
                        ("--weight-decay", config.weight_decay), ("--grad-clip", config.grad_clip)):
        _require_float32(value, flag)
    if config.loss_reduction not in REDUCTIONS:
        raise _choice_error("--loss-reduction", config.loss_reduction, REDUCTIONS)
    _check_run_name(config.name)
    from adacal.writing import check_name_lengths

    for flag, value in (("--out", config.out), ("--data-dir", config.data_dir)):
        if isinstance(value, str):
            check_name_lengths(value, flag)
    _require_int(config.epochs, "--epochs", 1)
    _require_int(config.batch_size, "--batch-size", 1)
    if not _is_number(config.lr) or config.lr <= 0:
        raise InputError(f"Expected --lr to be a positive number, got {config.lr!r}.")
    if not _is_number(config.lr_decay) or not 0 < config.lr_decay <= 1:
        raise InputError(f"Expected --lr-decay to be in (0, 1], got {config.lr_decay!r}.")
    milestones = list(config.milestones or ())
    for milestone in milestones:
        if not _is_int(milestone) or milestone < 1:
            raise InputError(f"Expected --milestones to be positive epoch numbers, got {milestone!r}.")
    if any(b <= a for a, b in zip(milestones, milestones[1:])):
        raise InputError(f"Expected --milestones to be strictly increasing, got {','.join(map(str, milestones))}.")
    if config.optimizer not in OPTIMIZERS:
        raise _choice_error("--optimizer", config.optimizer, OPTIMIZERS)
    if config.momentum is not None:
        if config.optimizer != "sgd":
            raise InputError(f"--momentum applies to --optimizer sgd only, got --optimizer {config.optimizer}.")
        if not _is_number(config.momentum) or not 0 <= config.momentum < 1:
            raise InputError(f"Expected --momentum to be in [0, 1), got {config.momentum!r}.")
    if not _is_number(config.weight_decay) or config.weight_decay < 0:
        raise InputError(f"Expected --weight-decay to be a number >= 0, got {config.weight_decay!r}.")
    if not _is_int(config.seed) or not 0 <= config.seed < 2**32:
        raise InputError(f"Expected --seed to be an integer in [0, 2**32), got {config.seed!r}.")
    device = str(config.device)
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device, re.ASCII):
        raise InputError(f"Expected --device to be auto, cpu or cuda (or cuda:N), got {config.device!r}.")
    parse_update_every(config.update_every)
    if config.select not in SELECTIONS:
        raise _choice_error("--select", config.select, SELECTIONS)
    if config.grad_clip is not None and (not _is_number(config.grad_clip) or config.grad_clip <= 0):
        raise InputError(f"Expected --grad-clip to be a positive number, got {config.grad_clip!r}.")
    _require_int(config.eval_test_every, "--eval-test-every", 0)
    _require_int(config.workers, "--workers", 0)
    if config.train_subset is not None:
        _require_int(config.train_subset, "--train-subset", 1)
    if config.val_size is not None:
        _require_int(config.val_size, "--val-size", 1)
    if config.test_subset is not None:
        _require_int(config.test_subset, "--test-subset", 1)
    if not isinstance(config.amp, bool) or not isinstance(config.channels_last, bool):
        raise InputError("Expected --amp and --channels-last to be true or false.")
    _validate_loss_options(config.loss_options or {})


# Weights and margins of the losses published after AdaFocal (dual-focal, mbls, acls, cals, mdca,
# confidence-penalty).
_NON_NEGATIVE_OPTIONS = ("margin", "margin_weight", "pos_lambda", "neg_lambda", "beta", "lambda_min", "lambda_max",
                         "tau")
_POSITIVE_OPTIONS = ("rho_min", "rho_max", "rho_growth")  # CALS's penalty parameter ρ and its growth
_MDCA_BASE_OPTIONS = {"gamma": "focal", "alpha": "label-smoothing"}


def _validate_loss_options(options: dict[str, Any]) -> None:
    """Number checks that need no loss class; whether the loss takes an option is checked in `check_names`."""

    def flag(name: str) -> str:
        return LOSS_OPTION_FLAGS.get(name, name)

    numbers = ("gamma", "gamma_init", "gamma_max", "gamma_min", "lam", "switch_threshold", "weight", "alpha",
               *_NON_NEGATIVE_OPTIONS, *_POSITIVE_OPTIONS)
    # None: an option the loss does not use with its other options (mdca's gamma and alpha away from their base)
    for name in numbers:
        if options.get(name) is not None and not _is_number(options[name]):
            raise InputError(f"Expected {flag(name)} to be a finite number, got {options[name]!r}.")
    for name in numbers:
        if options.get(name) is not None:
            _require_float32(options[name], flag(name))
    for name in _NON_NEGATIVE_OPTIONS:
        if name in options and options[name] < 0:
            raise InputError(f"Expected {flag(name)} to be >= 0, got {options[name]!r}.")
    if "base" in options and options["base"] not in MDCA_BASES:
        raise _choice_error("--mdca-base", options["base"], MDCA_BASES)
    if "n_bins" in options:
        _require_int(options["n_bins"], "--n-bins", 1)
        bound = max_n_bins()
        if options["n_bins"] > bound:
            need = options["n_bins"] * BYTES_PER_BIN / 2**30
            raise InputError(
                f"Expected --n-bins to be at most {bound} on this machine, got {options['n_bins']} (about "
                f"{need:.3g} GiB for the bins, more than a quarter of the {_memory_bytes() / 2**30:.3g} GiB installed)."
            )
    if options.get("rho_every") is not None:
        _require_int(options["rho_every"], "--cals-rho-every", 1)
    for name in ("switch_threshold", "lam", "weight", *_POSITIVE_OPTIONS):
        if name in options and options[name] <= 0:
            raise InputError(f"Expected {flag(name)} to be positive, got {options[name]!r}.")
    if options.get("gamma") is not None and options["gamma"] < 0:
        raise InputError(f"Expected --gamma to be >= 0, got {options['gamma']!r}.")
    if options.get("alpha") is not None and not 0 <= options["alpha"] < 1:
        raise InputError(f"Expected --smoothing to be in [0, 1), got {options['alpha']!r}.")


def check_loss_options(loss: str, options: dict[str, Any]) -> None:
    """Each loss option must be one the loss takes ("--gamma does not apply to --loss ce"), and γ_max > γ_min."""
    from adacal.losses import LOSSES
    from adacal.losses.base import INPUT_OPTIONS
    from adacal.registry import option_names

    factory = LOSSES.get(loss)
    accepted = [name for name in option_names(factory) if name not in INPUT_OPTIONS]
    for name in options:
        if name not in accepted:
            takes = ", ".join(LOSS_OPTION_FLAGS.get(a, a) for a in accepted) or "no options"
            raise InputError(f"{LOSS_OPTION_FLAGS.get(name, name)} does not apply to --loss {loss} (it takes: "
                             f"{takes}).")
    defaults = _keyword_defaults(factory)
    gamma_max = options.get("gamma_max", defaults.get("gamma_max"))
    gamma_min = options.get("gamma_min", defaults.get("gamma_min"))
    if _is_number(gamma_max) and _is_number(gamma_min) and not gamma_max > gamma_min:
        raise InputError(f"Expected --gamma-max to be greater than --gamma-min, got {gamma_max} and {gamma_min}.")
    if loss == "mdca":
        base = options.get("base", defaults.get("base"))
        for name, takes in _MDCA_BASE_OPTIONS.items():
            if options.get(name) is not None and base != takes:
                raise InputError(f"{LOSS_OPTION_FLAGS[name]} applies to --loss mdca with --mdca-base {takes} only, "
                                 f"got --mdca-base {base}.")
    if loss == "cals" and options.get("margin") is not None and options["margin"] == 0:
        raise InputError("Expected --margin to be greater than 0 for --loss cals (its constraints are divided by it), "
                         "got 0.")
    for low, high in (("lambda_min", "lambda_max"), ("rho_min", "rho_max")):  # CALS's bounds
        lowest, highest = options.get(low, defaults.get(low)), options.get(high, defaults.get(high))
        if _is_number(lowest) and _is_number(highest) and highest < lowest:
            raise InputError(f"Expected {LOSS_OPTION_FLAGS[high]} to be at least {LOSS_OPTION_FLAGS[low]}, got "
                             f"{highest} and {lowest}.")
    threshold = options.get("switch_threshold", defaults.get("switch_threshold"))
    if _is_number(threshold) and _is_number(gamma_max) and threshold > gamma_max:
        raise InputError(f"Expected --switch-threshold to be at most --gamma-max, got {threshold} and {gamma_max}.")


def resolved_loss_options(loss: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """Every hyper-parameter the loss is built with: its keyword defaults (plain JSON values) overlaid with `options`,
    so config.json and --print-config say what was used, not only what was typed."""
    from adacal.losses import LOSSES
    from adacal.losses.base import INPUT_OPTIONS
    from adacal.registry import option_names

    factory = LOSSES.get(loss)
    accepted = [name for name in option_names(factory) if name not in INPUT_OPTIONS]
    options = renamed_options(options or {}, LOSS_OPTION_ALIASES)  # a run's config.json may say num_bins
    defaults = {
        name: value for name, value in _keyword_defaults(factory).items()
        if name in accepted and (value is None or isinstance(value, (bool, int, float, str)))
    }
    resolved = {**defaults, **(options or {})}
    complete = getattr(factory, "resolved_options", None)  # a loss whose options depend on each other (mdca's base)
    return complete(resolved) if callable(complete) else resolved


def _keyword_defaults(factory: Any) -> dict[str, Any]:
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _loss_key(name: Any) -> Any:
    """A loss name as registered ("AdaFocal" → "adafocal"), so the run records one spelling; others pass unchanged
    (for `check_names` to refuse)."""
    from adacal.losses import LOSSES

    return LOSSES.key(name) if name in LOSSES else name


def check_names(config: TrainConfig) -> None:
    """Dataset, model and loss names exist (unknown → error with the closest match); loss options fit the loss."""
    from adacal.data import dataset_names
    from adacal.errors import UnknownNameError, unknown_name
    from adacal.losses import LOSSES
    from adacal.models import MODELS, TORCHVISION_PREFIX, torchvision_model_names

    from adacal.data.base import PATH_HINT
    from adacal.data.user_data import user_data_kind, user_data_path

    path = user_data_path(config.dataset)
    if path is None and config.dataset not in dataset_names():
        from adacal.data.base import check_dataset_name

        check_dataset_name(str(config.dataset))  # a path that does not exist: said so
        error = unknown_name("dataset", str(config.dataset), dataset_names())
        raise UnknownNameError(f"{error} {PATH_HINT}")
    kind = user_data_kind(path) if path is not None else None
    if config.label_column is not None and kind != "table":
        raise InputError(f"--label-column applies to a CSV file dataset, got --dataset {config.dataset}.")
    model = str(config.model)
    if config.model is not None and model.startswith(TORCHVISION_PREFIX):
        name = model[len(TORCHVISION_PREFIX) :]
        if name not in torchvision_model_names():
            raise unknown_name("torchvision model", name, torchvision_model_names())
    elif config.model is not None and model not in MODELS:
        error = unknown_name("model", model, MODELS.names())
        raise UnknownNameError(f"{error} Any torchvision classifier works as {TORCHVISION_PREFIX}<name>.")
    if config.loss not in LOSSES:
        raise unknown_name("loss", str(config.loss), LOSSES.names())
    check_loss_options(config.loss, config.loss_options or {})


def check_model_options(config: TrainConfig) -> None:
    """Options that shape the model of a new run: --embeddings names an existing file and goes with textcnn."""
    from pathlib import Path

    from adacal.models import default_model

    embeddings = (config.model_options or {}).get("embeddings")
    if embeddings is None:
        return
    from adacal.data.user_data import default_user_model

    model = config.model or default_user_model(config.dataset) or default_model(str(config.dataset))
    if model != "textcnn":
        raise InputError(f"--embeddings applies to --model textcnn only, got --model {model}.")
    from adacal.writing import check_name_lengths

    check_name_lengths(str(embeddings), "--embeddings")
    path = Path(str(embeddings)).expanduser()
    if not path.is_file():
        what = "is a folder" if path.is_dir() else ("is not a regular file" if path.exists() else "does not exist")
        raise InputError(f"Expected --embeddings to be a GloVe text file, but {embeddings} {what}.")


def unreached_milestones(config: TrainConfig) -> list[str]:
    """A note when learning-rate milestones of a resolved config are at or past its last epoch (they never fire in
    this run: `--preset paper --epochs 30` keeps the paper's 150, 250), else nothing."""
    late = [int(m) for m in (config.milestones or ()) if int(m) >= int(config.epochs)]
    if not late:
        return []
    listed = ",".join(map(str, late))
    return [f"--milestones {listed} {'is' if len(late) == 1 else 'are'} at or past the last epoch ({config.epochs}): "
            "the learning rate does not drop there in this run (a later --resume to more epochs reaches "
            f"{'it' if len(late) == 1 else 'them'})"]


__all__ = [
    "TrainConfig",
    "resolve_config",
    "validate_config",
    "check_names",
    "check_loss_options",
    "check_model_options",
    "resolved_loss_options",
    "unreached_milestones",
    "max_n_bins",
    "preset_values",
    "PAPER_PRESETS",
    "QUICK_PRESETS",
    "LOSS_OPTION_FLAGS",
]
