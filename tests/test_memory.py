"""adacal.memory: one budget for every size check, lowered by ADACAL_MEMORY_LIMIT wherever it is set."""

import numpy as np
import pytest

from adacal.errors import InputError
from adacal.memory import available_memory, memory_limit, physical_memory


def test_the_limit_caps_available_and_physical_memory(monkeypatch):
    monkeypatch.delenv("ADACAL_MEMORY_LIMIT", raising=False)
    assert memory_limit() is None
    free, installed = available_memory(), physical_memory()
    assert 0 < free and 0 < installed
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", "12345")
    assert memory_limit() == 12345
    assert available_memory() == min(free, 12345) and physical_memory() == 12345
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", " ")
    assert memory_limit() is None


@pytest.mark.parametrize("text", ["1GB", "-x", "1.5e9", "-5"])
def test_a_limit_that_is_not_a_number_of_bytes_is_refused(monkeypatch, text):
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", text)
    with pytest.raises(InputError, match="ADACAL_MEMORY_LIMIT to be a number of bytes"):
        available_memory()


def test_metrics_bins_and_bootstrap_honour_the_limit(monkeypatch):
    from adacal.metrics import bootstrap, compute_metrics

    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(50, 3)), rng.integers(0, 3, 50)
    assert compute_metrics(logits, labels, n_bins=10_000)["ece_em"] >= 0  # fits without a limit
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(100_000))
    with pytest.raises(InputError, match=r"n_bins to fit in memory.*10000 bins"):
        compute_metrics(logits, labels, n_bins=10_000)
    with pytest.raises(InputError, match="fit in memory"):
        bootstrap(logits, labels, ["ece-em"], n_resamples=1_000_000)


def test_adafocal_bins_of_train_honour_the_limit(monkeypatch):
    from adacal.training.config import max_n_bins

    unlimited = max_n_bins()
    monkeypatch.setenv("ADACAL_MEMORY_LIMIT", str(4 << 20))
    assert max_n_bins() == 1024 < unlimited
