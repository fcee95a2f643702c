"""Optimisers by name (sgd, adam, adamw) from a resolved TrainConfig."""

from __future__ import annotations

import torch

from adacal.errors import InputError


def build_optimizer(
    parameters, *, name: str, lr: float, weight_decay: float, momentum: float | None = None
) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=momentum or 0.0, weight_decay=weight_decay)
    if name == "adam":
        return torch.optim.Adam(parameters, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=lr, weight_decay=weight_decay)
    raise InputError(f"Expected --optimizer to be one of sgd, adam, adamw, got {name!r}.")
