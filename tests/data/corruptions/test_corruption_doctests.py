"""The examples in the corruption modules' docstrings run (tests/test_doctests.py covers metrics, losses and
calibrators; this covers adacal.data.corruptions)."""

import doctest
import importlib
import pkgutil

import pytest

import adacal.data.corruptions as package

MODULES = [package.__name__] + [f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)]


@pytest.mark.parametrize("module_name", MODULES)
def test_the_docstring_examples_run(module_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(module_name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failed == 0, f"{failed} of {attempted} docstring examples in {module_name} failed (output above)"
