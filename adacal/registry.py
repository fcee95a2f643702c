"""Name → factory registries, so losses, models, datasets, metrics and calibrators are all chosen by what users type."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from adacal.errors import InputError, unknown_name

T = TypeVar("T")


class Registry(Generic[T]):
    """A mapping from lowercase hyphenated names to factories, filled with the `register` decorator.

    Lookups ignore case and read "_" as "-": `get("AdaFocal")`, `get("FLSD-53")` and `get("Label_Smoothing")` find
    "adafocal", "flsd-53" and "label-smoothing" (compared by `canonical_name`); an unknown name still suggests the
    closest one.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._factories[name] = factory
            return factory

        return decorator

    def get(self, name: str) -> Callable[..., T]:
        return self._factories[self.key(name)]

    def key(self, name: str) -> str:
        """The registered name that `name` reads as ("AdaFocal" → "adafocal"); unknown: the closest-match error."""
        if not isinstance(name, str):  # None or a number from a config file: not "Unknown loss 'None'"
            raise InputError(f"Expected the {self.kind} name to be one of {', '.join(self.names())}; got {name!r}.")
        if name in self._factories:
            return name
        typed = canonical_name(name)
        key = next((key for key in self._factories if canonical_name(key) == typed), None)
        if key is None:
            raise unknown_name(self.kind, name, self._factories)
        return key

    def build(self, name: str, **options: Any) -> T:
        """Call the factory for `name`; an option it does not take is a user error naming the options it does take."""
        factory = self.get(name)
        try:
            inspect.signature(factory).bind(**options)
        except TypeError:
            accepted = option_names(factory)
            unknown = sorted(set(options) - set(accepted))
            listed = ", ".join(accepted) if accepted else "none"
            raise InputError(
                f"{self.kind.capitalize()} '{name}' does not take option(s) {', '.join(unknown)}; it takes: {listed}."
            ) from None
        return factory(**options)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        # an unhashable value is simply not a name
        if not isinstance(name, str):
            return False
        typed = canonical_name(name)
        return name in self._factories or any(canonical_name(key) == typed for key in self._factories)

    def __iter__(self):
        return iter(self.names())


def canonical_name(name: str) -> str:
    """The spelling names are compared in: lowercase, surrounding spaces dropped, "_" read as "-".

    Example:
        >>> from adacal.registry import canonical_name
        >>> canonical_name("Label_Smoothing"), canonical_name("FLSD-53")
        ('label-smoothing', 'flsd-53')
    """
    return name.strip().lower().replace("_", "-")


def option_names(factory: Callable[..., Any]) -> list[str]:
    """The keyword options a factory accepts (what `build` may pass)."""
    params = inspect.signature(factory).parameters.values()
    return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
