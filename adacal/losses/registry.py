"""The loss registry: `build_loss("adafocal", lam=1.0)` builds any loss by the name users type."""

from __future__ import annotations

from typing import Any

from torch import nn

from adacal.checks import renamed_options
from adacal.conventions import LOSS_OPTION_ALIASES
from adacal.registry import Registry

LOSSES: Registry[nn.Module] = Registry("loss")


def build_loss(name: str, **options: Any) -> nn.Module:
    """Build the loss registered as `name`; an unknown name or option is an InputError listing the choices. A
    deprecated option name (`num_bins`) is read as the current one (`n_bins`) with a DeprecationWarning."""
    return LOSSES.build(name, **renamed_options(options, LOSS_OPTION_ALIASES, warn=True))


def loss_names() -> list[str]:
    """The registered loss names, sorted."""
    return LOSSES.names()
