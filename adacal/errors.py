"""The one exception family the library raises for bad input; the CLI turns it into `Error: ...` and a non-zero exit."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AdacalError(Exception):
    """A problem with the user's input or environment, described in one sentence."""


class InputError(AdacalError, ValueError):
    """A value, shape, file or option the user gave is not acceptable (a `ValueError` too, as Python code that calls
    the library expects of a bad argument)."""


class UnknownNameError(InputError):
    """A registry lookup (loss, model, dataset, metric, calibrator) found no such name."""


class CheckpointError(InputError):
    """A checkpoint or saved state could not be read safely or does not fit."""


class DataUnavailableError(AdacalError):
    """A dataset is neither on disk nor downloadable."""


class NotFittedError(AdacalError):
    """A calibrator was used before `fit`."""


def _folded(name: str) -> str:
    """A name without case or separators: 'CIFAR-10', 'cifar_10' and 'cifar10' fold alike."""
    return "".join(char for char in str(name).lower() if char.isalnum())


def closest_name(name: str, choices: Iterable[str]) -> str | None:
    """The most similar valid name, or None when nothing is close. Case and separators do not count: 'CIFAR10'
    suggests 'cifar10' and 'FLSD53' 'flsd-53'."""
    folded: dict[str, str] = {}
    for choice in choices:
        folded.setdefault(_folded(choice), choice)
    typed = _folded(name)
    if typed in folded:
        return folded[typed]
    matches = difflib.get_close_matches(typed, list(folded), n=1, cutoff=0.5)
    return folded[matches[0]] if matches else None


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> UnknownNameError:
    """Build the error for an unknown name: it lists the choices and suggests the closest one."""
    choices = sorted(choices)
    suggestion = closest_name(name, choices)
    hint = f" Did you mean '{suggestion}'?" if suggestion else ""
    listed = f" Choices: {', '.join(choices)}." if choices else f" No {kind} is available."
    return UnknownNameError(f"Unknown {kind} '{name}'.{hint}{listed}")
