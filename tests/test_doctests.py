"""Every public metric, loss and calibrator states its contract, and every docstring example runs.

A public function's docstring is its contract (STYLE.md): its arguments (Args), its return value (Returns) and one
example that runs as a doctest, as torchmetrics and scikit-learn write them. The examples run here, so
`python -m pytest -q tests` (what CI runs) checks them; a failing example prints its expected and actual output.
"""

import dataclasses
import doctest
import importlib
import inspect
import pkgutil

import pytest
from torch import nn

from adacal.calibrators import Calibrator

PACKAGES = ("adacal.metrics", "adacal.losses", "adacal.calibrators")
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names(package_name: str) -> list[str]:
    """The package itself and every module in it (found with pkgutil, so a new module is covered at once)."""
    package = importlib.import_module(package_name)
    return [package_name] + [f"{package_name}.{info.name}" for info in pkgutil.iter_modules(package.__path__)]


def _public_objects() -> dict[str, object]:
    """Every function and class in the packages' `__all__`, by qualified name (constants and registries left out)."""
    found = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for name in package.__all__:
            value = getattr(package, name)
            if inspect.isfunction(value) or inspect.isclass(value):
                found[f"{package_name}.{name}"] = value
    return found


MODULES = [name for package_name in PACKAGES for name in _module_names(package_name)]
PUBLIC = _public_objects()


def _defined_in(module_name: str) -> list[str]:
    return sorted(name for name, value in PUBLIC.items() if value.__module__ == module_name)


@pytest.mark.parametrize("module_name", MODULES)
def test_the_docstring_examples_run(module_name):
    # importlib, not `import adacal.metrics.bootstrap as m`: the package's function `bootstrap` shadows that module.
    module = importlib.import_module(module_name)
    failed, attempted = doctest.testmod(module, optionflags=OPTIONS)
    assert failed == 0, f"{failed} of {attempted} docstring examples in {module_name} failed (output above)"
    public = _defined_in(module_name)
    if public:
        assert attempted > 0, f"{module_name} defines {', '.join(public)} but has no docstring example"


def _has_parameters(value) -> bool:
    try:
        return bool(inspect.signature(value).parameters)
    except (TypeError, ValueError):  # no signature to read: document the arguments anyway
        return True


def _is_record(cls) -> bool:
    """A dataclass or NamedTuple: its fields are its arguments, and there is nothing it returns."""
    return dataclasses.is_dataclass(cls) or issubclass(cls, tuple)


def _returns_documented(value) -> bool:
    """Where a callable's return value is documented: its own docstring, or for a class the method that returns."""
    if "Returns" in (value.__doc__ or ""):
        return True
    if not inspect.isclass(value):
        return False
    if issubclass(value, nn.Module):  # a loss: what `loss(logits, labels)` gives
        return "Returns" in (value.forward.__doc__ or "")
    if issubclass(value, Calibrator):
        return all("Returns" in (getattr(value, method).__doc__ or "") for method in ("fit", "transform"))
    if _is_record(value):
        return True
    return any("Returns" in (getattr(member, "__doc__", None) or "")
               for name, member in vars(value).items() if not name.startswith("_"))


@pytest.mark.parametrize("qualified_name", sorted(PUBLIC))
def test_the_docstring_states_the_contract(qualified_name):
    value = PUBLIC[qualified_name]
    doc = value.__doc__ or ""  # its own docstring: a class does not inherit its base's here
    assert doc.strip(), f"{qualified_name} has no docstring"
    if _has_parameters(value):
        assert "Args" in doc or "Parameters" in doc, f"{qualified_name}'s docstring does not state its arguments"
    assert _returns_documented(value), f"{qualified_name}'s docstring does not state what it returns (Returns:)"
    assert ">>>" in doc, f"{qualified_name}'s docstring has no example (>>> lines run as a doctest)"
