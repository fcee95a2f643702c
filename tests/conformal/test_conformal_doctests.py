"""The docstring examples of adacal.conformal run (tests/test_doctests.py covers metrics, losses and calibrators)."""

import doctest
import importlib
import inspect
import pkgutil

import pytest

import adacal.conformal

MODULES = ["adacal.conformal"] + [f"adacal.conformal.{info.name}"
                                  for info in pkgutil.iter_modules(adacal.conformal.__path__)]


@pytest.mark.parametrize("module_name", MODULES)
def test_the_docstring_examples_run(module_name):
    failed, attempted = doctest.testmod(importlib.import_module(module_name),
                                        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failed == 0, f"{failed} of {attempted} examples in {module_name} failed (output above)"


@pytest.mark.parametrize("name", adacal.conformal.__all__)
def test_every_public_function_and_class_has_an_example(name):
    value = getattr(adacal.conformal, name)
    if inspect.isfunction(value) or inspect.isclass(value):
        assert ">>>" in (value.__doc__ or ""), f"{name} has no docstring example"
