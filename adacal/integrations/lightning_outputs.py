"""The side of adacal's Lightning callbacks that needs no Lightning: what a `validation_step` returns read as
(logits, labels), the samples a `DistributedSampler` repeated left out, every rank's positions gathered (through
`adacal.losses.validation.gather_across_ranks`), and what the callbacks log: the calibration metrics and a
validation-driven loss's state. `adacal.integrations.lightning` wires them into Lightning's hooks and re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from adacal.conventions import DEFAULT_N_BINS
from adacal.errors import InputError
from adacal.losses.base import flatten_positions, ignored_mask
from adacal.losses.validation import gather_across_ranks

DEFAULT_METRICS = ("ece-em", "ece-ew", "nll", "brier")

# A validation pass as it arrives: this rank's batches, (logits, labels) each.
Parts = list[tuple[torch.Tensor, torch.Tensor]]


def validation_step_pair(outputs: Any, owner: str = "the callback") -> tuple[torch.Tensor, torch.Tensor]:
    """The (logits, labels) a `validation_step` returned, detached, on the CPU (float16/bfloat16 logits as float32).

    Args:
        outputs: `{"logits": ..., "labels": ...}` (other keys ignored) or a `(logits, labels)` pair; labels may be a
            numpy array.
        owner: who reads them, for the message of a refusal.

    Returns:
        (logits, labels): logits a float tensor (N, K, ...), labels an integer tensor (N, ...).

    Example:
        >>> import torch
        >>> from adacal.integrations.lightning_outputs import validation_step_pair
        >>> logits, labels = validation_step_pair({"loss": 0.3, "logits": torch.zeros(2, 3), "labels": [0, 2]})
        >>> tuple(logits.shape), labels.tolist()
        ((2, 3), [0, 2])
    """
    expected = "the batch's logits and labels, as {'logits': ..., 'labels': ...} or (logits, labels),"
    if isinstance(outputs, Mapping):
        missing = [key for key in ("logits", "labels") if key not in outputs]
        if missing:
            raise InputError(
                f"Expected validation_step to return {expected} for {owner}, got a dict with keys "
                f"{sorted(map(str, outputs))}: add {' and '.join(repr(k) for k in missing)} to what it returns."
            )
        logits, labels = outputs["logits"], outputs["labels"]
    elif isinstance(outputs, (tuple, list)) and len(outputs) == 2:
        logits, labels = outputs
    else:
        found = "nothing" if outputs is None else f"a {type(outputs).__name__}" + (
            f" of {len(outputs)} items" if isinstance(outputs, (tuple, list)) else "")
        raise InputError(
            f"Expected validation_step to return {expected} for {owner}, got {found}: return them, e.g. "
            "return {'logits': logits, 'labels': labels}."
        )
    if not isinstance(logits, torch.Tensor) or not logits.dtype.is_floating_point or logits.ndim < 2:
        found = f"{logits.dtype} of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor) else type(
            logits).__name__
        raise InputError(
            f"Expected the logits validation_step returns to be a float tensor (N, K) or (N, K, d1, ...) for {owner}, "
            f"got {found}."
        )
    if not isinstance(labels, torch.Tensor):
        try:
            labels = torch.as_tensor(np.asarray(labels))
        except (TypeError, ValueError, RuntimeError):
            raise InputError(
                f"Expected the labels validation_step returns to be a tensor of class indices for {owner}, got "
                f"{type(labels).__name__}."
            ) from None
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise InputError(
            f"Expected the labels validation_step returns to be integer class indices for {owner}, got "
            f"{labels.dtype}: return the labels, not probabilities or one-hot rows."
        )
    if labels.ndim == 0 or labels.shape[0] != logits.shape[0]:
        raise InputError(
            f"Expected the labels validation_step returns to have {logits.shape[0]} rows like its logits "
            f"{tuple(logits.shape)} for {owner}, got shape {tuple(labels.shape)}."
        )
    logits = logits.detach()
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    return logits.cpu(), labels.detach().cpu()


def drop_sampler_padding(parts: Parts, loader: Any) -> Parts:
    """The batches of this rank without the samples a `DistributedSampler` (drop_last=False) repeated to give every
    rank as many: rank r of W holds the positions r, r + W, ... of the padded order, so its real samples are the first
    len(range(r, N, W)). Unchanged when the loader has no such sampler or this rank did not see its whole shard."""
    sampler = getattr(loader, "sampler", None)
    if not isinstance(sampler, torch.utils.data.DistributedSampler) or sampler.drop_last:
        return parts
    try:
        n = len(sampler.dataset)
    except TypeError:
        return parts
    real = len(range(sampler.rank, n, sampler.num_replicas))
    seen = sum(int(logits.shape[0]) for logits, _ in parts)
    if seen != sampler.num_samples or real >= seen:
        return parts
    kept: Parts = []
    left = real
    for logits, labels in parts:
        if left <= 0:
            break
        kept.append((logits[:left], labels[:left]))
        left -= int(logits.shape[0])
    return kept


def gather_positions(parts: Parts) -> tuple[torch.Tensor, torch.Tensor]:
    """Batches as (positions, K) logits and (positions,) labels (each (N, K, d1, ...) batch read position by
    position), concatenated, then every rank's gathered in rank order under `torch.distributed`."""
    flat = [flatten_positions(logits, labels)[:2] for logits, labels in parts if logits.shape[0]]
    if not flat:
        raise InputError("Expected the validation pass to hold at least one sample, got none.")
    classes = {int(logits.shape[1]) for logits, _ in flat}
    if len(classes) > 1:
        raise InputError(f"Expected every validation batch to have the same number of classes, got {sorted(classes)}.")
    logits = torch.cat([logits.float() if logits.dtype != torch.float64 else logits for logits, _ in flat])
    labels = torch.cat([labels.long() for _, labels in flat])
    return gather_across_ranks(logits, labels)


