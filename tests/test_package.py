"""`import adacal`: the public subpackages as attributes, loaded lazily so the import stays light."""

import subprocess
import sys

import pytest

import adacal

PUBLIC = ("metrics", "losses", "calibrators", "plots", "commands", "evaluation", "interpretation", "sources")


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter (this one has imported most of adacal already) and return its stdout."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_import_adacal_loads_no_subpackage_torch_or_matplotlib():
    loaded = _fresh(
        "import sys, adacal; print(sorted(m for m in sys.modules if m.startswith(('adacal.', 'torch', 'matplotlib'))))"
    )
    assert loaded == "['adacal.version']"  # the one-line module holding __version__, nothing else


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_subpackage_is_an_attribute_that_loads_on_first_use(name):
    out = _fresh(
        f"import sys, adacal; before = 'adacal.{name}' in sys.modules; module = adacal.{name}; "
        f"print(before, module is sys.modules['adacal.{name}'], 'matplotlib' in sys.modules)"
    )
    before, same, matplotlib_loaded = out.split()
    assert (before, same) == ("False", "True")
    # Only the plotting package may bring matplotlib in, and even it only when a figure is drawn.
    assert matplotlib_loaded == "False" or name == "plots"


def test_all_lists_the_public_subpackages_and_every_name_resolves():
    assert set(PUBLIC) <= set(adacal.__all__)
    assert len(adacal.__all__) == len(set(adacal.__all__))
    for name in adacal.__all__:
        assert getattr(adacal, name) is not None
    assert adacal.metrics.ece_ew is not None and adacal.losses.build_loss is not None
    assert adacal.calibrators.build_calibrator("temperature") is not None
    assert set(PUBLIC) <= set(dir(adacal))


def test_star_import_gives_the_subpackages():
    namespace: dict = {}
    exec("from adacal import *", namespace)
    assert {"metrics", "losses", "calibrators", "plots"} <= set(namespace)


def test_an_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        adacal.nonexistent  # noqa: B018
    assert not hasattr(adacal, "cli_internals")
