"""Fixtures every test folder may use, and the one way tests reach real data sets.

Real-data tests read only from the folder named by the environment variable ADACAL_TEST_DATA (holding cifar10.npz,
20newsgroups.jsonl.gz; formats in docs/data.md) and skip, with the reason shown by `-ra`, when it is unset. They carry
the `real_data` marker (added here to every test that uses the `real_data_file` fixture), so
`ADACAL_TEST_DATA=DIR python -m pytest -m real_data tests` runs just them.
"""

import contextlib
import os
from pathlib import Path

import pytest
import torch

TEST_DATA_VARIABLE = "ADACAL_TEST_DATA"
# Resolved once, at collection: tests that change the working directory still find a relative folder.
_TEST_DATA = os.environ.get(TEST_DATA_VARIABLE, "").strip()
TEST_DATA = Path(_TEST_DATA).expanduser().resolve() if _TEST_DATA else None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"real_data: reads a real data set from ${TEST_DATA_VARIABLE} (skipped when it is unset)"
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "real_data_file" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_data)


def real_data_path(name: str) -> Path:
    """The file `name` in the $ADACAL_TEST_DATA folder: skip when the variable is unset, fail when the file the
    variable promises is missing (a CI misconfiguration should not pass as a skip)."""
    if TEST_DATA is None:
        _skip_at_test(f"real data: set {TEST_DATA_VARIABLE} to a folder holding {name} (see docs/data.md)")
    path = TEST_DATA / name
    if not path.is_file():
        pytest.fail(f"{TEST_DATA_VARIABLE}={TEST_DATA} does not hold {name}", pytrace=False)
    return path


def _skip_at_test(reason: str) -> None:
    """Skip, reported at the test's own line (`-ra` then says which tests skipped), not at this helper's."""
    try:
        exception = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # a pytest without the keyword: the location is this file's
        pytest.skip(reason)
    raise exception


@pytest.fixture(scope="session")
def real_data_file():
    """`real_data_file("cifar10.npz")` → the path in $ADACAL_TEST_DATA, or a skip with the reason."""
    return real_data_path


@contextlib.contextmanager
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def one_torch_thread():
    """A context manager for tiny models: on a busy 2-core machine they train faster on one intra-op thread."""
    return _one_torch_thread


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory, one_torch_thread):
    """A run folder: an MLP trained one epoch with cross-entropy on 100 digits, scored on the whole 360-sample test
    set (no test subset); trained once for each module that asks for it."""
    from adacal.training import TrainConfig, train

    with one_torch_thread():
        result = train(TrainConfig(dataset="digits", model="mlp", loss="ce", epochs=1, train_subset=100,
                                   out=str(tmp_path_factory.mktemp("runs")), device="cpu"))
    return result.run_dir


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures `adacal.plots.save_figure` is given, in order (it still writes them): to inspect their artists."""
    from adacal import plots

    figures = []
    original = plots.save_figure

    def save(fig, path, **kwargs):
        figures.append(fig)
        return original(fig, path, **kwargs)

    monkeypatch.setattr(plots, "save_figure", save)
    return figures
