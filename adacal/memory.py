"""How much memory adacal may allocate: one answer for every size check made before allocating (input files,
metric bins and bootstrap resamples, AdaFocal's bins), lowered by `ADACAL_MEMORY_LIMIT` (bytes) wherever it is set,
e.g. to keep a shared machine responsive."""

from __future__ import annotations

import os

from adacal.errors import InputError

MEMORY_LIMIT_VARIABLE = "ADACAL_MEMORY_LIMIT"
# When the machine cannot tell (not Linux, no sysconf): assume this much rather than refuse everything.
_UNKNOWN_MEMORY = 64 << 30


def memory_limit() -> int | None:
    """$ADACAL_MEMORY_LIMIT in bytes, or None when it is unset or empty."""
    text = os.environ.get(MEMORY_LIMIT_VARIABLE, "").strip()
    if not text:
        return None
    try:
        limit = int(text)
    except ValueError:
        limit = -1
    if limit < 0:
        raise InputError(f"Expected {MEMORY_LIMIT_VARIABLE} to be a number of bytes (a non-negative integer such as "
                         f"8000000000), got {text!r}.")
    return limit


def _limited(nbytes: int) -> int:
    limit = memory_limit()
    return int(nbytes if limit is None else min(nbytes, limit))


def physical_memory() -> int:
    """The machine's physical memory in bytes (capped by $ADACAL_MEMORY_LIMIT)."""
    try:
        nbytes = int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        nbytes = _UNKNOWN_MEMORY
    return _limited(nbytes)


def available_memory() -> int:
    """Bytes that can be allocated now: MemAvailable on Linux, else free physical pages, else the physical memory
    (capped by $ADACAL_MEMORY_LIMIT)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return _limited(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return _limited(int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE")))
    except (ValueError, OSError, AttributeError):
        return physical_memory()
