"""Argument checks shared by the library: integers with bounds, finite numbers, numbers in a range.

One message template names the argument, what was expected and what was found, as an `InputError`:
"Expected --n-bins to be a positive integer, got 0." The caller passes the name the user knows (a flag such as
"--n-bins", or "min_count (--min-bin-count)" for a library keyword with a CLI flag). Imports only numpy.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from adacal.errors import InputError


def is_integer(value: Any) -> bool:
    """A Python or numpy integer; bool is refused (True would pass as 1)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value: Any) -> bool:
    """A Python or numpy real number (bool refused), finite or not."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def shown(value: Any) -> str:
    """How a found value appears in a message: numbers plainly (no numpy type name; an integer of more than 30 digits
    by its size), anything else as repr."""
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if is_integer(value):
        value = int(value)
        if abs(value).bit_length() > 99:  # > 30 digits: unreadable, and str() refuses past 4300 digits
            return f"an integer of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
        return str(value)
    if is_number(value):
        return repr(float(value))
    return repr(value)


def _finite(value: Any) -> bool:
    """Whether a number (`is_number`) is finite; an int too large for a float counts as not finite."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def integer_kind(minimum: int | None = None, maximum: int | None = None) -> str:
    """'a positive integer', 'a non-negative integer', 'an integer >= 2', 'an integer between 10 and 2400'."""
    if minimum is not None and maximum is not None:
        return f"an integer between {minimum} and {maximum}"
    if minimum == 1:
        return "a positive integer"
    if minimum == 0:
        return "a non-negative integer"
    if minimum is not None:
        return f"an integer >= {minimum}"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return "an integer"


def check_integer(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None, note: str = "",
    error: type[Exception] = InputError,
) -> int:
    """`value` as an int within [minimum, maximum] (either bound optional); `note` follows the expected kind in the
    message, e.g. " (0 = no intervals)"."""
    if (
        not is_integer(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise error(f"Expected {name} to be {integer_kind(minimum, maximum)}{note}, got {shown(value)}.")
    return int(value)


def check_positive_int(value: Any, name: str) -> int:
    return check_integer(value, name, minimum=1)


def check_non_negative_int(value: Any, name: str, *, note: str = "") -> int:
    return check_integer(value, name, minimum=0, note=note)


def check_finite(value: Any, name: str) -> float:
    """`value` as a finite float."""
    if not is_number(value) or not _finite(value):
        raise InputError(f"Expected {name} to be a finite number, got {shown(value)}.")
    return float(value)


def check_in_range(
    value: Any, name: str, low: float, high: float, *, inclusive: bool = True, example: str = ""
) -> float:
    """`value` as a finite float in [low, high] (or (low, high) when not `inclusive`); `example` such as
    " such as 0.9" follows the expected range in the message."""
    if is_number(value) and _finite(value):
        inside = low <= value <= high if inclusive else low < value < high
        if inside:
            return float(value)
    between = f"between {low:g} and {high:g}" if inclusive else f"strictly between {low:g} and {high:g}"
    raise InputError(f"Expected {name} to be a number {between}{example}, got {shown(value)}.")


def name_items(names: Any, what: str) -> list[str]:
    """The items of "a,b" (split at commas) or of a sequence of strings, stripped; anything else is an InputError
    naming `what` ("metric names")."""
    if isinstance(names, str):
        items: list[Any] = names.split(",")
    elif isinstance(names, Iterable) and not isinstance(names, (bytes, bytearray, dict)):
        items = list(names)
    else:
        raise InputError(f"Expected {what} as a comma-separated string or a list of strings, got {shown(names)}.")
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"Expected {what} to be strings, got {shown(item)}.")
    return [item.strip() for item in items]


def renamed_options(
    options: Mapping[str, Any], aliases: Mapping[str, str], *, warn: bool = False, stacklevel: int = 3
) -> dict[str, Any]:
    """`options` with every deprecated name in `aliases` spelled as the name it stands for (order kept). Both
    spellings with different values is an InputError; `warn` issues a DeprecationWarning for each deprecated name."""
    renamed: dict[str, Any] = {}
    for key, value in options.items():
        name = aliases.get(key, key)
        if name != key:
            if warn:
                warnings.warn(
                    f"The option {key!r} is deprecated; use {name!r}.", DeprecationWarning, stacklevel=stacklevel
                )
            if name in options and not _same_value(options[name], value):
                raise InputError(
                    f"Expected one value for {name} (also spelled {key}), "
                    f"got {shown(options[name])} and {shown(value)}."
                )
        renamed.setdefault(name, value)
    return renamed


def _same_value(first: Any, second: Any) -> bool:
    """Whether two option values agree: arrays element-wise, NaN equal to NaN."""
    if first is second:
        return True
    try:
        return bool(np.array_equal(first, second, equal_nan=True))
    except (TypeError, ValueError):  # not numeric (strings, mixed objects): plain equality
        try:
            return bool(first == second)
        except (TypeError, ValueError):
            return False


_DEVICE_NAME = re.compile(r"auto|cpu(:\d+)?|cuda(:\d+)?", re.ASCII)  # ASCII digits: \d alone matches "٣"


def check_device_name(device: Any, name: str = "--device") -> str:
    """A --device that names a device kind (auto, cpu, cuda, cuda:N), checked whether or not a model will run: a typo
    is refused even for a predictions file. Whether that CUDA device exists is checked only when a model runs."""
    text = device.strip().lower() if isinstance(device, str) else None
    if text is None or not _DEVICE_NAME.fullmatch(text):
        raise InputError(f"Expected {name} to be auto, cpu, cuda or cuda:N, got {device!r}.")
    return text
