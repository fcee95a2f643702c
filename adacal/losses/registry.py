"""The loss registry: `build_loss("adafocal", lam=1.0)` builds any loss by the name users type."""

from __future__ import annotations

from typing import Any

from torch import nn

from adacal.checks import renamed_options
from adacal.conventions import LOSS_OPTION_ALIASES
from adacal.registry import Registry

LOSSES: Registry[nn.Module] = Registry("loss")


def build_loss(name: str, **options: Any) -> nn.Module:
    """Build the loss registered as `name`.

    Args:
        name: a registered loss name (`loss_names()`), e.g. "adafocal", "focal", "flsd-53".
        **options: the loss's keyword-only options; a deprecated option name (`num_bins`) is read as the current one
            (`n_bins`) with a DeprecationWarning.

    Returns:
        The loss, an `nn.Module`. An unknown name or option is an InputError listing the choices.

    Example:
        >>> from adacal.losses import build_loss
        >>> build_loss("focal", gamma=2.0)
        FocalLoss(gamma=2)
    """
    return LOSSES.build(name, **renamed_options(options, LOSS_OPTION_ALIASES, warn=True))


def loss_names() -> list[str]:
    """The registered loss names, as `build_loss` and `adacal train --loss` take them.

    Returns:
        A sorted list of names.

    Example:
        >>> from adacal.losses import loss_names
        >>> "adafocal" in loss_names(), loss_names() == sorted(loss_names())
        (True, True)
    """
    return LOSSES.names()
