"""adacal: calibration-aware training (AdaFocal), calibration metrics, post-hoc calibrators and OOD checks.

    import adacal
    adacal.metrics.ece_ew(probs, labels)                     # ECE and friends
    adacal.losses.build_loss("adafocal")                       # training losses by name
    adacal.calibrators.build_calibrator("temperature")         # post-hoc calibrators by name
    adacal.conformal.ConformalPredictor(score="aps", alpha=0.1)  # split-conformal prediction sets
    adacal.plots                                               # figures (matplotlib is imported only here)
    adacal.commands.run_evaluate("runs/my-run")                # every command as one library call

The subpackages load on first use, so `import adacal` stays fast and imports neither torch nor matplotlib.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from adacal.version import __version__

# Public subpackages and modules, imported on first attribute access (PEP 562).
_SUBMODULES = ("calibrators", "commands", "conformal", "data", "evaluation", "interpretation", "losses", "metrics",
               "models", "ood", "plots", "sources", "training")

__all__ = ["__version__", *_SUBMODULES]

if TYPE_CHECKING:  # static analysers and IDEs see the real modules
    from adacal import (  # noqa: F401
        calibrators, commands, conformal, data, evaluation, interpretation, losses, metrics, models, ood, plots,
        sources, training,
    )


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module  # later look-ups skip this hook
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (`__all__`) and the module's dunder attributes; not the helpers this file imports (`Any`,
    `importlib`, `annotations`, `TYPE_CHECKING`), which are no part of the API."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__") and name.endswith("__"))})
