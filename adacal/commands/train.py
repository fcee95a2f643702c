"""`adacal train` as one library call: a `TrainConfig` from the command's flat options, then training
(`adacal.training`), or the fully resolved configuration without training (`--print-config`)."""

from __future__ import annotations

import re
from typing import Any

from adacal.conventions import LOSS_OPTION_FLAGS
from adacal.errors import InputError

# --gamma → "gamma", ...: the loss hyper-parameters the command takes as flags, by their keyword names.
LOSS_FLAGS = {flag[2:].replace("-", "_"): option for option, flag in LOSS_OPTION_FLAGS.items()}


def parse_milestones(text: str | None) -> tuple[int, ...] | None:
    """"150,250" → (150, 250); "none" or "" → () (no decay); None → not given.

    >>> parse_milestones("150, 250"), parse_milestones("none"), parse_milestones(None)
    ((150, 250), (), None)
    """
    if text is None:
        return None
    cleaned = text.strip().lower()
    if cleaned in ("", "none"):
        return ()
    parts = [part.strip() for part in cleaned.split(",")]
    # ASCII digits only: int() also reads "٣", "1_000" and "+5"; "²" (whose isdigit() is true) it refuses
    if not all(re.fullmatch(r"[0-9]+", part) for part in parts):
        raise InputError("Expected --milestones to be comma-separated epoch numbers like 150,250, got "
                         f"{text!r}.")
    return tuple(int(part) for part in parts)


def train_config(*, milestones: str | tuple[int, ...] | None = None, embeddings: Any = None, **options: Any) -> Any:
    """The `TrainConfig` of `adacal train`'s options as keywords: loss flags (`gamma`, `lam`, ...) gathered into
    `loss_options`, `--milestones` text parsed, `--embeddings` as a model option, paths as strings; None: not given."""
    from adacal.training import TrainConfig

    loss_options = {key: options.pop(flag) for flag, key in LOSS_FLAGS.items() if options.get(flag) is not None}
    for flag in LOSS_FLAGS:
        options.pop(flag, None)
    if isinstance(milestones, str) or milestones is None:
        milestones = parse_milestones(milestones)
    for key in ("out", "resume", "data_dir"):
        if options.get(key) is not None:
            options[key] = str(options[key])
    return TrainConfig(loss_options=loss_options or None, milestones=milestones,
                       model_options={"embeddings": str(embeddings)} if embeddings is not None else None, **options)


def resolved_train_config(config: Any) -> dict[str, Any]:
    """What `run_train(config)` would run with (`adacal train --print-config`): a dry run, nothing written."""
    from adacal.training import resolved_config

    return resolved_config(config)


def milestone_notes(config: Any) -> tuple[str, ...]:
    """Learning-rate milestones a new run's schedule never reaches (said before training starts)."""
    if config.resume:
        return ()
    from adacal.training.config import resolve_config, unreached_milestones

    return tuple(unreached_milestones(resolve_config(config)))


def run_train(config: Any, *, progress: Any = None) -> Any:
    """Train a model as `adacal train` does and return its `adacal.training.TrainResult` (run folder, metrics).

    Raises InputError for bad options before any work, `adacal.training.TrainingInterrupted` on Ctrl-C / SIGTERM
    (the epoch in progress saved). `progress` receives the training events (`adacal.training.TrainingProgress`).
    """
    from adacal.training import train

    return train(config, progress=progress)


def __getattr__(name: str) -> Any:
    # What run_train raises on Ctrl-C, loaded on first use: adacal.training imports torch.
    if name == "TrainingInterrupted":
        from adacal.training.interrupts import TrainingInterrupted

        return TrainingInterrupted
    raise AttributeError(f"module 'adacal.commands.train' has no attribute {name!r}")


__all__ = [
    "LOSS_FLAGS",
    # Provided by the module __getattr__ above (imported on first use: adacal.training loads torch); ruff cannot see it.
    "TrainingInterrupted",  # noqa: F822
    "milestone_notes", "parse_milestones", "resolved_train_config", "run_train", "train_config",
]
