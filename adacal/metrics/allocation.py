"""Refusing sizes that cannot fit in memory (`--n-bins 10**12`, a huge `--bootstrap`) before anything is allocated,
with a message saying how much would be needed and how much there is (`adacal.memory.available_memory`, which
ADACAL_MEMORY_LIMIT lowers)."""

from __future__ import annotations

from adacal.errors import InputError
from adacal.memory import available_memory

# Bytes the metrics allocate per top-label bin (edges, counts, sums, means, accuracies and their temporaries) and per
# cell of classwise ECE's K × n_bins table; per bootstrap resample and metric (one float64 value); per sample of one
# resample (the row index and the resampled per-sample vectors).
BYTES_PER_BIN = 160
BYTES_PER_CLASSWISE_CELL = 64
BYTES_PER_RESAMPLE_VALUE = 8
BYTES_PER_RESAMPLED_SAMPLE = 96


def format_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if count < 1024 or unit == "PiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def check_fits(needed: int, *, what: str, name: str, value: int, available: int | None = None) -> None:
    """Raise InputError when `needed` bytes (for `what`) exceed the memory available now."""
    available = available_memory() if available is None else available
    if needed > available:
        raise InputError(
            f"Expected {name} to fit in memory, got {value}: {what} would need about {format_bytes(needed)}, "
            f"but about {format_bytes(available)} is available."
        )


def check_bins_fit(n_bins: int, *, num_classes: int = 1, classwise: bool = False, name: str = "n_bins") -> None:
    """Refuse a number of bins whose statistics (and classwise ECE's K × n_bins table) cannot be allocated."""
    needed = n_bins * BYTES_PER_BIN + (num_classes * n_bins * BYTES_PER_CLASSWISE_CELL if classwise else 0)
    what = f"the statistics of {n_bins} bins" + (f" for {num_classes} classes" if classwise else "")
    check_fits(needed, what=what, name=name, value=n_bins)


def check_bootstrap_fits(n_resamples: int, n_samples: int, n_metrics: int, *, name: str = "n_resamples") -> None:
    """Refuse a bootstrap whose resampled values, or one resample of the rows, cannot be allocated."""
    needed = n_resamples * n_metrics * BYTES_PER_RESAMPLE_VALUE + n_samples * BYTES_PER_RESAMPLED_SAMPLE
    what = f"{n_resamples} resamples of {n_metrics} metric(s) over {n_samples} samples"
    check_fits(needed, what=what, name=name, value=n_resamples)