def calibration_metrics(
    logits: torch.Tensor, labels: torch.Tensor, *, names: Any = DEFAULT_METRICS, n_bins: int = DEFAULT_N_BINS,
    ignore_index: int | None = -100,
) -> dict[str, float]:
    """The metrics (`adacal.metrics.compute_metrics`, the logits read as logits) of a validation pass, positions
    labelled `ignore_index` left out; {metric registry key: value}.

    Example:
        >>> import torch
        >>> from adacal.integrations.lightning_outputs import calibration_metrics
        >>> logits, labels = torch.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]]), torch.tensor([0, 0, -100])
        >>> metrics = calibration_metrics(logits, labels, names=["nll"])  # the -100 row left out
        >>> round(metrics["nll"], 4)  # (log(1 + e^-2) + log(1 + e^2)) / 2
        1.1269
    """
    from adacal.metrics import compute_metrics, resolve_metric_names

    names = resolve_metric_names(names)
    logits, labels, _ = flatten_positions(logits, labels)
    keep = ignored_mask(labels, ignore_index)
    if keep is not None:
        logits, labels = logits[keep], labels[keep]
    if labels.shape[0] == 0:
        raise InputError(f"Expected some validation labels other than ignore_index={ignore_index}, got none.")
    values = compute_metrics(logits.detach().cpu().numpy(), labels.detach().cpu().numpy(), n_bins=n_bins,
                             names=list(names), scores_kind="logits")
    from adacal.metrics import metric_key

    return {name: float(values[metric_key(name)]) for name in names}


def loss_state(loss: Any) -> dict[str, float]:
    """What the callback logs of a validation-driven loss: for a γ per bin (AdaFocal) its mean, min, max and the
    number of inverse-focal bins (γ < 0), for CALS the mean and max of its multipliers λ and of ρ (after the first
    update), and the number of updates so far; keys "<loss name>/...".

    Example:
        >>> from adacal.integrations.lightning_outputs import loss_state
        >>> from adacal.losses import AdaFocalLoss
        >>> state = loss_state(AdaFocalLoss(n_bins=3))  # before any update: γ = gamma_init = 1 in every bin
        >>> state["adafocal/gamma_mean"], state["adafocal/inverse_focal_bins"], state["adafocal/updates"]
        (1.0, 0.0, 0.0)
    """
    name = getattr(loss, "name", "") or type(loss).__name__.lower()
    state: dict[str, float] = {}
    gammas = getattr(loss, "gammas", None)
    if isinstance(gammas, torch.Tensor) and gammas.numel():
        values = gammas.detach().cpu().to(torch.float64)
        state[f"{name}/gamma_mean"] = float(values.mean())
        state[f"{name}/gamma_min"] = float(values.min())
        state[f"{name}/gamma_max"] = float(values.max())
        state[f"{name}/inverse_focal_bins"] = float((values < 0).sum())
    multipliers = getattr(loss, "multipliers", None)  # CALS: a multiplier λ and a penalty ρ per class
    if isinstance(multipliers, torch.Tensor) and multipliers.numel():
        values, rho = multipliers.detach().cpu().to(torch.float64), loss.rho.detach().cpu().to(torch.float64)
        state[f"{name}/lambda_mean"] = float(values.mean())
        state[f"{name}/lambda_max"] = float(values.max())
        state[f"{name}/rho_mean"] = float(rho.mean())
        state[f"{name}/rho_max"] = float(rho.max())
    state[f"{name}/updates"] = float(len(getattr(loss, "history", ()) or ()))
    return state


__all__ = [
    "DEFAULT_METRICS",
    "Parts",
    "calibration_metrics",
    "drop_sampler_padding",
    "gather_positions",
    "loss_state",
    "validation_step_pair",
]
